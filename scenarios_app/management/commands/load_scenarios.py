"""``manage.py load_scenarios PATH... [--replace] [--dry-run]``: scenarios from JSON/YAML files or folders stored by
id, all or nothing; a stored scenario that differs from its file is kept, said so, unless ``--replace``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from harnessweb.engine.loader import ScenarioFileError, read_scenario_files
from scenarios_app.loading import store


class Command(BaseCommand):
    help = (
        "Load scenarios from JSON or YAML files or folders (searched recursively) by id: missing ones are created, "
        "and a stored scenario that differs from its file (edited since it was loaded) is kept unless --replace. "
        "Every file is read and validated first; then all are written in one transaction, or none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario files (.json, .yaml, .yml) or folders")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="write a file's scenario over a stored one that differs (a new version; the history keeps the old)",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="validate and report what would change, but write nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            loaded = read_scenario_files(options["paths"])
        except ScenarioFileError as exc:
            raise CommandError(str(exc)) from exc

        with transaction.atomic():
            results = store(loaded, replace=options["replace"])
            if options["dry_run"]:
                transaction.set_rollback(True)

        # Printed only once the transaction is over, so the output never reports writes that were rolled back.
        counts = dict.fromkeys(("created", "updated", "unchanged", "kept"), 0)
        for result in results:
            counts[result.outcome] += 1
            self.stdout.write(self.style.WARNING(result.line()) if result.outcome == "kept" else result.line())
        files = len({path for path, _ in loaded})
        summary = (
            f"{len(loaded)} scenario{'s' if len(loaded) != 1 else ''} from {files} file{'s' if files != 1 else ''}: "
            f"{counts['created']} created, {counts['updated']} updated, {counts['unchanged']} unchanged"
        )
        if counts["kept"]:
            summary += f", {counts['kept']} kept as stored (they differ from their files)"
        if options["dry_run"]:
            self.stdout.write(f"Dry run, nothing written. {summary}")
        else:
            self.stdout.write(self.style.SUCCESS(f"Loaded {summary}"))
