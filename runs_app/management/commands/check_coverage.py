"""``manage.py check_coverage``: the coverage gate for CI (seed 003's enforcement). Exits 1 when a provider owes an
obligation it has not met, naming each gap and what would close it; 0 when every obligation is met or waived."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs_app.coverage import gate
from runs_app.coverage.report import coverage_report
from runs_app.models import Provider


class Command(BaseCommand):
    help = "Fail when a provider's test obligations are not met (tiers check by check, cassettes, error paths)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--provider", help="Check one provider (its registered name).")
        parser.add_argument("--format", choices=("text", "json", "junit"), default="text")

    def handle(self, *args: Any, **options: Any) -> None:
        provider = options["provider"]
        if provider is not None and not Provider.objects.filter(name=provider).exists():
            known = ", ".join(Provider.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"--provider: no provider named {provider!r} (registered: {known})")
        report = gate.narrowed(coverage_report(), provider)
        found = gate.gaps(report)
        if options["format"] == "json":
            self.stdout.write(json.dumps(gate.as_json(report, found), indent=2))
        elif options["format"] == "junit":
            self.stdout.write(gate.as_junit(report, found), ending="")
        else:
            self.stdout.write(gate.as_text(report, found), ending="")
        if found:
            raise SystemExit(1)
