"""Pacing under load: many concurrent paced streams on one server process, and how far each chunk arrives from the
time its pacing scheduled.

    .venv/bin/python tests/benchmarks/pacing.py [--streams 1000] [--interval-ms 100] [--chunks 20]
        [--server uvicorn|daphne] [--ramp-s 2]

A scenario streams ``--chunks`` one-word chunks ``--interval-ms`` apart (``pacing``); ``--streams`` clients open
their connections (spread over ``--ramp-s`` seconds, so that they all stream at once without arriving in one
instant) and read every frame as it arrives. For each frame after the first but the last, the drift is its
arrival minus its scheduled time (the stream's first frame plus i intervals, as the server schedules it); the
figures are the drift's p50, p99 and maximum in milliseconds and as a share of the interval, and the streams that
failed; the last frame, which also waits for the commit of the response's events (an acknowledged response is a
recorded one), is shown apart. The server is started as the load benchmark starts it (``load.py``), with pacing
on, on SQLite.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load  # noqa: E402

SCENARIO_ID = "bench-paced"


def scenario(chunks: int, interval_ms: int) -> dict:
    words = " ".join(f"w{i}" for i in range(chunks))
    return {
        "id": SCENARIO_ID,
        "description": "Pacing benchmark: one word per chunk, on a fixed interval.",
        "pacing": {"chunk_words": 1, "interval_ms": interval_ms},
        "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": words}}],
    }


async def one_stream(port: int, body: bytes) -> list[float]:
    """The arrival time of each SSE frame of one streamed answer (HTTP/1.0: it ends when the server closes)."""
    reader, writer = await asyncio.open_connection(load.HOST, port, limit=1 << 20)
    writer.write(load.request_bytes(port, body))
    await writer.drain()
    arrivals: list[float] = []
    buffer = b""
    head_done = False
    while True:
        data = await reader.read(65536)
        if not data:
            break
        now = time.perf_counter()
        buffer += data
        if not head_done:
            if b"\r\n\r\n" not in buffer:
                continue
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200") and not head.startswith(b"HTTP/1.0 200"):
                raise RuntimeError(head.split(b"\r\n", 1)[0].decode())
            head_done = True
        while b"\n\n" in buffer:
            _, _, buffer = buffer.partition(b"\n\n")
            arrivals.append(now)
    writer.close()
    return arrivals


async def run(port: int, streams: int, interval_ms: int, ramp_s: float) -> tuple[list[float], list[float], int, float]:
    body = json.dumps({**load.REQUEST, "messages": [{"role": "user", "content": SCENARIO_ID}]}).encode()
    started = time.perf_counter()

    async def later(i: int) -> list[float]:
        await asyncio.sleep(i * ramp_s / streams)
        return await one_stream(port, body)

    results = await asyncio.gather(*(later(i) for i in range(streams)), return_exceptions=True)
    elapsed = time.perf_counter() - started
    drifts: list[float] = []
    last: list[float] = []  # the last frame's drift: it also waits for the commit of the response's events
    failed = 0
    for arrivals in results:
        if isinstance(arrivals, BaseException) or len(arrivals) < 2:
            failed += 1
            continue
        first = arrivals[0]
        drifts += [(at - first - i * interval_ms / 1000) * 1000 for i, at in enumerate(arrivals[:-1]) if i]
        last.append((arrivals[-1] - first - (len(arrivals) - 1) * interval_ms / 1000) * 1000)
    return drifts, last, failed, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--server", default="uvicorn", choices=("uvicorn", "daphne"))
    parser.add_argument("--ramp-s", type=float, default=2.0, help="the streams start spread over this many seconds")
    args = parser.parse_args()
    load.WORK.mkdir(exist_ok=True)
    load.prepare_database(scenario(args.chunks, args.interval_ms))
    server = load.make_server(args.server, load.free_port())
    server.env["HARNESS_PACING"] = "on"
    server.start()
    try:
        import uvloop

        gc.disable()  # the client's own collections would show as the server's drift
        drifts, last, failed, elapsed = uvloop.run(run(server.port, args.streams, args.interval_ms, args.ramp_s))
    finally:
        server.stop()
    p50, p99 = load.percentile(drifts, 50), load.percentile(drifts, 99)
    worst = max(drifts) if drifts else float("nan")
    share = p99 / args.interval_ms * 100
    print(
        f"{args.streams} paced streams on one {args.server} process, {args.chunks} chunks {args.interval_ms} ms apart"
    )
    print(f"drift of {len(drifts)} frames (ms): p50 {p50:.2f}  p99 {p99:.2f}  max {worst:.2f}")
    print(f"p99 drift = {share:.1f}% of the interval ({'under' if share < 5 else 'OVER'} 5%); failed streams: {failed}")
    print(
        f"the last frame (after the commit of the response's events), drift (ms): p50 {load.percentile(last, 50):.2f}"
        f"  p99 {load.percentile(last, 99):.2f}"
    )
    print(f"all streams done in {elapsed:.2f} s (scheduled: {(args.chunks + 3) * args.interval_ms / 1000:.2f} s each)")
    print("command: " + " ".join([".venv/bin/python", "tests/benchmarks/pacing.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
