"""What the recorder's writer costs a batch: the batches a server at concurrency 16 commits (16 new runs, each with
its request, match, validation and response events, as the load benchmark's request records them), written one
after another on one thread, without the server.

    .venv/bin/python tests/benchmarks/writer_cost.py [--batches 300] [--runs 16] [--path django|loop]
    valgrind --tool=callgrind --instr-atstart=no .venv/bin/python tests/benchmarks/writer_cost.py --callgrind

``--path django`` (the default) is ``writes.write``, what the flusher's thread runs (on SQLite and PostgreSQL);
``--path loop`` is ``loop_sqlite.write``, the commit on the event loop's own connection (SQLite only). It prints the
CPU time per batch and per event (best of 3 rounds), on PostgreSQL its backend's too (when it runs on this
machine). ``--callgrind`` (under valgrind, as above) switches instrumentation on for the measured batches only
(``callgrind_control``) and makes one round: divide the instructions callgrind reports by the events printed. The
database is a fresh SQLite file
(``.work/writer.sqlite3``), or PostgreSQL when ``DATABASE_URL`` is set (its runs and events emptied first).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
WORK = BENCH / ".work"
DB = WORK / "writer.sqlite3"
sys.path.insert(0, str(ROOT))

REQUEST_DATA = {
    "method": "POST",
    "path": "/v1/chat/completions",
    "headers": {"host": "127.0.0.1", "content-type": "application/json", "content-length": "103"},
    "body": {"model": "gpt-4o-mini", "stream": True, "messages": [{"role": "user", "content": "bench-short-text"}]},
    "key": None,
}
MATCH_DATA = {"mode": "scenario", "scenario": "bench-short-text", "turn": 1, "notes": ["scenario chosen"]}
RESPONSE_DATA = {
    "text": "Short benchmark answer, streamed in two chunks.",
    "reasoning": "",
    "tool_calls": [],
    "finish_reason": "stop",
    "usage": {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14},
    "chunks": 2,
    "ttfb_ms": 0.5,
    "duration_ms": 0.6,
    "frame_ms": [0, 0, 0, 0],
    "status": 200,
    "stream": True,
    "model": "gpt-4o-mini",
}


def setup() -> None:
    os.environ.update(DJANGO_SETTINGS_MODULE="harnessweb.settings", HARNESS_PACING="off")
    if not os.environ.get("DATABASE_URL"):
        WORK.mkdir(exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{DB}{suffix}").unlink(missing_ok=True)
        os.environ["SQLITE_PATH"] = str(DB)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from runs_app.models import Run

    Run.objects.all().delete()


def batch(runs: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """One batch: ``runs`` new runs (their rows as ``RunState.row()`` gives them) and four events each."""
    from runs_app.endpoint.recorder import RunState
    from runs_app.endpoint.writes import PendingEvent

    rows, events = [], []
    now = datetime.now(UTC)
    for _ in range(runs):
        state = RunState(id=uuid.uuid4(), protocol="openai", conversation_key=uuid.uuid4().hex, started_at=now)
        state.scenario_id, state.turns_served, state.status = "bench-short-text", {1}, "passed"
        state.finished_at, state.closed = now, True
        rows.append(state.row())
        for seq, (kind, data) in enumerate(
            (("request", REQUEST_DATA), ("match", MATCH_DATA), ("validation", {"ok": True, "problem": ""})), 1
        ):
            events.append(PendingEvent(state.id, seq, now, kind, 1, data))
        events.append(PendingEvent(state.id, 4, now, "response", 1, RESPONSE_DATA))
    return rows, events


def backend_cpu() -> tuple[int, float] | None:
    """PostgreSQL's backend process (this connection's) and its CPU seconds so far, when the server runs on this
    machine; None for SQLite, or a server elsewhere."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # (utime, stime)


def rounds(write: Any, batches: int, runs: int, count: int, callgrind: bool, backend: list[float]) -> list[float]:
    """Each round's CPU seconds for ``batches`` batches (built before the clock starts); PostgreSQL's backend's
    CPU seconds of each round are added to ``backend`` when it can be read."""
    spent = []
    for _ in range(count):
        prepared = [batch(runs) for _ in range(batches)]
        if callgrind:
            subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True)
        server, started = backend_cpu(), time.process_time()
        for rows, events in prepared:
            write(rows, events)
        spent.append(time.process_time() - started)
        after = backend_cpu()
        if server is not None and after is not None and after[0] == server[0]:  # (not when Django reconnected)
            backend.append(after[1] - server[1])
        if callgrind:
            subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True, capture_output=True)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--runs", type=int, default=16, help="runs a batch (each with 4 events)")
    parser.add_argument("--path", choices=("django", "loop"), default="django")
    parser.add_argument("--callgrind", action="store_true", help="under valgrind: instrument the measured batches")
    args = parser.parse_args()
    setup()
    from runs_app.endpoint import loop_sqlite, writes

    def on_the_loop(rows: list[dict[str, Any]], events: list[Any]) -> None:
        while True:  # (Busy while the checkpoint every 500 commits holds the lock: the server's thread would wait)
            try:
                loop_sqlite.write(rows, events)
                return
            except loop_sqlite.Busy:
                time.sleep(0.001)

    write = writes.write if args.path == "django" else on_the_loop
    backend: list[float] = []
    rounds(write, 50, args.runs, 1, False, [])  # warm-up
    spent = rounds(write, args.batches, args.runs, 1 if args.callgrind else 3, args.callgrind, backend)
    events = args.batches * args.runs * 4
    best = min(spent)
    from django.db import connection

    print(f"{connection.vendor}, path {args.path}: {args.batches} batches of {args.runs} runs, {args.runs * 4} events")
    per_batch, per_event = best / args.batches * 1e6, best / events * 1e6
    print(f"CPU per batch {per_batch:.0f} µs, per event {per_event:.1f} µs (best of {len(spent)})")
    if backend:
        print(f"PostgreSQL's backend: CPU per event {min(backend) / events * 1e6:.1f} µs (best of {len(backend)})")
    print(f"events measured: {events}")


if __name__ == "__main__":
    main()
