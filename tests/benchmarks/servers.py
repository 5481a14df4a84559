"""What every benchmark here shares: the servers it starts (our app under daphne, uvicorn or granian, the bare ASGI
apps, aimock, a small PostgreSQL + Redis cluster) on a free port, pinned or not, the benchmark's database and
scenario, raw HTTP helpers, and how many runs and events our app recorded.

``load.py``, ``sequential.py``, ``pacing.py`` and ``profile_endpoint.py`` import it; each sets ``servers.DB`` to a
database of its own before starting a server. Everything goes to ``tests/benchmarks/.work/``.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rawhttp import HOST, PATH, dechunk, fetch, parse_response, request_bytes  # noqa: E402, F401  (re-exported)

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
WORK = BENCH / ".work"
BIN = Path(sys.executable).parent
DB = WORK / "bench.sqlite3"
CAPTURE = WORK / "capture.json"
BODY = WORK / "body.json"
AIMOCK_VERSION = "1.43.0"
AIMOCK_CLI = WORK / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
# Several uvicorn workers on PostgreSQL + Redis, as `make serve-cluster` runs them (unpinned: they share the cores).
CLUSTERS = {"cluster-1": 1, "cluster-2": 2, "cluster-4": 4}
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
PG_URL = "postgres://postgres@127.0.0.1:5432/harness_bench"
PG_DATABASE = "harness_bench"
REDIS_URL = "redis://127.0.0.1:6379/14"
DEFAULT_SERVERS = (
    "daphne",
    "uvicorn",
    "uvicorn-norec",
    "granian",
    "bare-daphne",
    "bare-uvicorn",
    "bare-granian",
    "aimock",
)
ALL_SERVERS = (*DEFAULT_SERVERS, *CLUSTERS)
# Our app, one process, recording on: the servers the targets are about.
SUPPORTED = ("daphne", "uvicorn", "granian")
# uvicorn-norec: our app with recording off (HARNESS_BENCH_NO_RECORD=1, a benchmark-only switch), for its cost.
OUR_SERVERS = (*SUPPORTED, "uvicorn-norec", *CLUSTERS)
BARE = {"daphne": "bare-daphne", "uvicorn": "bare-uvicorn", "uvicorn-norec": "bare-uvicorn", "granian": "bare-granian"}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
OUTSIDE_LOAD_PCT = 25  # CPU (% of a core) used by other processes during a run above which the figures are suspect

SCENARIO_ID = "bench-short-text"
REPLY_TEXT = "Short benchmark answer, streamed in two chunks."
SCENARIO = {
    "id": SCENARIO_ID,
    "description": "Load benchmark: one short streamed text turn.",
    "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": REPLY_TEXT}}],
}
REQUEST = {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": SCENARIO_ID}]}
AIMOCK_FIXTURE = {"fixtures": [{"match": {"userMessage": SCENARIO_ID}, "response": {"content": REPLY_TEXT}}]}
# The headers the ASGI server adds itself; everything else in the captured response is what our app sent.
SERVER_HEADERS = {"date", "server", "connection", "transfer-encoding", "content-length"}
# Headers whose value our app makes up for each request: the bare app does the same.
PER_REQUEST_HEADERS = {"x-harness-run", "request-id", "x-request-id"}

STORE_SCENARIO = """
import json, sys
import django
django.setup()
from harnessweb.engine import schemas
from scenarios_app.models import Scenario
Scenario.upsert(schemas.Scenario.model_validate(json.load(open(sys.argv[1]))))
print(Scenario.objects.count())
"""


def log(message: str) -> None:
    print(message, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine have used so far (from /proc/stat), to spot outside load."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


def wait_quiet(limit: float, own_cpu: Callable[[], float] = lambda: 0.0) -> float:
    """Wait (up to ``limit`` seconds) for a second in which other processes use little CPU; returns that use in %.

    ``own_cpu`` gives the CPU seconds of a process of ours that is running meanwhile (an idle server), not counted.
    """
    deadline = time.monotonic() + limit
    while True:
        before, own = machine_busy_seconds(), own_cpu()
        time.sleep(1)
        used = (machine_busy_seconds() - before - (own_cpu() - own)) * 100
        if used <= OUTSIDE_LOAD_PCT or time.monotonic() >= deadline:
            return used
        log(f"   machine busy ({used:.0f}% of a core used by other processes), waiting ...")


def app_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "HARNESS_BENCH_NO_RECORD")}
    env.update(
        DJANGO_SETTINGS_MODULE="harnessweb.settings",
        SQLITE_PATH=str(DB),
        HARNESS_PACING="off",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def cluster_env() -> dict[str, str]:
    return app_env(DATABASE_URL=PG_URL, REDIS_URL=REDIS_URL)


# -- pinning ------------------------------------------------------------------------------------------------------


@dataclass
class Pinning:
    """Which cores the load generator (this process, ab, the timing client) and a single-process server get."""

    load: set[int] | None = None  # None: not pinned
    server: set[int] | None = None
    everything: set[int] = field(default_factory=set)

    @classmethod
    def choose(cls, wanted: bool) -> tuple[Pinning, str]:
        cpus = sorted(os.sched_getaffinity(0))
        if not wanted:
            return cls(everything=set(cpus)), "not pinned (--no-pin)"
        if len(cpus) < 2:
            return cls(everything=set(cpus)), f"not pinned: only CPU {cpus} available"
        pin = cls(load={cpus[-1]}, server={cpus[-2]}, everything=set(cpus))
        # From here on this process (the timing client) and every ab it starts run on the load core.
        os.sched_setaffinity(0, pin.load)
        return pin, f"ab and the timing client on CPU {cpus[-1]}, each single-process server on CPU {cpus[-2]}"

    def for_server(self, name: str) -> set[int] | None:
        """The cores a server is started on: its own core, or for a cluster all of them (not this process's)."""
        if self.load is None:
            return None
        return self.everything if name in CLUSTERS else self.server


def cpus_label(cpus: set[int] | None, everything: set[int]) -> str:
    if not cpus or cpus == everything:
        return "all"
    return ",".join(str(c) for c in sorted(cpus))


# -- preparation --------------------------------------------------------------------------------------------------


def check_tools(servers: list[str]) -> None:
    if shutil.which("ab") is None:
        sys.exit(
            "ab (ApacheBench) is not installed. Install it with:\n"
            "    sudo apt-get install -y apache2-utils   # Debian/Ubuntu\n"
            "    sudo dnf install -y httpd-tools         # Fedora/RHEL\n"
            "    brew install httpd                      # macOS (ab ships with it)"
        )
    needed = {"daphne"} | {"uvicorn" for s in servers if "uvicorn" in s or s in CLUSTERS}
    needed |= {"granian" for s in servers if s.endswith("granian")}
    for name in sorted(needed):
        if not (BIN / name).exists():
            sys.exit(f"{BIN / name} is missing: run `make setup` (uvicorn and granian come with the [fast] extra)")
    if "aimock" in servers and shutil.which("node") is None:
        sys.exit("aimock needs Node.js (node and npm on PATH); drop it with --servers or install Node")


def store_scenario(env: dict[str, str], where: str, scenario: dict | None = None) -> None:
    """Migrate the database ``env`` names and store one scenario in it (the benchmark's own unless another)."""
    scenario = scenario or SCENARIO
    scenario_file = WORK / "scenario.json"
    scenario_file.write_text(json.dumps(scenario, indent=2))
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
    )
    out = subprocess.run(
        [sys.executable, "-c", STORE_SCENARIO, str(scenario_file)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    log(f"database {where}: migrated, {out.stdout.strip()} scenario stored ({scenario['id']})")


def prepare_database(scenario: dict | None = None) -> None:
    """A fresh SQLite database holding one scenario."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB}{suffix}").unlink(missing_ok=True)
    store_scenario(app_env(), str(DB.relative_to(ROOT)), scenario)


def prepare_cluster() -> None:
    """A fresh PostgreSQL database and an empty Redis database for the cluster rows."""
    import psycopg
    import redis

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as db:
        db.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
        db.execute(f"CREATE DATABASE {PG_DATABASE}")
    redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).flushdb()
    store_scenario(cluster_env(), f"{PG_URL} (Redis {REDIS_URL} flushed)")


def install_aimock() -> str | None:
    """Install the pinned aimock into .work (never into the project); returns why not, or None."""
    if AIMOCK_CLI.exists():
        return None
    if shutil.which("npm") is None:
        return "npm is not on PATH"
    package_json = WORK / "package.json"
    if not package_json.exists():
        package_json.write_text(json.dumps({"name": "bench-work", "private": True}))
    log(f"installing @copilotkit/aimock@{AIMOCK_VERSION} into {WORK.relative_to(ROOT)} ...")
    result = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", f"@copilotkit/aimock@{AIMOCK_VERSION}"],
        cwd=WORK,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0 or not AIMOCK_CLI.exists():
        return f"npm install failed:\n{result.stdout}\n{result.stderr}"
    return None


# -- servers ------------------------------------------------------------------------------------------------------


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (granian and uvicorn --workers serve from child processes)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


@dataclass
class Server:
    name: str
    command: list[str]
    cwd: Path
    env: dict[str, str]
    port: int
    process: subprocess.Popen[bytes] | None = None
    log_path: Path = field(default_factory=Path)
    cpus: set[int] | None = None  # the cores it is pinned to (with everything it starts); None: inherited

    def start(self, timeout: float = 60) -> None:
        self.log_path = WORK / "logs" / f"{self.name}.log"
        self.log_path.parent.mkdir(exist_ok=True)
        cpus = self.cpus
        self.process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stdout=self.log_path.open("wb"),
            stderr=subprocess.STDOUT,
            # Before exec: every thread and child process (node's helpers, granian's and uvicorn's workers) inherits it.
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{self.log_path.read_text(errors='replace')}")
            try:
                with socket.create_connection((HOST, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not listen on {self.port} within {timeout}s")

    def pids(self) -> list[int]:
        assert self.process is not None
        return process_tree(self.process.pid)

    def cpu_seconds(self) -> float:
        """User + system CPU of the server process and its children (all their threads)."""
        total = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / CLOCK_TICKS

    def affinities(self) -> set[frozenset[int]]:
        """The CPU sets of every thread of the server's processes (one set when pinned as asked)."""
        found = set()
        for pid in self.pids():
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    found.add(frozenset(os.sched_getaffinity(int(task.name))))
                except OSError:
                    continue
        return found

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def log_problems(self) -> list[str]:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return [line for line in text.splitlines() if re.search(r"Traceback|Could not record|ERROR|Exception", line)]


def make_server(name: str, port: int, cpus: set[int] | None = None, capture: Path = CAPTURE) -> Server:
    """A server by its row's name; ``NAME-norec`` is our app on that server with recording off, and a bare app
    answers what ``capture`` holds (sequential.py serves a plain and a streamed capture)."""
    base = name.removesuffix("-norec")
    if base in OUR_SERVERS or name == "capture":
        app, cwd = "harnessweb.asgi:application", ROOT
        env = cluster_env() if name in CLUSTERS else app_env()
        if name.endswith("-norec"):
            env["HARNESS_BENCH_NO_RECORD"] = "1"
    else:
        app, cwd, env = "bare_app:app", BENCH, {**os.environ, "BENCH_CAPTURE": str(capture)}
    if name == "aimock":
        fixture = WORK / "aimock-fixture.json"
        fixture.write_text(json.dumps(AIMOCK_FIXTURE, indent=2))
        command = ["node", str(AIMOCK_CLI), "-p", str(port), "-h", HOST, "-f", str(fixture), "--log-level", "warn"]
        return Server(name, command, WORK, dict(os.environ), port, cpus=cpus)
    if base.endswith("daphne"):
        # As `make run` starts it (harnessweb/serve.py); the bare app runs from BENCH, where only daphne is at hand.
        serve = [str(BIN / "python"), "-m", "harnessweb.serve"] if base == "daphne" else [str(BIN / "daphne")]
        command = [*serve, "-b", HOST, "-p", str(port), app]
    elif name.endswith("granian"):
        command = [str(BIN / "granian"), "--interface", "asgi", "--host", HOST, "--port", str(port)]
        command += ["--loop", "uvloop", "--workers", "1", app]
    else:
        # uvicorn, uvicorn-norec, bare-uvicorn and the clusters (as `make serve-cluster` starts them).
        command = [str(BIN / "uvicorn"), "--host", HOST, "--port", str(port)]
        if name in CLUSTERS:
            command += ["--workers", str(CLUSTERS[name])]
        command += ["--loop", "uvloop", "--http", "httptools", "--no-access-log", app]
    return Server(name, command, cwd, env, port, cpus=cpus)


def capture_response(body: bytes, capture: Path = CAPTURE, streamed: bool = True) -> bytes:
    """Serve one request from our app and keep its status, app headers and body for the bare app (in ``capture``;
    ``streamed``: the request asks for a stream)."""
    server = make_server("capture", free_port())
    server.start()
    try:
        status, headers, sse, _ = fetch(server.port, body)
    finally:
        server.stop()
    if status != 200 or (streamed and b"data: [DONE]" not in sse) or b"Short benchmark" not in sse:
        raise RuntimeError(f"unexpected answer from our app ({status}):\n{sse[:2000]!r}")
    kept = [(n, v) for n, v in headers if n not in SERVER_HEADERS | PER_REQUEST_HEADERS]
    fresh = [n for n, _ in headers if n in PER_REQUEST_HEADERS]
    kept_capture = {
        "status": status,
        "headers": kept,
        "per_request_headers": fresh,
        "body": base64.b64encode(sse).decode(),
    }
    capture.write_text(json.dumps(kept_capture))
    frames = sse.count(b"\n\n")
    log(f"captured our answer: {len(sse)} bytes in {frames} frames -> {capture.relative_to(ROOT)}")
    return sse


# -- recording ----------------------------------------------------------------------------------------------------

RECORDED_QUERIES = {
    "runs": "SELECT count(*) FROM runs_app_run",
    "runs_passed": "SELECT count(*) FROM runs_app_run WHERE status = 'passed'",
    "response_200": "SELECT count(*) FROM runs_app_runevent WHERE kind = 'response' AND {status} = 200",
    "runs_without_response": "SELECT count(*) FROM runs_app_run r WHERE NOT EXISTS "
    "(SELECT 1 FROM runs_app_runevent e WHERE e.run_id = r.id AND e.kind = 'response')",
}
EVENTS_BY_KIND = "SELECT kind, count(*) FROM runs_app_runevent GROUP BY kind"


def recorded(database_url: str | None = None) -> dict[str, int]:
    """Runs and events (by kind) in the benchmark's SQLite database, or in the PostgreSQL one ``database_url`` names."""
    if database_url:
        import psycopg

        with psycopg.connect(database_url, autocommit=True, connect_timeout=10) as pg:
            counts = dict(pg.execute(EVENTS_BY_KIND).fetchall())
            for key, sql in RECORDED_QUERIES.items():
                counts[key] = pg.execute(sql.format(status="(data->>'status')::int")).fetchone()[0]
        return counts
    with sqlite3.connect(f"file:{DB}?mode=ro", uri=True, timeout=20) as db:
        counts = dict(db.execute(EVENTS_BY_KIND).fetchall())
        for key, sql in RECORDED_QUERIES.items():
            counts[key] = db.execute(sql.format(status="json_extract(data, '$.status')")).fetchone()[0]
    return counts


def wait_recorded(before: dict[str, int], expected: int, database_url: str | None, timeout: float = 60) -> dict:
    """Wait until the recorder has flushed a response event for every request (or stopped making progress)."""
    deadline, last, still = time.monotonic() + timeout, -1, 0
    while time.monotonic() < deadline:
        now = recorded(database_url)
        got = now.get("response", 0) - before.get("response", 0)
        if got >= expected:
            return now
        still = still + 1 if got == last else 0
        if still >= 30:  # three seconds without a new row
            return now
        last = got
        time.sleep(0.1)
    return recorded(database_url)


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after | before}


def recording_problems(name: str, rec: dict[str, int], acknowledged: int, attempted: int) -> list[str]:
    """What the recording check finds wrong (nothing: every acknowledged response recorded, nothing made up)."""
    events = sum(v for k, v in rec.items() if k not in RECORDED_QUERIES)
    if name == "uvicorn-norec":
        return [] if rec.get("runs", 0) == 0 and events == 0 else [f"recording off, yet {rec} recorded"]
    problems = []
    responses = rec.get("response", 0)
    if rec.get("response_200", 0) < acknowledged:
        problems.append(
            f"MISSING RECORDS: {rec.get('response_200', 0)} responses with status 200 recorded for {acknowledged} "
            "answers clients received"
        )
    if responses > attempted:
        problems.append(f"recorded {responses} responses for at most {attempted} requests sent")
    if rec.get("request", 0) != responses:
        problems.append(f"recorded {rec.get('request', 0)} request events but {responses} response events")
    if rec.get("runs_without_response", 0):
        problems.append(f"{rec['runs_without_response']} runs without a response event")
    return problems
