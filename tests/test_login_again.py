"""Logging in again: a used or forged link's page, the log-in form and the command all say how to get a new link
and how to set a password."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from tests.conftest import text


@pytest.mark.django_db
def test_it_says_how_to_get_a_new_link_or_set_a_password_when_a_link_is_used(capsys: pytest.CaptureFixture) -> None:
    call_command("login_link", "--base-url", "http://127.0.0.1:8000")
    path = re.search(r"http://127\.0\.0\.1:8000(/login/link/\S+/)", capsys.readouterr().out).group(1)
    client = Client()
    assert client.get(path).status_code == 302
    client.logout()

    used = client.get(path)
    body = text(used)
    assert used.status_code == 400
    assert "has been used or is not valid" in body
    assert ".venv/bin/python manage.py login_link --base-url http://testserver" in body
    assert ".venv/bin/python manage.py changepassword admin" in body
    assert "Restart" not in body
    assert '<a href="/login/">log in</a>' in body


@pytest.mark.django_db
def test_it_says_the_same_on_the_log_in_form() -> None:
    body = text(Client().get("/login/"))
    assert ".venv/bin/python manage.py login_link" in body and "manage.py changepassword admin" in body


@pytest.mark.django_db
def test_it_prints_how_to_log_in_again_with_the_link(capsys: pytest.CaptureFixture) -> None:
    User.objects.create_superuser("boss", "", "pw-for-tests-123")
    call_command("login_link")
    out = capsys.readouterr().out
    assert "A new link: .venv/bin/python manage.py login_link; a password: " in out
    assert out.rstrip().endswith(".venv/bin/python manage.py changepassword boss")


@pytest.mark.django_db
def test_it_logs_in_with_a_password_set_by_changepassword(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the page advises works: the account make run created, given a password by the command, logs in.
    call_command("login_link", stdout=StringIO())
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "a-password-chosen-now")
    out = StringIO()
    call_command("changepassword", "admin", stdout=out)
    assert "Password changed successfully for user 'admin'" in out.getvalue()
    response = Client().post("/login/", {"username": "admin", "password": "a-password-chosen-now"})
    assert response.status_code == 302 and response["Location"] == "/"
