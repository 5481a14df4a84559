"""The load benchmark's report: the table, the ratios to the bare apps and aimock, the targets."""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from servers import (
    BARE,
    CLUSTERS,
    OUR_SERVERS,
    ROOT,
    percentile,
    recording_problems,
)

if TYPE_CHECKING:
    from load import Outcome

# The target: what recording costs the same server (uvicorn) under load, at most; the ratios to aimock and to the bare
# app are reported beside it.
TARGET_RECORDING = 0.20


# -- results ----------------------------------------------------------------------------------------------------


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


@dataclass
class LatencyResult:
    ttfb_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    wall: float = 0.0


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

    lines.append("Target:")
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
