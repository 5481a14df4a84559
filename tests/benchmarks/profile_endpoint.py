"""Where a request's time goes: the load benchmark's request driven through the ASGI application in-process
(no server, no sockets), under cProfile, with recording on and the durable wait as served.

    .venv/bin/python tests/benchmarks/profile_endpoint.py [--requests 3000] [--concurrency 16] [--top 25]
        [--no-record]

It uses a fresh SQLite database in ``tests/benchmarks/.work/profile.sqlite3``, stores the load benchmark's scenario,
warms up, then prints our code's CPU time per request (the wall time of the whole batch divided by the requests:
one process, one core) and the profile's top lines by own time and by cumulative time. ``--no-record`` measures the
same with the recorder's writes skipped (the benchmark-only switch ``HARNESS_BENCH_NO_RECORD``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
WORK = BENCH / ".work"
DB = WORK / "profile.sqlite3"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

from load import PATH, REQUEST, SCENARIO  # noqa: E402


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


async def drive(app: object, requests: int, concurrency: int) -> tuple[float, float]:
    """The batch's wall time and the process's CPU time (the writer's thread included), in seconds."""
    body = json.dumps(REQUEST).encode()
    queue = iter(range(requests))

    async def worker() -> None:
        for _ in queue:
            answer = await one(app, body)
            assert answer.endswith(b"data: [DONE]\n\n"), answer[-200:]

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", "-n", type=int, default=3000)
    parser.add_argument("--concurrency", "-c", type=int, default=16)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    app = setup(args.no_record)
    import uvloop

    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(drive(app, 300, args.concurrency))  # warm-up
    rounds = [loop.run_until_complete(drive(app, args.requests, args.concurrency)) for _ in range(3)]
    wall, cpu = min(r[0] for r in rounds), min(r[1] for r in rounds)
    profiler = cProfile.Profile()
    profiler.enable()
    loop.run_until_complete(drive(app, args.requests, args.concurrency))
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
