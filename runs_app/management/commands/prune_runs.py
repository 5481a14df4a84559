"""``manage.py prune_runs --older-than 30d``: delete runs started before then, and everything they hold, in small
batches (:func:`runs_app.retention.prune`), so that the tables are never locked for long and a server recording
meanwhile is not held up. Pinned runs and runs still running are kept; runs idle past ``HARNESS_RUN_IDLE_S`` are
closed as abandoned first (``runs_app/closing.py``), and go when they are old enough."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from harnessweb.text import plural
from runs_app.closing import close_idle
from runs_app.models import Run
from runs_app.retention import prunable, prune

_AGE = re.compile(r"^(\d+)([dhm])$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_age(value: str) -> dt.timedelta:
    """``30d``, ``12h`` or ``90m`` as a duration."""
    match = _AGE.match(value.strip())
    if match is None or int(match.group(1)) == 0:
        raise CommandError(f"--older-than: {value!r} is not an age like 30d, 12h or 90m")
    return dt.timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


class Command(BaseCommand):
    help = "Delete runs older than an age (and their events, verdicts, logs), in batches; pinned runs are kept."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", required=True, help="An age: 30d, 12h or 90m (by the run's start).")
        parser.add_argument("--batch", type=int, default=200, help="Runs deleted per transaction (default 200).")
        parser.add_argument("--dry-run", action="store_true", help="Say how many runs would go, and delete none.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch: must be at least 1")
        close_idle()
        cutoff = timezone.now() - parse_age(options["older_than"])
        kept = Run.objects.filter(started_at__lt=cutoff, pinned=True).count()
        if options["dry_run"]:
            count = prunable(cutoff).count()
            self.stdout.write(f"Would delete {plural(count, 'run')} started before {cutoff:%Y-%m-%d %H:%M} UTC "
                              f"({plural(kept, 'pinned run')} kept).")  # fmt: skip
            return
        runs = events = 0
        for deleted_runs, deleted_events in prune(cutoff, options["batch"]):
            runs, events = runs + deleted_runs, events + deleted_events
        self.stdout.write(
            f"Deleted {plural(runs, 'run')} and {plural(events, 'event')} started before "
            f"{cutoff:%Y-%m-%d %H:%M} UTC ({plural(kept, 'pinned run')} kept)."
        )
