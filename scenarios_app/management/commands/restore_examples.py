"""``manage.py restore_examples ID... | --all``: shipped example scenarios written back over stored ones, each as a new
version (the history keeps what was stored), for the examples ``load_scenarios`` (``make run``) kept as edited."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from harnessweb.engine.loader import ScenarioFileError, read_scenario_files
from scenarios_app.loading import EXAMPLES, store
from scenarios_app.models import ScenarioVersion


class Command(BaseCommand):
    help = (
        f"Restore example scenarios from {EXAMPLES.name}/ as shipped: each one named (or every one, --all) is "
        "written over the stored scenario as a new version; earlier versions stay in its history."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ids", nargs="*", metavar="ID", help="the example scenarios to restore, by id")
        parser.add_argument("--all", action="store_true", help="restore every example")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            examples = read_scenario_files([EXAMPLES])
        except ScenarioFileError as exc:
            raise CommandError(str(exc)) from exc
        known = [scenario.id for _, scenario in examples]
        wanted = options["ids"]
        if options["all"] == bool(wanted):
            raise CommandError(f"Name the examples to restore, or --all (not both). Examples: {', '.join(known)}")
        unknown = [scenario_id for scenario_id in wanted if scenario_id not in known]
        if unknown:
            raise CommandError(f"No example named {', '.join(unknown)}. Examples: {', '.join(known)}")
        chosen = [(path, scenario) for path, scenario in examples if options["all"] or scenario.id in wanted]

        with transaction.atomic():
            results = store(chosen, replace=True, note="restored the example {path}")
            newest = ScenarioVersion.objects.order_by("-number").values_list("number", flat=True)
            versions = {result.scenario_id: newest.filter(scenario_id=result.scenario_id).first() for result in results}
        for result in results:
            done = {"created": "created", "updated": "restored", "unchanged": "unchanged"}[result.outcome]
            shown = f"{done:<10} {result.scenario_id}"
            if result.outcome == "updated":
                shown += f" (now v{versions[result.scenario_id]}; the earlier versions are in its history)"
            elif result.outcome == "unchanged":
                shown += " (already as shipped)"
            self.stdout.write(shown)
        restored = sum(result.outcome != "unchanged" for result in results)
        self.stdout.write(self.style.SUCCESS(f"Restored {restored} of {len(results)} example(s)"))
