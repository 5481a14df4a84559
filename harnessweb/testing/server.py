"""Server mode's server: the real app started once per session (per xdist worker) in a subprocess on a free port,
with its own temporary SQLite database, the session's scenarios loaded and a write token issued for the plugin.
It is the session's own (``HARNESS_SESSION_SERVER``): a request naming no run belongs to the test being served,
which the plugin names (``Server.serving``; ``runs_app/endpoint/current.py``).

It is started as any test runner starts one, ``python -m harnessweb serve --fresh --port 0`` (``harnessweb/cli.py``),
whose one JSON line gives the URL and the token; the server's output goes to ``server.log`` in the session's folder.
This module imports nothing of Django: the test process's settings (a team's own Django project) stay untouched.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
            self.process.terminate()  # what is pending is written, the fresh database removed
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()


def _env(default_usage: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HARNESS_DEFAULT_USAGE=default_usage,
        HARNESS_RECORDER_FLUSH_MS="5",
        HARNESS_SESSION_SERVER="1",  # this session's alone: a request naming no run is the current test's
    )
    return env


def start(folder: Path, scenario_paths: list[str], *, pacing: bool = True, default_usage: str = "counted") -> Server:
    """``harness serve --fresh --port 0`` with the scenarios (its log in ``folder``); return once it answers."""
    command = [sys.executable, "-m", "harnessweb", "serve", "--fresh", "--port", "0"]
    command += ["--pacing", "on" if pacing else "off"]
    for path in scenario_paths:
        command += ["--scenarios", str(path)]
    log = folder / "server.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, env=_env(default_usage), stdout=subprocess.PIPE, stderr=stderr)
    announced = read_announcement(process, log)
    return Server(announced["url"], announced["token"], process)


def read_announcement(process: subprocess.Popen, log: Path, timeout: float = START_TIMEOUT_S) -> dict[str, Any]:
    """The JSON line ``harness serve`` prints on its stdout once it answers; :class:`ServerError` with its log if it
    exits first or says nothing in time (then it is stopped)."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    received = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while b"\n" not in received:
            left = deadline - time.monotonic()
            if left <= 0:
                process.kill()
                process.wait()
                raise ServerError(f"the harness server did not answer within {timeout:.0f} s:\n{log.read_text()}")
            if not selector.select(left):
                continue
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                process.wait()
                raise ServerError(f"the harness server exited at start ({process.returncode}):\n{log.read_text()}")
            received += chunk
    return json.loads(received.partition(b"\n")[0])


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
