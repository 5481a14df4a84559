"""Where a request's time goes: the load benchmark's request driven through the ASGI application in-process
(no server, no sockets), under cProfile, with recording on and the durable wait as served.

    .venv/bin/python tests/benchmarks/profile_endpoint.py [--requests 3000] [--concurrency 16] [--top 25]
        [--no-record] [--plain] [--sdk-headers] [--named-run] [--new-conversations] [--steps]
    valgrind --tool=callgrind --instr-atstart=no .venv/bin/python tests/benchmarks/profile_endpoint.py \
        --callgrind [-n 1000] [--no-record]

It uses a fresh SQLite database in ``tests/benchmarks/.work/profile.sqlite3``, stores the load benchmark's scenario,
warms up, then prints our code's CPU time per request (the wall time of the whole batch divided by the requests: one
process, one core) and the profile's top lines by own time and by cumulative time. ``--no-record`` measures the same
with the recorder's writes skipped (the benchmark-only switch ``HARNESS_BENCH_NO_RECORD``). ``--plain`` sends the
request without ``stream`` (one frame); ``--sdk-headers`` with the headers the openai SDK sends (its key, its
platform headers); ``--named-run`` names one run on every request (``X-Harness-Run``, as the pytest plugin's server
mode does), so each asks for the run's script; ``--new-conversations`` gives each request a system prompt of its
own, so each starts a conversation (as each test's first call does) and the recorder looks for its run. ``--steps``
(with ``-c 1``: a test suite's calls, one after another) times each request and each step of its commit on the
loop's own connection (``loop_sqlite``: the redaction, the values prepared, ``BEGIN``, each statement, ``COMMIT``),
and the same requests with recording off in the same process, round by round, instead of the profile.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
WORK = BENCH / ".work"
DB = WORK / "profile.sqlite3"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

from servers import PATH, REQUEST, SCENARIO  # noqa: E402


def setup(no_record: bool) -> object:
    WORK.mkdir(exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB}{suffix}").unlink(missing_ok=True)
    os.environ.update(SQLITE_PATH=str(DB), HARNESS_PACING="off", DJANGO_SETTINGS_MODULE="harnessweb.settings")
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    if no_record:
        os.environ["HARNESS_BENCH_NO_RECORD"] = "1"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from harnessweb.engine import schemas
    from scenarios_app.models import Scenario

    Scenario.upsert(schemas.Scenario.model_validate(SCENARIO))
    from harnessweb.asgi import application

    return application


# The headers the openai SDK (2.x) sends beside the request's own: its key and its platform headers (--sdk-headers).
SDK_HEADERS = {
    "accept": "application/json",
    "accept-encoding": "gzip, deflate",
    "authorization": "Bearer sk-bench",
    "connection": "keep-alive",
    "user-agent": "OpenAI/Python 2.8.1",
    "x-stainless-arch": "x64",
    "x-stainless-async": "false",
    "x-stainless-lang": "python",
    "x-stainless-os": "Linux",
    "x-stainless-package-version": "2.8.1",
    "x-stainless-read-timeout": "600",
    "x-stainless-retry-count": "0",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.7",
}
EXTRA_HEADERS: list[tuple[bytes, bytes]] = []


async def one(app: object, body: bytes) -> bytes:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            *EXTRA_HEADERS,
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[bytes] = []
    delivered = False

    async def receive() -> dict:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))

    await app(scope, receive, send)  # type: ignore[operator]
    return b"".join(sent)


NEW_CONVERSATIONS = False  # --new-conversations: each request's own system prompt, so its own conversation


def request_bodies(requests: int, plain: bool) -> list[bytes]:
    """The load benchmark's request, without ``stream`` when ``plain``; with ``NEW_CONVERSATIONS`` each starts a
    conversation of its own (a system prompt of its own), as each test's first call does."""
    request = {**REQUEST, "stream": not plain}
    if not NEW_CONVERSATIONS:
        return [json.dumps(request).encode()] * requests
    batch = uuid.uuid4()  # (a batch's conversations are new to the database too)
    return [
        json.dumps(
            {
                **request,
                "messages": [{"role": "system", "content": f"conversation {i} of {batch}"}, *REQUEST["messages"]],
            }
        ).encode()
        for i in range(requests)
    ]


async def drive(app: object, requests: int, concurrency: int, plain: bool = False) -> tuple[float, float]:
    """The batch's wall time and the process's CPU time (the writer's thread included), in seconds."""
    bodies = request_bodies(requests, plain)
    queue = iter(range(requests))

    async def worker() -> None:
        for i in queue:
            answer = await one(app, bodies[i])
            assert answer.endswith(b"}" if plain else b"data: [DONE]\n\n"), answer[-200:]

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, time.process_time() - cpu


class Timed:
    """A ``sqlite3`` connection whose statements are timed by their first word (``BEGIN``, ``INSERT``, ``COMMIT``)."""

    def __init__(self, db: Any, steps: dict[str, list[float]]) -> None:
        self.db, self.steps = db, steps

    def _timed(self, call: Any, sql: str, *args: Any) -> Any:
        started = time.perf_counter_ns()
        result = call(sql, *args)
        name = sql.split()[0] if " INTO " not in sql else sql.split('"')[1]  # (an insert: its table)
        self.steps.setdefault(name, []).append((time.perf_counter_ns() - started) / 1000)
        return result

    def execute(self, sql: str, *args: Any) -> Any:
        return self._timed(self.db.execute, sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._timed(self.db.executemany, sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def steps(app: object, loop: asyncio.AbstractEventLoop, args: argparse.Namespace) -> None:
    """Each request's time with recording on and off (rounds taking turns) and each step of its commit, µs."""
    from runs_app.endpoint import loop_sqlite
    from runs_app.endpoint.recorder import get_recorder

    found: dict[str, list[float]] = {}

    def timed(name: str, call: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            started = time.perf_counter_ns()
            try:
                return call(*a, **k)
            finally:
                found.setdefault(name, []).append((time.perf_counter_ns() - started) / 1000)

        return run

    writer = loop_sqlite.writer

    def timed_writer() -> Any:
        current = writer()
        if not isinstance(current.db, Timed):
            current.db = Timed(current.db, found)
        return current

    loop_sqlite.writer = timed_writer
    loop_sqlite.redacted = timed("redaction", loop_sqlite.redacted)
    loop_sqlite.Plan.params = timed("values prepared", loop_sqlite.Plan.params)
    loop_sqlite.event_params = timed("values prepared", loop_sqlite.event_params)
    loop_sqlite.write = timed("the whole commit (loop_sqlite.write)", loop_sqlite.write)

    async def calls(n: int) -> list[float]:
        times = []
        for body in request_bodies(n, args.plain):
            started = time.perf_counter_ns()
            await one(app, body)
            times.append((time.perf_counter_ns() - started) / 1000)
        return times

    recorder = get_recorder()
    by_mode: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(3):
        for writing in (True, False):
            recorder.writing = writing
            if writing:
                found.clear()
            by_mode[writing].append(statistics.median(loop.run_until_complete(calls(args.requests))))
    kind = "plain" if args.plain else "streamed"
    print(f"{args.requests} {kind} requests one after another, 3 rounds each, recording on and off taking turns")
    for writing, medians in by_mode.items():
        print(f"  request, recording {'on ' if writing else 'off'}: median by round {[round(m) for m in medians]} µs")
    print("The last round's steps, µs (median, p90):")
    for name, values in found.items():
        ordered = sorted(values)
        print(
            f"  {name:<40} {statistics.median(ordered):7.1f} {ordered[int(0.9 * len(ordered))]:7.1f}  ({len(values)})"
        )


def instructions(app: object, loop: asyncio.AbstractEventLoop, args: argparse.Namespace) -> None:
    """One drive with callgrind's instrumentation on (the process runs under ``valgrind --tool=callgrind
    --instr-atstart=no``): divide the instructions it reports by the requests printed. Instruction counts do not move
    with the machine's load; the commits show how many responses shared each."""
    from runs_app.endpoint import loop_sqlite

    def commits() -> int:
        return sum(writer.commits for writer in loop_sqlite._writers.values())

    before = commits()
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True)
    loop.run_until_complete(drive(app, args.requests, args.concurrency, args.plain))
    subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True, capture_output=True)
    print(f"requests measured: {args.requests}, commits: {commits() - before}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", "-n", type=int, default=3000)
    parser.add_argument("--concurrency", "-c", type=int, default=16)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--plain", action="store_true", help="the request without stream (one frame)")
    parser.add_argument("--sdk-headers", action="store_true", help="with the headers the openai SDK sends")
    parser.add_argument("--new-conversations", action="store_true", help="each request a conversation of its own")
    parser.add_argument("--named-run", action="store_true", help="every request names one run (X-Harness-Run)")
    parser.add_argument("--steps", action="store_true", help="each request and commit step timed, -c 1 (no profile)")
    parser.add_argument("--callgrind", action="store_true", help="under valgrind: instrument one drive only")
    args = parser.parse_args()
    if args.sdk_headers:
        EXTRA_HEADERS[:] = [(name.encode(), value.encode()) for name, value in SDK_HEADERS.items()]
    global NEW_CONVERSATIONS
    NEW_CONVERSATIONS = args.new_conversations
    if args.named_run:  # as the pytest plugin's server mode names its session run on every call
        EXTRA_HEADERS.append((b"x-harness-run", str(uuid.uuid4()).encode()))
    app = setup(args.no_record)
    import uvloop

    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(drive(app, 300, args.concurrency, args.plain))  # warm-up
    if args.steps:
        return steps(app, loop, args)
    if args.callgrind:
        return instructions(app, loop, args)
    rounds = [loop.run_until_complete(drive(app, args.requests, args.concurrency, args.plain)) for _ in range(3)]
    wall, cpu = min(r[0] for r in rounds), min(r[1] for r in rounds)
    profiler = cProfile.Profile()
    profiler.enable()
    loop.run_until_complete(drive(app, args.requests, args.concurrency, args.plain))
    profiler.disable()
    print(f"{args.requests} requests, concurrency {args.concurrency}, recording {'off' if args.no_record else 'on'}")
    per = 1e6 / args.requests
    print(f"best of 3: wall {wall * per:.0f} µs, CPU {cpu * per:.0f} µs per request ({args.requests / wall:.0f}/s)")
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(args.top)
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:20000])


if __name__ == "__main__":
    main()
