"""``manage.py login_link``: a one-time log-in link for the local admin, created on first use, and how to get the
next one or set a password (a link works once)."""

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.management.base import BaseCommand, CommandParser
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode


class Command(BaseCommand):
    help = "Print a one-time log-in link for the local admin account (created, with a random password, if none)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        user = users.objects.filter(is_superuser=True, is_active=True).order_by("pk").first()
        if user is None:
            # Nobody knows this password: the way in is the link, then a password set in the admin if wanted.
            user = users.objects.create_superuser(options["username"], "", secrets.token_urlsafe(24))
            self.stdout.write(f"Created the local admin account '{user.get_username()}'.")
        uid = urlsafe_base64_encode(force_bytes(user.pk))
        path = reverse("login_link", args=[uid, default_token_generator.make_token(user)])
        self.stdout.write(f"Log in as '{user.get_username()}' (works once): {options['base_url'].rstrip('/')}{path}")
        self.stdout.write(
            "A new link: .venv/bin/python manage.py login_link; a password: "
            f".venv/bin/python manage.py changepassword {user.get_username()}"
        )
