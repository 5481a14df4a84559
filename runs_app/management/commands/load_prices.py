"""``manage.py load_prices FILE``: the price table's rows from a JSON file (an array of ``{model,
input_usd_per_mtok, output_usd_per_mtok, cached_input_usd_per_mtok?, priced_on, source?}``; the shipped example is
``harnessweb/engine/prices.json``), upserted by model name (ignoring case): loading the same file again changes
nothing, and rows the file does not name are kept. Every row is checked first; a bad one is a CommandError naming
the line and the field, and nothing is written."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from harnessweb.engine.pricing import SHIPPED, Price, PriceFileError, parse_prices
from runs_app.models import ModelPrice


def _fields(price: Price) -> dict[str, Any]:
    return {
        "model": price.model,
        "input_usd_per_mtok": price.input,
        "output_usd_per_mtok": price.output,
        "cached_input_usd_per_mtok": price.cached_input,
        "priced_on": price.priced_on,
        "source": price.source,
    }


def upsert(prices: list[Price], *, missing_only: bool = False) -> dict[str, int]:
    """Write the rows in one transaction; how many were created, updated and left unchanged. ``missing_only``:
    create the rows of models not priced yet, never change a stored one (``make run``: an edit made in the admin
    survives a restart)."""
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    with transaction.atomic():
        for price in prices:
            fields = _fields(price)
            row = ModelPrice.objects.select_for_update().filter(model__iexact=price.model).first()
            if row is None:
                ModelPrice.objects.create(**fields)
                counts["created"] += 1
            elif missing_only or all(getattr(row, name) == value for name, value in fields.items()):
                counts["unchanged"] += 1
            else:
                for name, value in fields.items():
                    setattr(row, name, value)
                row.save()
                counts["updated"] += 1
    return counts


class Command(BaseCommand):
    help = "Load model prices (USD per million tokens) from a JSON file, upserted by model; all or nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default=str(SHIPPED), help=f"A JSON price file (default: {SHIPPED}).")
        parser.add_argument(
            "--missing-only", action="store_true", help="Add the models not priced yet; change no stored price."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot be read ({exc})") from None
        try:
            prices = parse_prices(text, path)
        except PriceFileError as exc:
            raise CommandError(str(exc)) from None
        counts = upsert(prices, missing_only=options["missing_only"])
        self.stdout.write(
            f"{path}: {counts['created']} created, {counts['updated']} updated, {counts['unchanged']} unchanged"
        )
