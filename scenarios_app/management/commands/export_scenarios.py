"""``manage.py export_scenarios DIR``: write every stored scenario as ``DIR/<id>.json`` in canonical form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from pydantic import ValidationError

from harnessweb.engine.loader import dump_scenario
from harnessweb.engine.schemas import format_validation_error
from scenarios_app.models import Scenario


class Command(BaseCommand):
    help = (
        "Export every stored scenario to DIR/<id>.json (canonical snake_case JSON), creating DIR. "
        "The files load back with load_scenarios unchanged."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", metavar="DIR", help="folder to write into (created if missing)")

    def handle(self, *args: Any, **options: Any) -> None:
        directory = Path(options["directory"])
        if directory.exists() and not directory.is_dir():
            raise CommandError(f"{directory}: exists and is not a directory")

        # Everything is rendered before anything is written, so a bad row does not leave a half-written export.
        rendered: dict[str, str] = {}
        owners: dict[str, str] = {}
        for row in Scenario.objects.order_by("id"):
            try:
                scenario = row.to_schema()
            except ValidationError as exc:  # only reachable by editing the table by hand
                raise CommandError(format_validation_error(exc, source=f"stored scenario {row.id}: ")) from exc
            name = f"{scenario.id}.json"
            # Ids differing only in case would overwrite each other on case-insensitive filesystems.
            clash = owners.setdefault(name.lower(), scenario.id)
            if clash != scenario.id:
                raise CommandError(f"scenarios {clash!r} and {scenario.id!r} would share a file name")
            rendered[name] = dump_scenario(scenario)

        directory.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.items():
            (directory / name).write_text(text, encoding="utf-8")
        count = len(rendered)
        self.stdout.write(self.style.SUCCESS(f"Exported {count} scenario{'s' if count != 1 else ''} to {directory}"))
