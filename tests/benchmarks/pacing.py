"""Pacing under load: many concurrent paced streams on one server process, and how far each chunk arrives from the
time its pacing scheduled, on every server a user is told to run.

    .venv/bin/python tests/benchmarks/pacing.py [--streams 1000] [--interval-ms 100] [--chunks 20]
        [--servers daphne,uvicorn] [--rounds 1] [--ramp-s 2] [--no-pin]

A scenario streams ``--chunks`` one-word chunks ``--interval-ms`` apart (``pacing``); ``--streams`` clients open
their connections (spread over ``--ramp-s`` seconds, so that they all stream at once without arriving in one
instant; 0: all at once) and read every frame as it arrives. For each frame after the first but the last, the
drift is its arrival minus its scheduled time (the stream's first frame plus i intervals, as the server schedules
it); the figures are the drift's p50, p99 and maximum in milliseconds, as a share of the interval and of a
stream's length (``--chunks`` intervals), the time to first chunk (from a client's connect to its first frame)
and the streams that failed; the last frame, which also waits for the commit of the response's events (an
acknowledged response is a recorded one), is shown apart. Each server (``daphne``: ``python -m harnessweb.serve``
as ``make run`` starts it; ``uvicorn`` as ``make serve-fast``; ``granian``; ``NAME-norec``: recording off) is
started as the load benchmark starts it (``load.py``), with pacing on, on a fresh SQLite database, pinned as
load.py pins: this client on the last core, the server on the one before (``--no-pin``: not pinned).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import servers as kit  # noqa: E402  (the sibling module: server start-up, database, pinning)

# Our own database, so that a load.py or sequential.py run elsewhere keeps its own.
kit.DB = kit.WORK / "pacing.sqlite3"
SCENARIO_ID = "bench-paced"
SERVERS = ("daphne", "uvicorn", "granian", "daphne-norec", "uvicorn-norec")
DEFAULT_SERVERS = ("daphne", "uvicorn")  # `make run` and `make serve-fast`
TARGET_SHARE = 5  # the target: p99 drift under 5 % of a stream's length


def scenario(chunks: int, interval_ms: int) -> dict:
    words = " ".join(f"w{i}" for i in range(chunks))
    return {
        "id": SCENARIO_ID,
        "description": "Pacing benchmark: one word per chunk, on a fixed interval.",
        "pacing": {"chunk_words": 1, "interval_ms": interval_ms},
        "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": words}}],
    }


async def one_stream(port: int, body: bytes) -> tuple[float, list[float]]:
    """When the client began to connect, and the arrival time of each SSE frame of one streamed answer (HTTP/1.0:
    it ends when the server closes)."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(kit.HOST, port, limit=1 << 20)
    writer.write(kit.request_bytes(port, body))
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
    return started, arrivals


@dataclass
class Result:
    """One server, one round: every frame's drift, every stream's last-frame drift and time to first chunk (ms)."""

    server: str
    cpus: str = "all"
    load_average: str = ""
    drifts: list[float] = field(default_factory=list)
    last: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    # Each frame's drift, split by whether it arrived while streams were still starting (before the last stream's
    # first frame) or after: a server that falls behind only while it accepts requests shows it in the first.
    starting: list[float] = field(default_factory=list)
    steady: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0  # the server's user + system CPU during the run
    failed: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    elapsed: float = 0.0


async def run(result: Result, port: int, streams: int, interval_ms: int, ramp_s: float) -> None:
    body = json.dumps({**kit.REQUEST, "messages": [{"role": "user", "content": SCENARIO_ID}]}).encode()
    started = time.perf_counter()

    async def later(i: int) -> tuple[float, list[float]]:
        await asyncio.sleep(i * ramp_s / streams)
        return await one_stream(port, body)

    outcomes = await asyncio.gather(*(later(i) for i in range(streams)), return_exceptions=True)
    result.elapsed = time.perf_counter() - started
    interval = interval_ms / 1000
    all_started = max((o[1][0] for o in outcomes if not isinstance(o, BaseException) and o[1]), default=0.0)
    for outcome in outcomes:
        if isinstance(outcome, BaseException) or len(outcome[1]) < 2:
            result.failed += 1
            reason = type(outcome).__name__ if isinstance(outcome, BaseException) else "fewer than two frames"
            result.errors[reason] = result.errors.get(reason, 0) + 1
            continue
        connected, arrivals = outcome
        first = arrivals[0]
        result.first.append((first - connected) * 1000)
        for i, at in enumerate(arrivals[:-1]):
            if i:
                drift = (at - first - i * interval) * 1000
                result.drifts.append(drift)
                (result.starting if at <= all_started else result.steady).append(drift)
        # The last frame's drift: it also waits for the commit of the response's events.
        result.last.append((arrivals[-1] - first - (len(arrivals) - 1) * interval) * 1000)


def measure(name: str, args: argparse.Namespace, pin: kit.Pinning) -> Result:
    """A fresh database and server, one run of every stream against it."""
    kit.prepare_database(scenario(args.chunks, args.interval_ms))
    server = kit.make_server(name, kit.free_port(), pin.for_server(name))
    server.env["HARNESS_PACING"] = "on"
    result = Result(name, kit.cpus_label(server.cpus, pin.everything))
    result.load_average = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    server.start()
    cpu_before = server.cpu_seconds()
    try:
        import uvloop

        gc.disable()  # the client's own collections would show as the server's drift
        try:
            uvloop.run(run(result, server.port, args.streams, args.interval_ms, args.ramp_s))
        finally:
            gc.enable()
            gc.collect()
        result.cpu_seconds = server.cpu_seconds() - cpu_before
    finally:
        server.stop()
    return result


def describe(result: Result, args: argparse.Namespace) -> list[str]:
    p = kit.percentile
    length = args.chunks * args.interval_ms  # a stream's scheduled length (ms)
    p50, p99 = p(result.drifts, 50), p(result.drifts, 99)
    worst = max(result.drifts) if result.drifts else float("nan")
    verdict = "under" if p99 / length * 100 < TARGET_SHARE else "OVER"
    errors = ", ".join(f"{n} {reason}" for reason, n in result.errors.items())
    return [
        f"{result.server} (on CPU {result.cpus}, load average before {result.load_average}):",
        f"  drift of {len(result.drifts)} frames (ms): p50 {p50:.2f}  p99 {p99:.2f}  max {worst:.2f}",
        f"  p99 drift = {p99 / args.interval_ms * 100:.1f}% of the interval, {p99 / length * 100:.2f}% of a"
        f" stream's {length} ms ({verdict} {TARGET_SHARE}%); p50 {p50 / length * 100:.2f}% of a stream",
        f"  time to first chunk (ms): p50 {p(result.first, 50):.1f}  p99 {p(result.first, 99):.1f}"
        f"  max {max(result.first, default=float('nan')):.1f}",
        f"  p99 drift of the frames that arrived while streams were still starting: {p(result.starting, 99):.2f}"
        f" ({len(result.starting)} frames), after: {p(result.steady, 99):.2f} ({len(result.steady)} frames)",
        f"  the last frame (after the commit of the response's events), drift (ms): p50 {p(result.last, 50):.2f}"
        f"  p99 {p(result.last, 99):.2f}",
        f"  failed streams: {result.failed}{f' ({errors})' if errors else ''}; all streams done in"
        f" {result.elapsed:.2f} s (scheduled: {(args.chunks + 3) * args.interval_ms / 1000:.2f} s each);"
        f" server CPU {result.cpu_seconds:.2f} s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--servers", default=",".join(DEFAULT_SERVERS), help=f"any of {','.join(SERVERS)}")
    parser.add_argument("--rounds", type=int, default=1, help="runs of every server, each on a fresh server")
    parser.add_argument("--ramp-s", type=float, default=2.0, help="the streams start spread over this many seconds")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the client and the server to a core each")
    args = parser.parse_args()
    names = [s.strip() for s in args.servers.split(",") if s.strip()]
    if unknown := [s for s in names if s not in SERVERS]:
        parser.error(f"--servers: unknown {', '.join(unknown)} (choose from {', '.join(SERVERS)})")
    for name in names:
        binary = name.removesuffix("-norec")
        if not (kit.BIN / binary).exists():
            sys.exit(
                f"{kit.BIN / binary} is missing: run `make setup` (uvicorn and granian come with the [fast] extra)"
            )
    kit.WORK.mkdir(exist_ok=True)
    pin, pinning = kit.Pinning.choose(not args.no_pin)
    pinning = pinning.replace("ab and the timing client", "the client")  # (load.py's wording; no ab here)
    lines = [
        f"{args.streams} paced streams on one server process, {args.chunks} chunks {args.interval_ms} ms apart,"
        f" started over {args.ramp_s:g} s; {os.cpu_count()} CPUs; pinning: {pinning}",
    ]
    for round_number in range(1, args.rounds + 1):
        for name in names:
            kit.log(f"round {round_number}: {name} ...")
            result = measure(name, args, pin)
            described = describe(result, args)
            kit.log("\n".join(described))
            lines += [f"round {round_number}, " + described[0], *described[1:]]
    lines.append("command: " + " ".join([".venv/bin/python", "tests/benchmarks/pacing.py", *sys.argv[1:]]))
    print("\n".join(["", *lines]))


if __name__ == "__main__":
    main()
