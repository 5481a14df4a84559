"""``manage.py create_api_token NAME [--scope read|write|judge]``: prints the token once (judge ⊃ write ⊃ read)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from runs_app import tokens
from runs_app.models import ApiToken


class Command(BaseCommand):
    help = "Create an API token for the REST API; it is printed once and stored hashed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="What the token is for, e.g. 'ci-main'.")
        parser.add_argument("--scope", choices=[s.value for s in ApiToken.Scope], default=ApiToken.Scope.READ)

    def handle(self, *args: Any, **options: Any) -> None:
        row, token = tokens.issue(options["name"], options["scope"])
        self.stderr.write(f"Created {options['scope']} token '{row.name}'. It is shown once; store it now:")
        self.stdout.write(token)
