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
import json
import os
import re
import resource
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from servers import (  # noqa: E402
    ALL_SERVERS,
    BODY,
    CLUSTERS,
    DEFAULT_SERVERS,
    HOST,
    OUR_SERVERS,
    OUTSIDE_LOAD_PCT,
    PATH,
    PG_URL,
    REQUEST,
    ROOT,
    WORK,
    Pinning,
    Server,
    capture_response,
    check_tools,
    cpus_label,
    delta,
    fetch,
    free_port,
    install_aimock,
    log,
    machine_busy_seconds,
    make_server,
    parse_response,
    prepare_cluster,
    prepare_database,
    recorded,
    recording_problems,
    request_bytes,
    wait_quiet,
    wait_recorded,
)

# -- load ---------------------------------------------------------------------------------------------------------


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


from load_report import AbResult, LatencyResult, report  # noqa: E402


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
