"""Access: nothing is open to anonymous visitors; make run's one-time link logs the local admin in once."""

import re

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command


@pytest.mark.django_db
def test_it_creates_the_admin_on_first_use_and_prints_a_link_that_works_once(client, capsys):
    call_command("login_link", "--base-url", "http://127.0.0.1:8000")
    out = capsys.readouterr().out
    assert "Created the local admin account 'admin'" in out
    assert User.objects.get(username="admin").is_superuser
    path = re.search(r"http://127\.0\.0\.1:8000(/login/link/\S+/)", out).group(1)
    assert client.get(path).status_code == 302
    assert client.get("/coverage/").status_code == 200  # logged in from here on
    client.logout()
    again = client.get(path)
    assert again.status_code == 400 and b"has been used" in again.content


@pytest.mark.django_db
def test_it_reuses_the_existing_admin_on_later_starts(capsys):
    User.objects.create_superuser("boss", "", "pw-for-tests-123")
    call_command("login_link")
    out = capsys.readouterr().out
    assert "Created" not in out and "Log in as 'boss'" in out
    assert User.objects.count() == 1


@pytest.mark.django_db
def test_it_refuses_a_forged_link(client):
    assert client.get("/login/link/MQ/not-a-token/").status_code == 400


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/coverage/", "/admin/coverage/"])
def test_it_sends_anonymous_visitors_to_log_in(client, path):
    response = client.get(path)
    assert response.status_code == 302 and "login" in response["Location"]


@pytest.mark.django_db
def test_it_logs_in_with_the_form_and_protects_it_with_csrf():
    from django.test import Client

    User.objects.create_user("alice", "", "correct-horse-battery")
    strict = Client(enforce_csrf_checks=True)
    assert strict.post("/login/", {"username": "alice", "password": "correct-horse-battery"}).status_code == 403
    page = strict.get("/login/")
    token = page.cookies["csrftoken"].value
    response = strict.post(
        "/login/", {"username": "alice", "password": "correct-horse-battery", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302


@pytest.mark.django_db
def test_it_serves_the_vendored_htmx_without_internet(client):
    response = client.get("/static/vendor/htmx-2.0.11.min.js")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"htmx" in body
