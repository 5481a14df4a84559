"""``manage.py import_cassette NAME_OR_FILE [--id SCENARIO_ID]``: a VCR cassette (a file, or a stored cassette by
name) converted into an editable scenario and upserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs_app.ci.conversion import ConversionError, convert
from runs_app.models import Cassette


class Command(BaseCommand):
    help = (
        "Convert a VCR cassette into a scenario: its streams into turns (text, tool calls, thinking with signatures), "
        "its errors into failure settings. NAME_OR_FILE is a cassette file, else the name of a stored cassette."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", metavar="NAME_OR_FILE", help="a cassette file, or a stored cassette's name")
        parser.add_argument("--id", dest="scenario_id", default=None, help="the scenario's id (default: from the name)")

    def handle(self, *args: Any, **options: Any) -> None:
        source: str = options["source"]
        path = Path(source)
        if path.exists():
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise CommandError(f"Cannot read {source}: {exc.strerror or exc}") from None
            name = path.name
        else:
            row = Cassette.objects.newest(source)
            if row is None:
                raise CommandError(f"No file {source!r} and no stored cassette named {source!r}.")
            raw, name = bytes(row.content), row.name
        try:
            _, outcome, scenario = convert(raw, name, options["scenario_id"])
        except ConversionError as exc:
            raise CommandError(str(exc)) from None
        turns = len(scenario.turns)
        self.stdout.write(
            self.style.SUCCESS(f"{outcome.capitalize()} scenario {scenario.id} ({turns} turn{'s' * (turns != 1)})")
        )
