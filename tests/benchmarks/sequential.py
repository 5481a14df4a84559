"""Sequential benchmark: one call after another, as a test suite makes them, against our app, aimock and the floors.

    .venv/bin/python tests/benchmarks/sequential.py [-n 1000] [--rounds 3] [--warmup 100] [--pin] [--new-conversations]
        [--servers daphne,daphne-norec,uvicorn,uvicorn-norec,aimock,bare-daphne,bare-uvicorn]

Every server is started first, on a free port (pacing off; each of our servers on a copy of a fresh SQLite database
of its own), and stays up while the others are measured. Then, for each client (the official openai SDK: one client,
keep-alive, ``chat.completions.create`` plain and with ``stream=True``; raw httpx, one client, the same two
requests) and each server, a warm-up, then ``--rounds`` rounds of ``-n`` sequential calls, each call timed from the
call to the end of its response. A round is interleaved: 50 calls on one server, then 50 on the next, and so on, so
that whatever else this machine does during a round weighs on every server alike (one server after another, a quiet
minute for one and a busy one for the next moved the ratios more than recording costs). The round with the lowest
median counts, its median and p90 are reported. Every call is the same first request of one conversation (a new run
each time, since its turn was served); with ``--new-conversations`` each call has a system prompt of its own, so
each starts a conversation, as each test's first call does (our app then looks for the conversation's run). The
server start-up, aimock, the database and the pinning are servers.py's. See README.md next to this file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import sqlite3
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent))
import servers as kit  # noqa: E402  (the sibling module: server start-up, aimock, database, pinning)
from servers import HOST, PATH, ROOT, SCENARIO_ID, WORK, Pinning, Server, log, percentile  # noqa: E402

# Our own database and captures, so that a load.py run elsewhere keeps its own.
kit.DB = WORK / "sequential.sqlite3"
CAPTURES = {"plain": WORK / "capture-plain.json", "stream": WORK / "capture-stream.json"}
MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": SCENARIO_ID}]
BODIES = {
    "plain": {"model": MODEL, "messages": MESSAGES},
    "stream": {"model": MODEL, "stream": True, "messages": MESSAGES},
}
DEFAULT_SERVERS = ("daphne", "daphne-norec", "uvicorn", "uvicorn-norec", "aimock", "bare-daphne", "bare-uvicorn")
OURS = ("daphne", "uvicorn")
CASES = ("sdk plain", "sdk stream", "httpx plain", "httpx stream")
# The targets: recording on at or below aimock's median, and within this of the same server with it off.
TARGET_VS_NOREC = 1.2
SLICE = 50  # calls made on one server before the next server's turn (measure)


@dataclass
class Case:
    """One client and request kind against one server: every round's per-call times (ms)."""

    rounds: list[list[float]] = field(default_factory=list)

    @property
    def best(self) -> list[float]:
        return min(self.rounds, key=statistics.median) if self.rounds else []

    @property
    def median(self) -> float | None:
        return statistics.median(self.best) if self.rounds else None

    @property
    def p90(self) -> float | None:
        return percentile(self.best, 90) if self.rounds else None


@dataclass
class Outcome:
    name: str
    cpus: str = "all"
    load_before: str = ""
    cases: dict[str, Case] = field(default_factory=dict)
    calls: int = 0  # answers received whole (each must be recorded by our app with recording on)
    recorded: int | None = None
    before: dict[str, int] = field(default_factory=dict)  # our database's counts before the first call
    error: str = ""


def callers(port: int, new: bool = False) -> tuple[dict[str, Callable[[], None]], Callable[[], None]]:
    """The four calls against a server on ``port`` (each reads its whole answer and checks it), and a closer;
    with ``new``, each call starts a conversation of its own (a system prompt of its own), as each test's first
    call does."""
    sdk = openai.OpenAI(base_url=f"http://{HOST}:{port}/v1", api_key="sk-bench", max_retries=0)
    raw = httpx.Client(base_url=f"http://{HOST}:{port}", timeout=30)
    numbered = itertools.count()
    prefix = uuid.uuid4().hex  # (new to the database too, run after run)

    def messages() -> list[dict[str, str]]:
        if not new:
            return MESSAGES
        return [{"role": "system", "content": f"conversation {next(numbered)} of {prefix}"}, *MESSAGES]

    def sdk_plain() -> None:
        answer = sdk.chat.completions.create(model=MODEL, messages=messages())
        if not answer.choices[0].message.content:
            raise RuntimeError(f"empty answer: {answer}")

    def sdk_stream() -> None:
        text = "".join(
            c.choices[0].delta.content or ""
            for c in sdk.chat.completions.create(model=MODEL, messages=messages(), stream=True)
            if c.choices
        )
        if not text:
            raise RuntimeError("empty streamed answer")

    def httpx_plain() -> None:
        response = raw.post(PATH, json={**BODIES["plain"], "messages": messages()})
        if response.status_code != 200 or b"Short benchmark" not in response.content:
            raise RuntimeError(f"{response.status_code}: {response.content[:300]!r}")

    def httpx_stream() -> None:
        with raw.stream("POST", PATH, json={**BODIES["stream"], "messages": messages()}) as response:
            body = b"".join(response.iter_bytes())
        if response.status_code != 200 or b"[DONE]" not in body:
            raise RuntimeError(f"{response.status_code}: {body[:300]!r}")

    def close() -> None:
        sdk.close()
        raw.close()

    calls = {"sdk plain": sdk_plain, "sdk stream": sdk_stream, "httpx plain": httpx_plain, "httpx stream": httpx_stream}
    return calls, close


def timed(call: Callable[[], None], n: int) -> list[float]:
    """``n`` calls one after another; each one's time in ms."""
    times = []
    clock = time.perf_counter_ns
    for _ in range(n):
        started = clock()
        call()
        times.append((clock() - started) / 1e6)
    return times


@dataclass
class Serving:
    """One server up for the whole run, the cases it answers, and its clients' calls."""

    outcome: Outcome
    server: Server
    cases: list[str]
    calls: dict[str, Callable[[], None]] = field(default_factory=dict)
    close: Callable[[], None] = lambda: None


def uptime() -> str:
    return "load " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def database_of(name: str) -> Path:
    """Each of our servers records into a copy of the prepared database of its own (two servers writing one SQLite
    file would wait for each other's locks)."""
    return WORK / f"sequential-{name}.sqlite3"


def start(name: str, pin: Pinning, prepared: Path, new: bool = False) -> tuple[Outcome, list[Serving]]:
    """The server(s) of one row started: a bare app answers one captured response, so it has one server for the
    plain calls and another for the streamed ones."""
    outcome = Outcome(name, load_before=uptime())
    if name == "aimock" and (why := kit.install_aimock()):
        outcome.error = f"aimock not run: {why}"
        return outcome, []
    cpus = pin.for_server(name)
    outcome.cpus = kit.cpus_label(cpus, pin.everything)
    if name.removesuffix("-norec") in OURS:
        kit.DB = database_of(name)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{kit.DB}{suffix}").unlink(missing_ok=True)
        with sqlite3.connect(prepared) as source, sqlite3.connect(kit.DB) as copy:
            source.backup(copy)
        outcome.before = kit.recorded()
    runs = [(kind, [c for c in CASES if c.endswith(kind)]) for kind in ("plain", "stream")]
    if not name.startswith("bare-"):
        runs = [("", list(CASES))]
    servings = []
    for kind, cases in runs:
        server: Server = kit.make_server(name, kit.free_port(), cpus, CAPTURES.get(kind, kit.CAPTURE))
        server.name = f"seq-{name}{'-' + kind if kind else ''}"
        log(f"== {server.name} (CPU {outcome.cpus}): {shlex.join(server.command)}")
        serving = Serving(outcome, server, cases)
        servings.append(serving)
        try:
            server.start()
            serving.calls, serving.close = callers(server.port, new)
        except Exception as exc:
            outcome.error = f"{type(exc).__name__}: {exc}"
            break
    return outcome, servings


def measure(servings: list[Serving], args: argparse.Namespace) -> None:
    """Every case on every server, interleaved: each round of ``-n`` calls is made in slices of ``SLICE`` calls, one
    slice per server in turn, so that what else the machine does meanwhile falls on every server alike."""
    for case in CASES:
        ready = [s for s in servings if case in s.cases and s.calls and not s.outcome.error]
        for serving in list(ready):
            try:
                timed(serving.calls[case], args.warmup)
                serving.outcome.calls += args.warmup
            except Exception as exc:  # report it and go on with the others
                serving.outcome.error = f"{case}: {type(exc).__name__}: {exc}"
                ready.remove(serving)
        for _ in range(args.rounds):
            times: dict[int, list[float]] = {id(s): [] for s in ready}
            for start in range(0, args.n, SLICE):
                for serving in list(ready):
                    try:
                        times[id(serving)] += timed(serving.calls[case], min(SLICE, args.n - start))
                    except Exception as exc:
                        serving.outcome.error = f"{case}: {type(exc).__name__}: {exc}"
                        ready.remove(serving)
            for serving in ready:
                serving.outcome.cases.setdefault(case, Case()).rounds.append(times[id(serving)])
                serving.outcome.calls += args.n
        for serving in ready:
            result = serving.outcome.cases[case]
            log(f"   {serving.server.name:<22} {case:<13} median {result.median:6.2f} ms, p90 {result.p90:6.2f} ms")


def stop(servings: list[Serving]) -> None:
    for serving in servings:
        serving.close()
        serving.server.stop()
        if found := serving.server.log_problems():
            log_path = serving.server.log_path.relative_to(ROOT)
            serving.outcome.error = serving.outcome.error or f"{len(found)} error lines in {log_path}: {found[0]}"


def count_recorded(outcome: Outcome) -> None:
    """How many of the answers our server recorded (all with recording on, none with it off)."""
    kit.DB = database_of(outcome.name)
    expected = 0 if outcome.name.endswith("-norec") else outcome.calls
    try:
        after = kit.delta(kit.wait_recorded(outcome.before, expected, None), outcome.before)
        outcome.recorded = after.get("response_200", 0)
    except Exception as exc:
        outcome.error = outcome.error or f"counting: {type(exc).__name__}: {exc}"


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def report(outcomes: list[Outcome], args: argparse.Namespace, pinning: str) -> str:
    header = f"{'server':<14} " + " ".join(f"{c + ' p50/p90':>22}" for c in CASES) + f" {'on CPU':>7}  load before"
    lines = [header, "-" * len(header)]
    for o in outcomes:
        cells = [f"{fmt(o.cases[c].median) + ' / ' + fmt(o.cases[c].p90) if c in o.cases else '-':>22}" for c in CASES]
        lines.append(f"{o.name:<14} " + " ".join(cells) + f" {o.cpus:>7}  {o.load_before}")
    lines += [
        "",
        f"ms per call, median / p90 of the best of {args.rounds} round(s) of {args.n} sequential calls (after "
        f"{args.warmup} warm-up calls), each from the call to the end of its answer. Pinning: {pinning}.",
        "Each call a conversation of its own (--new-conversations)."
        if args.new_conversations
        else "Every call the same conversation's first request (--new-conversations: each a conversation of its own).",
    ]
    by_name = {o.name: o for o in outcomes}
    recorded = [o for o in outcomes if o.recorded is not None]
    if recorded:
        lines += ["", "Recorded (responses with status 200 in the database, for the calls answered):"]
        for o in recorded:
            wanted = 0 if o.name.endswith("-norec") else o.calls
            ok = o.recorded == 0 if wanted == 0 else o.recorded >= wanted
            lines.append(f"  {o.name}: {o.recorded} for {o.calls} calls -> {'ok' if ok else 'NOT AS EXPECTED'}")
    lines += ["", "Targets (medians; recording on):"]
    aimock = by_name.get("aimock")
    for name in OURS:
        o, off, bare = by_name.get(name), by_name.get(f"{name}-norec"), by_name.get(f"bare-{name}")
        if o is None:
            continue
        for case in ("sdk plain", "sdk stream"):
            mine = o.cases[case].median if case in o.cases else None
            peer = aimock.cases[case].median if aimock and case in aimock.cases else None
            base = off.cases[case].median if off and case in off.cases else None
            floor = bare.cases[case].median if bare and case in bare.cases else None
            parts = []
            if mine and peer:
                parts.append(f"{mine / peer:.2f} x aimock ({'met' if mine <= peer else 'NOT MET'})")
            if floor and peer:  # what the server alone leaves the app for the same bytes, to be level with aimock
                left = "none: out of reach on this server" if floor >= peer else f"{(peer - floor) * 1000:.0f} µs"
                if base:
                    left += f"; it takes {(base - floor) * 1000:.0f} µs with recording off"
                parts.append(f"the bare app {floor / peer:.2f} x aimock (left for the app: {left})")
            if mine and base:
                met = mine <= TARGET_VS_NOREC * base
                parts.append(f"{mine / base:.2f} x recording off ({'met' if met else 'NOT MET'})")
            lines.append(f"  {name} {case}: " + (", ".join(parts) or "not measured"))
    if problems := [(o.name, o.error) for o in outcomes if o.error]:
        lines += ["", "Problems:"] + [f"  {name}: {error}" for name, error in problems]
    lines += ["", "Command:", "  " + shlex.join([".venv/bin/python", "tests/benchmarks/sequential.py", *sys.argv[1:]])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=1000, help="sequential calls per round, client and request (1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per case; the lowest median counts (3)")
    parser.add_argument("--warmup", type=int, default=100, help="calls before measuring each case (100)")
    parser.add_argument("--servers", default=",".join(DEFAULT_SERVERS), help="comma-separated (default: all)")
    parser.add_argument("--new-conversations", action="store_true", help="each call a conversation of its own")
    parser.add_argument("--pin", action="store_true", help="this client on one core, each server on another")
    args = parser.parse_args()
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    if unknown := set(servers) - set(DEFAULT_SERVERS):
        parser.error(f"unknown servers: {', '.join(sorted(unknown))}")
    if args.rounds < 1 or args.n < 1:
        parser.error("-n and --rounds must be at least 1")
    WORK.mkdir(exist_ok=True)
    log(f"{os.cpu_count()} CPUs, {uptime()} before starting")
    pin, pinning = Pinning.choose(args.pin)
    pinning = pinning.replace("(--no-pin)", "(--pin to pin)").replace("ab and the timing client", "this client")
    log(f"pinning: {pinning}")
    kit.prepare_database()
    prepared = kit.DB
    for kind, body in BODIES.items():
        raw = json.dumps(body).encode()
        kit.capture_response(raw, CAPTURES[kind], streamed=kind == "stream")
    outcomes, servings = [], []
    try:
        for name in servers:
            outcome, started = start(name, pin, prepared, args.new_conversations)
            outcomes.append(outcome)
            servings += started
        log(f"\nAll servers up ({uptime()}); each round interleaves them, {SLICE} calls at a time")
        measure(servings, args)
    finally:
        stop(servings)
    for outcome in outcomes:
        if outcome.name.removesuffix("-norec") in OURS and not outcome.error:
            count_recorded(outcome)
        if outcome.error:
            log(f"   {outcome.name}: {outcome.error}")
    text = report(outcomes, args, pinning)
    (WORK / "sequential-report.txt").write_text(text + "\n")
    log("\n" + text)


if __name__ == "__main__":
    main()
