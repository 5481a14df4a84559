"""Server mode's server: the real app started once per session (per xdist worker) in a subprocess on a free port,
with its own temporary SQLite database, the session's scenarios loaded and a write token issued for the plugin.
It is the session's own (``HARNESS_SESSION_SERVER``): a request naming no run belongs to the test being served,
which the plugin names (``Server.serving``; ``runs_app/endpoint/current.py``).

It is started through ``python -m django`` and ``python -m harnessweb.serve`` (daphne, request bodies left to the app)
with the project's own settings, so this module imports nothing of Django: the test process's settings (a team's own
Django project) stay untouched.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SETTINGS = "harnessweb.settings"
START_TIMEOUT_S = 60


class ServerError(RuntimeError):
    """The server could not be started; the message holds its output."""


@dataclass
class Server:
    url: str
    token: str
    process: subprocess.Popen | None = None  # None: a server someone else runs (--harness-url)

    @property
    def own(self) -> bool:
        """Started here for this session alone: requests naming no run may belong to the test being served."""
        return self.process is not None

    def serving(self, client: Any, run_id: uuid.UUID | None) -> None:
        """On a server of this session's own, make ``run_id`` the run of requests that name none (None: the test
        ended); ``client`` is the plugin's authenticated API client. A shared server is never told."""
        if not self.own:
            return
        response = client.put("/current-run", json={"run_id": str(run_id) if run_id else None})
        if response.status_code != 200:
            raise ServerError(f"the harness server refused the test's run ({response.status_code}): {response.text}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # daphne flushes what is pending on SIGTERM
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(folder: Path, pacing: bool, default_usage: str = "counted") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "HARNESS_CATALOG_STAMP")}
    env.update(
        DJANGO_SETTINGS_MODULE=SETTINGS,
        SQLITE_PATH=str(folder / "harness.sqlite3"),
        HARNESS_PACING="on" if pacing else "off",
        HARNESS_DEFAULT_USAGE=default_usage,
        HARNESS_RECORDER_FLUSH_MS="5",
        HARNESS_SESSION_SERVER="1",  # this session's alone: a request naming no run is the current test's
    )
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "django", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise ServerError(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def start(folder: Path, scenario_paths: list[str], *, pacing: bool = True, default_usage: str = "counted") -> Server:
    """Migrate a new database in ``folder``, load the scenarios, issue a token, serve; return when it answers."""
    env = _env(folder, pacing, default_usage)
    _manage(env, "migrate", "--noinput")
    if scenario_paths:
        _manage(env, "load_scenarios", *scenario_paths)
    token = _manage(env, "create_api_token", "pytest-plugin", "--scope", "write").strip()
    port = _free_port()
    log = folder / "server.log"
    command = [
        sys.executable,
        "-m",
        "harnessweb.serve",
        "-b",
        "127.0.0.1",
        "-p",
        str(port),
        "harnessweb.asgi:application",
    ]
    process = subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    wait_until_serving(process, port, log)
    return Server(f"http://127.0.0.1:{port}", token, process)


def wait_until_serving(process: subprocess.Popen, port: int, log: Path, timeout: float = START_TIMEOUT_S) -> None:
    """Return once the server answers on ``port``; raise :class:`ServerError` with its log if it exits or never
    answers (and stop it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"the harness server exited at start:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise ServerError(f"the harness server did not answer within {timeout:.0f} s:\n{log.read_text()}")
