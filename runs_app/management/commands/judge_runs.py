"""``manage.py judge_runs --criteria-file F [--scenario S] [--test T] [--fingerprint F] [--conversation K] [--run ID]
[--since T] [--limit N] [--merge] [--fail-on-fail]``: judge stored runs from CI, store the verdicts (the review queue
shows the FAIL ones) and, with ``--fail-on-fail``, exit 1 when a verdict is FAIL. A judge error and a skipped judge
(no key, a placeholder key) are reported but never counted as FAIL.

``--merge`` judges the runs of one conversation identity (``--test``, ``--fingerprint``, ``--conversation`` or
``--run``, as ``transcript_from_runs`` takes them) as one transcript, in time order; the verdict is stored on the
newest of them."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from harnessweb.judging.verdicts import criteria_lines
from runs_app.judging.judge import configured, judge, judge_run, runs_of, store_verdict, transcript_from_runs
from runs_app.models import Run
from runs_app.review import rules as review

IDENTITY_OPTIONS = {"test": "test", "fingerprint": "fingerprint", "conversation": "conversation", "run_id": "run"}


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
        parser.add_argument("--test", default="", help="Only runs whose test name contains this (a test id).")
        parser.add_argument(
            "--fingerprint", default="", help="Only runs that presented the API key of this fingerprint."
        )
        parser.add_argument("--conversation", default="", help="Only runs of this conversation key.")
        parser.add_argument("--run", default="", help="Only this run (its id, as X-Harness-Run names it).")
        parser.add_argument(
            "--merge",
            action="store_true",
            help="Judge the runs of one identity (--test, --fingerprint, --conversation or --run) as one transcript.",
        )
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

        identity = {
            name: options[option].strip() for name, option in IDENTITY_OPTIONS.items() if options[option].strip()
        }
        if options["merge"]:
            self._merged(identity, criteria, config, since, options)
            return
        runs = Run.objects.filtered(
            scenario=options["scenario"],
            since=since,
            test=identity.get("test", ""),
            fingerprint=identity.get("fingerprint", ""),
            conversation=identity.get("conversation", ""),
        )
        if "run_id" in identity:
            runs = runs.filter(pk=self._run_id(identity["run_id"]))
        runs = runs.order_by("-started_at", "-id")
        runs = list(runs[:limit] if limit else runs)
        if not runs:
            raise CommandError(
                "No runs match: nothing to judge (check --scenario, --test, --fingerprint, --conversation, --run and "
                "--since)."
            )

        counts = {review.PASS: 0, review.FAIL: 0, review.ERROR: 0, review.SKIPPED: 0}
        for run in runs:
            counts[self._report(run, judge_run(run, criteria, config))] += 1
        self._finish(len(runs), counts, options)

    @staticmethod
    def _run_id(value: str) -> uuid.UUID:
        try:
            return uuid.UUID(value)
        except ValueError:
            raise CommandError(f"--run must be a run id (a UUID), not {value!r}.") from None

    def _merged(
        self, identity: dict[str, str], criteria: list[str], config: Any, since: Any, options: dict[str, Any]
    ) -> None:
        if len(identity) != 1 or options["scenario"]:
            raise CommandError(
                "--merge judges one identity: give exactly one of --test, --fingerprint, --conversation, --run."
            )
        if "run_id" in identity:
            self._run_id(identity["run_id"])
        runs = list(runs_of(**identity, since=since))
        if not runs:
            raise CommandError("No runs match: nothing to judge (check the identity and --since).")
        data = replace(transcript_from_runs(**identity, since=since), criteria=criteria)
        newest = runs[-1]
        verdict = store_verdict(newest, judge(data, config))
        self.stdout.write(f"{len(runs)} run{'s' if len(runs) != 1 else ''} merged, the verdict stored on {newest.pk}.")
        counts = {review.PASS: 0, review.FAIL: 0, review.ERROR: 0, review.SKIPPED: 0}
        counts[self._report(newest, verdict)] += 1
        self._finish(1, counts, options)

    def _report(self, run: Run, verdict: Any) -> str:
        effective = review.effective_overall(verdict)
        label = run.scenario_id or run.name or run.mode
        if effective == review.ERROR:
            self.stderr.write(f"JUDGE ERROR  {label}  {run.pk}  {verdict.judge_error}")
        elif effective == review.SKIPPED:
            self.stdout.write(f"SKIPPED      {label}  {run.pk}  {verdict.skipped_reason}")
        else:
            passed, total = review.criteria_counts(verdict)
            self.stdout.write(f"{effective:<11}  {label}  {run.pk}  {passed}/{total} criteria  {verdict.summary}")
        return effective

    def _finish(self, judged: int, counts: dict[str, int], options: dict[str, Any]) -> None:
        errors = counts[review.ERROR]
        self.stdout.write(
            f"{judged} run{'s' if judged != 1 else ''} judged: {counts[review.PASS]} PASS, "
            f"{counts[review.FAIL]} FAIL, {errors} judge error{'s' if errors != 1 else ''}, "
            f"{counts[review.SKIPPED]} skipped (a judge error or a skipped judge says nothing about the run)."
        )
        if options["fail_on_fail"] and counts[review.FAIL]:
            raise CommandError(f"{counts[review.FAIL]} verdict(s) FAIL (--fail-on-fail).", returncode=1)
