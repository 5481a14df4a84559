"""``manage.py collect_trace_logs RUN DIR [--turn N]``: what ``--harness-trace-dir`` does for pytest, for any other
runner. The files under DIR (at any depth, in path order: time order for seed 001's ``{date}/{time}_{id}.log``)
become the run's trace logs, turns N, N + 1, … (N is 1 unless given), each with the outcome its footer says. The
upload's checks apply (a log holding a secret is refused, naming the file and line); collecting a folder again
stores nothing twice, and any bad file stops it having written nothing (``runs_app/ci/trace_logs.py``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs_app.ci.trace_logs import TraceFolderError, collect_folder
from runs_app.models import Run


def find_run(value: str) -> Run:
    """A run by its id, or by the external id its CI job gave it."""
    try:
        run = Run.objects.filter(id=uuid.UUID(value)).first()
    except ValueError:
        run = None
    run = run or Run.objects.filter(external_id=value).first()
    if run is None:
        raise CommandError(f"RUN {value!r}: no run has this id or external id.")
    return run


class Command(BaseCommand):
    help = "Store the trace log files under DIR (in path order) as a run's trace logs, one per turn."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", metavar="RUN", help="The run's id (or its external id).")
        parser.add_argument("folder", metavar="DIR", help="The folder the application wrote its trace logs to.")
        parser.add_argument("--turn", type=int, default=1, help="The first file's turn (default 1).")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["turn"] < 1:
            raise CommandError(f"--turn must be 1 or more, not {options['turn']}.")
        run = find_run(options["run"])
        try:
            done = collect_folder(run, Path(options["folder"]), first=options["turn"])
        except TraceFolderError as exc:
            raise CommandError(f"{exc}. Nothing was stored.") from None
        self.stdout.write(
            f"Run {run.id}: {done.stored} trace log(s) stored, {done.refreshed} refreshed, {done.unchanged} unchanged."
        )
