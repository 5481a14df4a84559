"""What reading costs takes: the overview's period figure and one runs-list page of costs, on a database of many
recorded runs (each a few turns of request and response events, as the endpoint records them).

    .venv/bin/python tests/benchmarks/cost_queries.py [--runs 2000] [--turns 5]

It uses a fresh SQLite database in ``tests/benchmarks/.work/costs.sqlite3`` and prints the best of three rounds
after a warm-up, for each query: once for responses recorded with their model (as the endpoint records them now),
once for responses recorded without (as before: the model is read from the request before each).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent.parent
WORK = BENCH / ".work"
DB = WORK / "costs.sqlite3"
sys.path.insert(0, str(ROOT))


def setup() -> None:
    WORK.mkdir(exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{DB}{suffix}").unlink(missing_ok=True)
    os.environ.update(SQLITE_PATH=str(DB), DJANGO_SETTINGS_MODULE="harnessweb.settings")
    os.environ.pop("DATABASE_URL", None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("load_prices", verbosity=0)


def fill(runs: int, turns: int, with_model: bool) -> None:
    from runs_app.models import Run, RunEvent

    now = datetime.now(UTC)
    rows, events = [], []
    for n in range(runs):
        run = Run(id=uuid.uuid4(), protocol="anthropic", status="passed", started_at=now - timedelta(seconds=n))
        rows.append(run)
        model = "claude-sonnet-4-5" if n % 2 else "claude-opus-4-1-20250805"
        for turn in range(1, turns + 1):
            body = {"model": model, "messages": [{"role": "user", "content": "hello " * 20}], "max_tokens": 100}
            usage = {"input_tokens": 120 * turn, "output_tokens": 40, "cache_read_input_tokens": 10}
            request = {"method": "POST", "path": "/v1/messages", "body": body, "protocol": "anthropic"}
            response = {"text": "hi " * 30, "usage": usage, "status": 200, **({"model": model} if with_model else {})}
            for kind, data in (("request", request), ("response", response)):
                events.append(RunEvent(run=run, seq=len(events) + 1, timestamp=now, kind=kind, turn=turn, data=data))
    Run.objects.bulk_create(rows, batch_size=500)
    RunEvent.objects.bulk_create(events, batch_size=1000)


def best(label: str, fn: object) -> None:
    fn()  # warm-up
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    print(f"{label:<32} {min(times) * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    setup()
    from runs_app.models import Run
    from runs_app.pricing.costs import period_cost, run_costs

    print(f"{args.runs} runs of {args.turns} turns ({args.runs * args.turns} responses), SQLite")
    for with_model in (True, False):
        Run.objects.all().delete()
        fill(args.runs, args.turns, with_model)
        since = datetime.now(UTC) - timedelta(days=1)
        page = list(Run.objects.order_by("-started_at").values_list("id", flat=True)[:50])
        shape = "with" if with_model else "without"
        best(f"overview, {shape} model", lambda: period_cost(since))  # noqa: B023
        best(f"runs list (50 runs), {shape} model", lambda: run_costs(page))  # noqa: B023


if __name__ == "__main__":
    main()
