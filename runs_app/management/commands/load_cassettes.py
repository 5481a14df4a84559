"""``manage.py load_cassettes DIR [--replace]``: a folder of VCR cassettes (seed 003's ``tests/fixtures/vcr``) stored
on the server, each under its file name, for ``X-Harness-Cassette`` to name. Every ``*.json`` file is checked first as
an upload is (``runs_app/ci/cassette_uploads.py``); a bad one is a CommandError naming the file and its error, and
nothing is stored. A JSON file with no ``interactions`` (such as the fixtures' ``anthropic_manifest.json``) is no
cassette: left out, and said so. Loading the same folder again changes nothing; a file that differs from the
stored cassette of its name keeps the stored one, said so, unless ``--replace``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from ninja.errors import ValidationError

from runs_app.ci.cassette_uploads import Checked, check_file, describe_errors, load


def read_folder(folder: Path) -> tuple[list[Checked], list[str], list[str]]:
    """The folder's cassettes checked, the files left out (no ``interactions``: not a cassette) and the errors, one
    per bad file, each naming it."""
    checked, left_out, errors = [], [], []
    for path in sorted(folder.glob("*.json")):
        try:
            data = path.read_bytes()
        except OSError as exc:
            errors.append(f"{path.name}: cannot be read ({exc})")
            continue
        try:
            value = json.loads(data)
        except ValueError:
            value = None  # check_file names the line and column
        if isinstance(value, dict) and "interactions" not in value:
            left_out.append(path.name)
            continue
        try:
            checked.append(check_file(path.name, data))
        except ValidationError as exc:
            errors.append(f"{path.name}: {describe_errors(exc.errors)}")
    return checked, left_out, errors


class Command(BaseCommand):
    help = "Store a folder of VCR cassettes under their file names; all or nothing, never silently replacing one."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", help="A folder of cassettes, e.g. tests/fixtures/vcr")
        parser.add_argument(
            "--replace", action="store_true", help="Store a file that differs from the stored cassette of its name."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        folder = Path(options["folder"])
        if not folder.is_dir():
            raise CommandError(f"{folder} is not a folder")
        checked, left_out, errors = read_folder(folder)
        if errors:
            lines = "\n".join(f"  {error}" for error in errors)
            raise CommandError(f"Nothing stored: {len(errors)} file(s) in {folder} are not cassettes to keep:\n{lines}")
        if not checked:
            raise CommandError(f"No cassette in {folder} (its *.json files with interactions)")
        counts = {"stored": 0, "unchanged": 0, "kept": 0, "taken": 0}
        with transaction.atomic():
            for item in checked:
                outcome, line = load(item, replace=options["replace"])
                counts[outcome] += 1
                self.stdout.write(line if outcome in ("stored", "unchanged") else self.style.WARNING(line))
        for name in left_out:
            self.stdout.write(f"{name}: left out (no interactions: not a cassette)")
        summary = f"{counts['stored']} stored, {counts['unchanged']} unchanged"
        if counts["kept"]:
            summary += f", {counts['kept']} differing from the stored one and not stored (--replace stores them)"
        if counts["taken"]:
            summary += f", {counts['taken']} already stored under another name"
        self.stdout.write(self.style.SUCCESS(f"{summary}, from {folder}"))
