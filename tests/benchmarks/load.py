"""Load benchmark: streamed chat completions against our app, a bare ASGI ceiling, aimock and a small cluster.

    .venv/bin/python tests/benchmarks/load.py [--requests 3000] [--concurrency 16] [--rounds 3]
        [--servers daphne,uvicorn,uvicorn-norec,granian,bare-daphne,bare-uvicorn,bare-granian,aimock]
    .venv/bin/python tests/benchmarks/load.py --servers cluster-1,cluster-2,cluster-4

For every server: start it on a free port (pacing off), warm it up, then ``--rounds`` runs of ``--requests`` streamed
``POST /v1/chat/completions`` with ``ab`` at ``--concurrency`` (the best round's requests/second counts), then a
smaller pass with an asyncio client for time to first byte and full response time. The load generator runs on one
core, every single-process server on another (``--no-pin``: not pinned). Afterwards it checks that our app recorded
every response a client received (SQLite; PostgreSQL for the cluster rows). Everything it writes goes to
``tests/benchmarks/.work/``. See README.md next to this file.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import os
import re
import resource
import shlex
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

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
WORK = BENCH / ".work"
BIN = Path(sys.executable).parent
DB = WORK / "bench.sqlite3"
CAPTURE = WORK / "capture.json"
BODY = WORK / "body.json"
AIMOCK_VERSION = "1.43.0"
AIMOCK_CLI = WORK / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
HOST = "127.0.0.1"
PATH = "/v1/chat/completions"
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
# The targets: best server over aimock, each server over its bare app, the cost of recording.
TARGET_VS_AIMOCK, TARGET_VS_BARE, TARGET_RECORDING = 1.5, 0.7, 0.10

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


# -- raw HTTP -----------------------------------------------------------------------------------------------------


def request_bytes(port: int, body: bytes) -> bytes:
    """HTTP/1.0, as ab sends it: a streamed answer without Content-Length ends when the server closes."""
    head = (
        f"POST {PATH} HTTP/1.0\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nAccept: */*\r\n\r\n"
    )
    return head.encode() + body


def dechunk(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def parse_response(raw: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body (de-chunked: uvicorn answers HTTP/1.0 with chunked encoding too)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1]) if lines and lines[0].startswith("HTTP/") else 0
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip().lower(), value.strip()))
    if ("transfer-encoding", "chunked") in headers:
        body = dechunk(body)
    return status, headers, body


def fetch(port: int, body: bytes, timeout: float = 10) -> tuple[int, list[tuple[str, str]], bytes, int]:
    """One request; also returns the length of the body as sent on the wire (what ab calls Document Length)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(request_bytes(port, body))
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    raw = b"".join(chunks)
    return (*parse_response(raw), len(raw.partition(b"\r\n\r\n")[2]))


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


# -- load ---------------------------------------------------------------------------------------------------------


@dataclass
class AbResult:
    command: list[str]
    requested: int = 0
    complete: int = 0
    failed: int = 0
    non_2xx: int = 0
    rps: float = 0.0
    document_length: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    server_cpu_pct: float = math.nan
    other_cpu_pct: float = math.nan
    ttfb: list[float] = field(default_factory=list)
    total_p50: float = math.nan
    total_p99: float = math.nan
    keepalive: int = 0
    failure_kinds: dict[str, int] = field(default_factory=dict)
    output: str = ""

    @property
    def good(self) -> int:
        """Answers ab received whole with a 2xx status: at least this many reached the client.

        ab's "Complete requests" counts every request that ended, failed ones included (a length mismatch, a
        receive error that -r lets it go on after, a misread answer on a kept-alive connection); "Failed requests"
        also counts connect errors, which never sent a request, so this is a lower bound. ab never retries: it
        starts at most -n requests (``requested``), the upper bound of what the server can have seen.
        """
        return max(0, self.complete - self.failed - self.non_2xx)


def run_ab(name: str, port: int, n: int, c: int, tag: str, keepalive: bool = True) -> AbResult:
    csv_path, tsv_path = WORK / f"ab-{name}-{tag}.csv", WORK / f"ab-{name}-{tag}.tsv"
    command = ["ab", "-q", "-r", *(["-k"] if keepalive else []), "-n", str(n), "-c", str(c)]
    command += ["-p", str(BODY), "-T", "application/json"]
    command += ["-e", str(csv_path), "-g", str(tsv_path), f"http://{HOST}:{port}{PATH}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = AbResult(command=command, requested=n, output=proc.stdout + proc.stderr, wall=wall)
    (WORK / f"ab-{name}-{tag}.txt").write_text(shlex.join(command) + "\n\n" + result.output)
    result.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"ab failed against {name}:\n{result.output}")

    def number(label: str, default: float = 0.0) -> float:
        match = re.search(rf"^{label}:\s+([\d.]+)", result.output, re.M)
        return float(match.group(1)) if match else default

    result.complete = int(number("Complete requests"))
    result.failed = int(number("Failed requests"))
    result.non_2xx = int(number("Non-2xx responses"))
    result.rps = number("Requests per second")
    result.document_length = int(number("Document Length"))
    result.keepalive = int(number("Keep-Alive requests"))
    kinds = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", result.output)
    if kinds:
        names = ("connect", "receive", "length", "exceptions")
        result.failure_kinds = dict(zip(names, map(int, kinds.groups()), strict=True))
    rows = dict(line.split(",") for line in csv_path.read_text().splitlines()[1:])
    result.total_p50, result.total_p99 = float(rows["50"]), float(rows["99"])
    for line in tsv_path.read_text().splitlines()[1:]:
        ctime, _dtime, _ttime, wait = (float(v) for v in line.split("\t")[-4:])
        result.ttfb.append(ctime + wait)
    return result


@dataclass
class LatencyResult:
    ttfb_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    wall: float = 0.0


async def latency_pass(port: int, body: bytes, n: int, c: int, expected: bytes | None) -> LatencyResult:
    """n requests on c connections at a time, each timed from connect to its first and its last byte."""
    payload = request_bytes(port, body)
    result = LatencyResult()
    todo = iter(range(n))

    async def worker() -> None:
        for _ in todo:
            started = time.perf_counter()
            try:
                reader, writer = await asyncio.open_connection(HOST, port)
                writer.write(payload)
                first = await reader.read(65536)
                first_at = time.perf_counter()
                chunks = [first]
                while chunk := await reader.read(65536):
                    chunks.append(chunk)
                done_at = time.perf_counter()
                writer.close()
            except OSError as exc:
                result.bad.append(f"{type(exc).__name__}: {exc}")
                continue
            status, _, sse = parse_response(b"".join(chunks))
            if status != 200 or b"data: [DONE]" not in sse or (expected is not None and sse != expected):
                result.bad.append(f"status {status}, {len(sse)} bytes: {sse[:200]!r}")
                continue
            result.ttfb_ms.append((first_at - started) * 1000)
            result.total_ms.append((done_at - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(c)))
    result.wall = time.perf_counter() - started
    return result


def run_latency(port: int, body: bytes, n: int, c: int, expected: bytes | None) -> LatencyResult:
    try:
        import uvloop

        return uvloop.run(latency_pass(port, body, n, c, expected))
    except ImportError:
        return asyncio.run(latency_pass(port, body, n, c, expected))


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


# -- one server ---------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    ab: AbResult | None = None  # the best round
    rounds: list[AbResult] = field(default_factory=list)
    latency: LatencyResult | None = None
    recording: dict[str, int] | None = None
    cpus: str = "all"
    acknowledged: int = 0  # answers a client received whole (status 200): each must be recorded
    attempted: int = 0  # requests sent, at most: no more can be recorded
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""

    def count(self, ab: AbResult) -> None:
        self.acknowledged += ab.good
        self.attempted += ab.requested


def measure_rounds(server: Server, outcome: Outcome, args: argparse.Namespace, keepalive: bool) -> None:
    """``--rounds`` ab runs on the warm server; the best one's req/s counts."""
    for number in range(1, args.rounds + 1):
        if args.wait_quiet:
            wait_quiet(args.wait_quiet, server.cpu_seconds)
        cpu_before, busy_before = server.cpu_seconds(), machine_busy_seconds()
        ab = run_ab(server.name, server.port, args.requests, args.concurrency, f"round{number}", keepalive)
        server_cpu = server.cpu_seconds() - cpu_before
        ab.server_cpu_pct = server_cpu / ab.wall * 100
        ab.other_cpu_pct = max(0.0, machine_busy_seconds() - busy_before - server_cpu - ab.cpu) / ab.wall * 100
        outcome.rounds.append(ab)
        outcome.count(ab)
        log(
            f"   round {number}: {ab.rps:.1f} req/s, {ab.complete} complete, {ab.failed} failed, {ab.non_2xx} "
            f"non-2xx, {ab.keepalive} kept alive; CPU (100% = one core): server {ab.server_cpu_pct:.0f}%, "
            f"ab {ab.cpu / ab.wall * 100:.0f}%, everything else {ab.other_cpu_pct:.0f}%"
        )
        if ab.failed or ab.non_2xx or ab.complete != args.requests:
            outcome.problems.append(f"round {number}: ab: {ab.failed} failed, {ab.non_2xx} non-2xx of {ab.complete}")
    outcome.ab = max(outcome.rounds, key=lambda r: r.rps)
    if outcome.ab.other_cpu_pct > OUTSIDE_LOAD_PCT:
        outcome.notes.append(
            f"other processes used {outcome.ab.other_cpu_pct:.0f}% of a core during the best round: figures are low"
        )


def bench_server(
    name: str, args: argparse.Namespace, body: bytes, expected: bytes | None, pin: Pinning | None = None
) -> Outcome:
    outcome = Outcome(name)
    pin = pin or Pinning()
    if name == "aimock":
        why = install_aimock()
        if why:
            outcome.error = f"aimock not run: {why}"
            return outcome
    database_url = PG_URL if name in CLUSTERS else None
    before = recorded(database_url) if name in OUR_SERVERS else {}
    if args.wait_quiet:
        wait_quiet(args.wait_quiet)
    server = make_server(name, free_port(), pin.for_server(name))
    outcome.cpus = cpus_label(server.cpus, pin.everything)
    log(f"\n== {name} (CPU {outcome.cpus}): {shlex.join(server.command)}")
    try:
        server.start()
        # A cluster's port answers before its workers are up: the first request waits for them.
        status, _, sse, wire_length = fetch(server.port, body, timeout=60)
        outcome.acknowledged, outcome.attempted = 1, 1
        if status != 200 or b"data: [DONE]" not in sse:
            raise RuntimeError(f"{name} answered {status}: {sse[:500]!r}")
        if expected is not None and sse != expected:
            outcome.problems.append(f"answer differs from the captured one ({len(sse)} vs {len(expected)} bytes)")
        if name == "aimock":
            frames = sse.count(b"\n\n")
            log(f"   aimock answers {len(sse)} bytes in {frames} frames (ours: see the capture above)")
        if server.cpus:
            found, pids = server.affinities(), server.pids()
            if found != {frozenset(server.cpus)}:
                outcome.problems.append(f"pinned to CPU {sorted(server.cpus)}, yet its threads may run on {found}")
            allowed = sorted(set().union(*found))
            log(f"   {len(pids)} server process(es), each of their threads allowed on CPU {allowed} only")
        keepalive = True
        if args.warmup:
            warm = run_ab(name, server.port, args.warmup, args.concurrency, "warmup")
            outcome.count(warm)
            if warm.failed and warm.keepalive:
                # A streamed answer has no Content-Length, yet this server says "Connection: keep-alive" to ab's
                # HTTP/1.0 request: ab then cuts bodies wrong (Length failures). Measure it without -k.
                outcome.notes.append(
                    f"ab -k misreads this server's streamed answers ({warm.failure_kinds}, {warm.keepalive} "
                    "Keep-Alive requests): measured without -k"
                )
                keepalive = False
                warm = run_ab(name, server.port, args.warmup, args.concurrency, "warmup-nokeepalive", keepalive)
                outcome.count(warm)
            log(f"   warm-up: {warm.complete} requests, {warm.rps:.0f} req/s")
        measure_rounds(server, outcome, args, keepalive)
        if outcome.ab and outcome.ab.document_length != wire_length:
            outcome.problems.append(f"ab saw {outcome.ab.document_length}-byte bodies, the probe {wire_length}")
        n = min(args.latency_requests, args.requests)
        lat = run_latency(server.port, body, n, args.concurrency, expected)
        outcome.latency = lat
        outcome.acknowledged += len(lat.ttfb_ms)
        outcome.attempted += n
        log(f"   latency pass: {len(lat.ttfb_ms)} ok of {n} in {lat.wall:.1f}s ({n / lat.wall:.0f} req/s)")
        if lat.bad:
            outcome.problems.append(f"latency pass: {len(lat.bad)} bad answers, first: {lat.bad[0]}")
        if name in OUR_SERVERS:
            expected_responses = 0 if name == "uvicorn-norec" else outcome.acknowledged
            wait_recorded(before, expected_responses, database_url)
            server.stop()
            outcome.recording = rec = delta(recorded(database_url), before)  # with anything flushed on the way out
            log(
                f"   recorded: {rec['runs']} runs ({rec['runs_passed']} passed), {rec.get('request', 0)} request / "
                f"{rec.get('response', 0)} response events ({rec['response_200']} with status 200) for "
                f"{outcome.acknowledged} answers received of at most {outcome.attempted} requests sent"
            )
            outcome.problems += recording_problems(name, rec, outcome.acknowledged, outcome.attempted)
    except Exception as exc:  # report and go on with the next server
        outcome.error = f"{type(exc).__name__}: {exc}"
    finally:
        server.stop()
    found = server.log_problems()
    if found:
        outcome.problems.append(f"{len(found)} error lines in {server.log_path.relative_to(ROOT)}, first: {found[0]}")
    return outcome


# -- report -------------------------------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def best_rps(by_name: dict[str, Outcome], name: str) -> float | None:
    o = by_name.get(name)
    return o.ab.rps if o is not None and o.ab is not None and o.ab.rps else None


def ratio_of(by_name: dict[str, Outcome], name: str, other: str | None) -> float | None:
    mine, theirs = best_rps(by_name, name), best_rps(by_name, other) if other else None
    return mine / theirs if mine and theirs else None


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def ratio_lines(by_name: dict[str, Outcome]) -> list[str]:
    """Each of our servers against its bare app and aimock, and the issue's targets, each met or not."""
    lines = ["", "Ratios (best rounds' req/s):"]
    for o in by_name.values():
        if o.name not in OUR_SERVERS or best_rps(by_name, o.name) is None:
            continue
        bare = BARE.get(o.name)
        parts = [f"{fmt_ratio(ratio_of(by_name, o.name, bare))} x {bare}" if bare else "no bare app"]
        parts.append(f"{fmt_ratio(ratio_of(by_name, o.name, 'aimock'))} x aimock")
        if o.name in CLUSTERS and o.name != "cluster-1":
            parts.append(f"{fmt_ratio(ratio_of(by_name, o.name, 'cluster-1'))} x cluster-1")
        lines.append(f"  {o.name}: " + ", ".join(parts))

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT MET"

    lines.append("Targets:")
    measured = [s for s in SUPPORTED if best_rps(by_name, s)]
    aimock = best_rps(by_name, "aimock")
    if measured and aimock:
        best = max(measured, key=lambda s: best_rps(by_name, s) or 0)
        vs = (best_rps(by_name, best) or 0) / aimock
        lines.append(
            f"  best server >= {TARGET_VS_AIMOCK} x aimock: {best} {best_rps(by_name, best):.1f} req/s = {vs:.2f} x "
            f"aimock {aimock:.1f} -> {verdict(vs >= TARGET_VS_AIMOCK)}"
        )
    else:
        lines.append(f"  best server >= {TARGET_VS_AIMOCK} x aimock: not measured (needs aimock and one of ours)")
    pairs = [(s, ratio_of(by_name, s, BARE[s])) for s in SUPPORTED]
    pairs = [(s, r) for s, r in pairs if r is not None]
    if pairs:
        short = [s for s, r in pairs if r < TARGET_VS_BARE]
        each = ", ".join(f"{s} {r:.2f}" for s, r in pairs)
        lines.append(
            f"  each server >= {TARGET_VS_BARE} x its bare app: {each} -> "
            + (verdict(True) if not short else f"{verdict(False)} ({', '.join(short)})")
        )
    else:
        lines.append(
            f"  each server >= {TARGET_VS_BARE} x its bare app: not measured (needs a server and its bare app)"
        )
    on, off = best_rps(by_name, "uvicorn"), best_rps(by_name, "uvicorn-norec")
    norec = by_name.get("uvicorn-norec")
    if norec and norec.recording and recording_problems(norec.name, norec.recording, 0, 0):
        lines.append(
            f"  recording <= {TARGET_RECORDING:.0%}: not measured: uvicorn-norec recorded its requests all the same "
            "(HARNESS_BENCH_NO_RECORD=1 not honoured)"
        )
    elif on and off:
        cost = 1 - on / off
        lines.append(
            f"  recording <= {TARGET_RECORDING:.0%}: recording costs {cost:.1%} (1 - uvicorn {on:.1f} / "
            f"uvicorn-norec {off:.1f}) -> {verdict(cost <= TARGET_RECORDING)}"
        )
    else:
        lines.append(f"  recording <= {TARGET_RECORDING:.0%}: not measured (needs uvicorn and uvicorn-norec)")
    return lines


def report(outcomes: list[Outcome], args: argparse.Namespace, pinning: str) -> str:
    by_name = {o.name: o for o in outcomes}
    header = (
        f"{'server':<14} {'req/s':>8} {'TTFB p50':>9} {'TTFB p99':>9} {'total p50':>10} {'total p99':>10} "
        f"{'vs bare':>8} {'vs aimock':>9} {'srv CPU':>8} {'other':>6} {'on CPU':>7}"
    )
    lines = [header, "-" * len(header)]
    for o in outcomes:
        if o.error and o.ab is None:
            lines.append(f"{o.name:<14} {o.error.splitlines()[0]}")
            continue
        lat = o.latency or LatencyResult()
        ab = o.ab or AbResult([])
        vs_bare = "1.00" if o.name.startswith("bare-") else fmt_ratio(ratio_of(by_name, o.name, BARE.get(o.name)))
        lines.append(
            f"{o.name:<14} {fmt(ab.rps):>8} {fmt(percentile(lat.ttfb_ms, 50), 2):>9} "
            f"{fmt(percentile(lat.ttfb_ms, 99), 2):>9} {fmt(percentile(lat.total_ms, 50), 2):>10} "
            f"{fmt(percentile(lat.total_ms, 99), 2):>10} {vs_bare:>8} "
            f"{fmt_ratio(ratio_of(by_name, o.name, 'aimock')):>9} {fmt(ab.server_cpu_pct, 0) + '%':>8} "
            f"{fmt(ab.other_cpu_pct, 0) + '%':>6} {o.cpus:>7}"
        )
    n = min(args.latency_requests, args.requests)
    lines += [
        "",
        f"req/s: the best of {args.rounds} round(s) of ab -n {args.requests} -c {args.concurrency}, after a "
        f"{args.warmup}-request warm-up. TTFB and total (ms): a separate asyncio pass of {n} requests at "
        f"concurrency {args.concurrency}, from connect to the first and the last byte. vs bare / vs aimock: req/s "
        "over the bare ASGI app on the same server / over aimock. srv CPU: server processes' CPU during the best "
        "round (100% = one core); other: CPU used meanwhile by everything but the server and ab. on CPU: the cores "
        f"the server ran on. Pinning: {pinning}.",
        "",
        "ab's own timings of the best round (ms; TTFB = connect + wait, whole milliseconds), and every round:",
        f"{'server':<14} {'TTFB p50':>9} {'TTFB p99':>9} {'total p50':>10} {'total p99':>10} {'ab CPU':>8}  "
        "req/s by round",
    ]
    for o in outcomes:
        if o.ab:
            ab = o.ab
            lines.append(
                f"{o.name:<14} {fmt(percentile(ab.ttfb, 50), 0):>9} {fmt(percentile(ab.ttfb, 99), 0):>9} "
                f"{fmt(ab.total_p50, 2):>10} {fmt(ab.total_p99, 2):>10} {fmt(ab.cpu / ab.wall * 100, 0) + '%':>8}  "
                + " / ".join(fmt(r.rps) for r in o.rounds)
            )
    recorded_lines = [o for o in outcomes if o.recording is not None]
    if recorded_lines:
        lines += ["", "Recorded by our app (SQLite; cluster rows: PostgreSQL):"]
        for o in recorded_lines:
            rec = o.recording or {}
            failed = recording_problems(o.name, rec, o.acknowledged, o.attempted)
            if o.name == "uvicorn-norec":
                verdict = "nothing recorded, as asked" if not failed else "RECORDED WITH RECORDING OFF"
            else:
                verdict = "every acknowledged response recorded" if not failed else "; ".join(failed)
            lines.append(
                f"  {o.name}: {o.acknowledged} answers received of at most {o.attempted} requests sent; "
                f"{rec.get('runs', 0)} runs ({rec.get('runs_passed', 0)} passed), events: {rec.get('request', 0)} "
                f"request, {rec.get('match', 0)} match, {rec.get('validation', 0)} validation, "
                f"{rec.get('response', 0)} response ({rec.get('response_200', 0)} status 200) -> {verdict}"
            )
    lines += ratio_lines(by_name)
    problems = [(o.name, p) for o in outcomes for p in o.problems] + [(o.name, o.error) for o in outcomes if o.error]
    if problems:
        lines += ["", "Problems:"] + [f"  {name}: {p}" for name, p in problems]
    notes = [(o.name, note) for o in outcomes for note in o.notes]
    if notes:
        lines += ["", "Notes:"] + [f"  {name}: {note}" for name, note in notes]
    lines += ["", "Command:", "  " + shlex.join([".venv/bin/python", "tests/benchmarks/load.py", *sys.argv[1:]])]
    for o in outcomes:
        if o.ab:
            command = shlex.join(str(a).replace(f"{ROOT}/", "") for a in o.ab.command)
            lines.append(f"  ab for {o.name}: {command}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", "-n", type=int, default=3000, help="requests per server and round for ab (3000)")
    parser.add_argument("--concurrency", "-c", type=int, default=16, help="concurrent requests (16)")
    parser.add_argument(
        "--servers",
        default=",".join(DEFAULT_SERVERS),
        help=f"comma-separated, of {','.join(ALL_SERVERS)} (default: all but the cluster rows)",
    )
    parser.add_argument("--warmup", type=int, default=300, help="warm-up requests per server before measuring (300)")
    parser.add_argument("--rounds", type=int, default=3, help="measured ab runs per server; the best counts (3)")
    parser.add_argument(
        "--latency-requests", type=int, default=1000, help="requests in the TTFB/total pass, at most --requests (1000)"
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=30,
        help="before each server and round, wait up to this many seconds for the machine to go quiet (30; 0: don't)",
    )
    parser.add_argument(
        "--no-pin", action="store_true", help="don't pin the load generator and the servers to separate cores"
    )
    args = parser.parse_args()
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    unknown = set(servers) - set(ALL_SERVERS)
    if unknown:
        parser.error(f"unknown servers: {', '.join(sorted(unknown))}")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    check_tools(servers)
    WORK.mkdir(exist_ok=True)
    load1 = float(Path("/proc/loadavg").read_text().split()[0])
    log(f"{os.cpu_count()} CPUs, load average {load1:.2f} before starting")
    pin, pinning = Pinning.choose(not args.no_pin)
    log(f"pinning: {pinning}" + ("; cluster rows not pinned" if pin.load else ""))
    prepare_database()
    body = json.dumps(REQUEST).encode()
    BODY.write_bytes(body)
    expected = capture_response(body)
    cluster_ready: str | None = None
    outcomes = []
    for name in servers:
        if name in CLUSTERS and cluster_ready is None:
            try:
                prepare_cluster()
                cluster_ready = ""
            except Exception as exc:
                cluster_ready = f"PostgreSQL/Redis not ready: {type(exc).__name__}: {exc}"
        if name in CLUSTERS and cluster_ready:
            outcomes.append(Outcome(name, error=cluster_ready))
            continue
        outcome = bench_server(name, args, body, None if name == "aimock" else expected, pin)
        outcomes.append(outcome)
        if outcome.error:
            log(f"   {outcome.error}")
    clusters = pin.load is not None and cluster_ready is not None
    text = report(outcomes, args, pinning + (", cluster rows not pinned" if clusters else ""))
    (WORK / "report.txt").write_text(text + "\n")
    log("\n" + text)


if __name__ == "__main__":
    main()
