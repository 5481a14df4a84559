"""``manage.py judge_runs --criteria-file F [--scenario S] [--since T] [--limit N] [--fail-on-fail]``: judge stored
runs from CI, store the verdicts (the review queue shows the FAIL ones) and, with ``--fail-on-fail``, exit 1 when a
verdict is FAIL. A judge error is reported but never counted as FAIL."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from runs_app.judging.judge import configured, judge_run
from runs_app.judging.verdicts import criteria_lines
from runs_app.models import Run
from runs_app.review import rules as review


def parse_since(value: str) -> dt.datetime:
    """An ISO 8601 date or date and time; without an offset it is read as UTC."""
    try:
        moment = parse_datetime(value)
        if moment is None:
            day = parse_date(value)
            moment = dt.datetime.combine(day, dt.time()) if day is not None else None
    except ValueError:
        moment = None
    if moment is None:
        raise CommandError(f"--since must be an ISO 8601 date or time (e.g. 2026-11-24T10:00:00Z), not {value!r}.")
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, dt.UTC)


class Command(BaseCommand):
    help = "Judge stored runs against plain-English criteria (one per line in a file) with the configured judge."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--criteria-file", required=True, help="A text file: one criterion per line.")
        parser.add_argument("--scenario", default="", help="Only runs of this scenario.")
        parser.add_argument("--since", default="", help="Only runs started at or after this ISO 8601 date or time.")
        parser.add_argument("--limit", type=int, default=None, help="At most this many runs, the newest first.")
        parser.add_argument("--fail-on-fail", action="store_true", help="Exit 1 when any verdict is FAIL.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["criteria_file"])
        try:
            criteria = criteria_lines(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CommandError(f"Criteria file {str(path)!r} does not exist.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read criteria file {str(path)!r}: {exc}") from None
        if not criteria:
            raise CommandError(f"Criteria file {str(path)!r} has no criteria: write one per line.")
        config = configured()
        if config is None:
            raise CommandError("HARNESS_JUDGE_BASE_URL is not set: point it at an OpenAI-compatible endpoint.")
        since = parse_since(options["since"]) if options["since"] else None
        limit = options["limit"]
        if limit is not None and limit < 1:
            raise CommandError(f"--limit must be at least 1, not {limit}.")

        runs = Run.objects.filtered(scenario=options["scenario"], since=since).order_by("-started_at", "-id")
        runs = list(runs[:limit] if limit else runs)
        if not runs:
            raise CommandError("No runs match: nothing to judge (check --scenario and --since).")

        counts = {review.PASS: 0, review.FAIL: 0, review.ERROR: 0}
        for run in runs:
            verdict = judge_run(run, criteria, config)
            effective = review.effective_overall(verdict)
            counts[effective] += 1
            label = run.scenario_id or run.name or run.mode
            if effective == review.ERROR:
                self.stderr.write(f"JUDGE ERROR  {label}  {run.pk}  {verdict.judge_error}")
                continue
            passed, total = review.criteria_counts(verdict)
            self.stdout.write(f"{effective:<11}  {label}  {run.pk}  {passed}/{total} criteria  {verdict.summary}")
        self.stdout.write(
            f"{len(runs)} run{'s' if len(runs) != 1 else ''} judged: {counts[review.PASS]} PASS, "
            f"{counts[review.FAIL]} FAIL, {counts[review.ERROR]} judge error{'s' if counts[review.ERROR] != 1 else ''}"
            " (a judge error is the judge's failure, not the run's)."
        )
        if options["fail_on_fail"] and counts[review.FAIL]:
            raise CommandError(f"{counts[review.FAIL]} verdict(s) FAIL (--fail-on-fail).", returncode=1)
