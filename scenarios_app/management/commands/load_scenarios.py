"""``manage.py load_scenarios PATH...``: upsert scenarios from JSON/YAML files or folders, all or nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from harnessweb.engine.loader import ScenarioFileError, read_scenario_files
from scenarios_app.models import Scenario


class Command(BaseCommand):
    help = (
        "Load scenarios from JSON or YAML files or folders (searched recursively) and upsert them by id. "
        "Every file is read and validated first; then all are written in one transaction, or none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario files (.json, .yaml, .yml) or folders")
        parser.add_argument(
            "--dry-run", action="store_true", help="validate and report what would change, but write nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            loaded = read_scenario_files(options["paths"])
        except ScenarioFileError as exc:
            raise CommandError(str(exc)) from exc

        counts = {"created": 0, "updated": 0, "unchanged": 0}
        lines = []
        with transaction.atomic():
            for path, scenario in loaded:
                _, outcome = Scenario.upsert(scenario)
                counts[outcome] += 1
                lines.append(f"{outcome:<9}  {scenario.id}  ({path})")
            if options["dry_run"]:
                transaction.set_rollback(True)

        # Printed only once the transaction is over, so the output never reports writes that were rolled back.
        for line in lines:
            self.stdout.write(line)
        files = len({path for path, _ in loaded})
        summary = (
            f"{len(loaded)} scenario{'s' if len(loaded) != 1 else ''} from {files} file{'s' if files != 1 else ''}: "
            f"{counts['created']} created, {counts['updated']} updated, {counts['unchanged']} unchanged"
        )
        if options["dry_run"]:
            self.stdout.write(f"Dry run, nothing written. {summary}")
        else:
            self.stdout.write(self.style.SUCCESS(f"Loaded {summary}"))
