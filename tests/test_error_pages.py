"""The dashboard's own 404, 403 and 500 pages (its navigation, a way back, never a traceback), JSON in ninja's shape
for everything under /api/, and the admin speaking as the product."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from runs_app.coverage import api as coverage_api
from tests.conftest import make_user, text

NAV = ('<a href="/scenarios/"', '<a href="/runs/"', '<a href="/coverage/"')


def test_it_runs_these_tests_with_debug_off() -> None:
    # Django shows its own technical pages with DEBUG on: the pages below are the ones users get.
    assert django_settings.DEBUG is False


@pytest.fixture
def user_client(db: None) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(make_user("viewer"))
    return client


@pytest.fixture
def failing_urls(settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.error_urls"


@pytest.mark.parametrize(
    ("path", "back"),
    [
        ("/scenarios/no/such/page/", '<a href="/scenarios/">Back to Scenarios</a>'),
        ("/runs/nowhere/at/all/", '<a href="/runs/">Back to Runs</a>'),
        ("/no-such-section/", '<a href="/">Back to Overview</a>'),
    ],
)
def test_it_answers_an_unknown_page_with_the_dashboard_s_404_and_a_way_back(
    user_client: Client, path: str, back: str
) -> None:
    response = user_client.get(path)
    body = text(response)
    assert response.status_code == 404
    assert "<h1>Page not found</h1>" in body and f"<code>{path}</code>" in body
    assert back in body
    assert all(link in body for link in NAV)
    assert "Not Found</title>" not in body  # not Django's bare page
    assert 'rel="icon" href="/static/favicon-1.svg"' in body


def test_it_says_what_the_view_said_on_a_404_escaped(user_client: Client) -> None:
    body = text(user_client.get(f"/runs/{uuid.uuid4()}/"))
    assert "No such run (add ?live=1 to wait for it)" in body and "Back to Runs" in body
    escaped = text(user_client.get("/scenarios/<script>x</script>/edit/zz/"))
    assert "<script>x" not in escaped and "&lt;script&gt;" in escaped


def test_it_offers_an_anonymous_visitor_the_log_in_on_a_404(db: None) -> None:
    body = text(Client().get("/scenarios/gone/deeper/"))
    assert '<a href="/login/?next=/scenarios/gone/deeper/">Log in</a>' in body
    assert '<a href="/runs/"' not in body  # the navigation is for those logged in


def test_it_answers_a_refusal_with_the_dashboard_s_403_saying_why(user_client: Client) -> None:
    response = user_client.get("/runs/judge/")
    body = text(response)
    assert response.status_code == 403
    assert "<h1>Not allowed</h1>" in body
    assert "Judging runs is for staff: it calls the configured judge model." in body
    assert "Logged in as viewer" in body and all(link in body for link in NAV)


def test_it_answers_a_failure_with_the_dashboard_s_500_and_no_traceback(
    user_client: Client, failing_urls: None
) -> None:
    response = user_client.get("/broken/")
    body = text(response)
    assert response.status_code == 500
    assert "Something went wrong on the server" in body and all(link in body for link in NAV)
    assert "secret detail" not in body and "Traceback" not in body and "RuntimeError" not in body


def test_it_draws_the_500_page_without_the_request_when_the_request_cannot_be_used(
    user_client: Client, failing_urls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_render(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the database is down")

    monkeypatch.setattr("harnessweb.views.render", broken_render)
    response = user_client.get("/broken/")
    assert response.status_code == 500
    assert "Something went wrong on the server" in text(response) and "database" not in text(response)


def test_it_answers_a_form_without_its_csrf_token_with_the_403_page(db: None) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("poster"))
    response = client.post("/logout/")
    assert response.status_code == 403
    assert "<h1>Not allowed</h1>" in text(response) and "reload the page and send it again" in text(response)


# -- /api/ ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "detail"),
    [
        ("get", "/api/nope", "Not Found: Nothing is served at GET /api/nope. The API is described at /api/docs."),
        ("get", "/api/run", "Not Found: Nothing is served at GET /api/run. Did you mean GET /api/runs?"),
        ("post", "/api/run", "Not Found: Nothing is served at POST /api/run. Did you mean POST /api/runs?"),
        (
            "get",
            "/api/scenario/support-refund-match",
            "Not Found: Nothing is served at GET /api/scenario/support-refund-match. "
            "Did you mean GET /api/scenarios/{scenario_id}?",
        ),
        ("get", "/api/", "Not Found: Nothing is served at GET /api/. The API is described at /api/docs."),
    ],
)
def test_it_answers_an_unknown_api_path_with_json_naming_the_nearest_route(
    db: None, method: str, path: str, detail: str
) -> None:
    response = getattr(Client(), method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": detail}


def test_it_answers_a_method_an_api_route_does_not_take_with_json_and_allow(db: None) -> None:
    response = Client().delete("/api/scenarios")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Method Not Allowed: use GET"}
    assert response["Allow"] == "GET"
    both = Client().put("/api/runs")
    assert both.json()["detail"].startswith("Method Not Allowed: use ") and set(both["Allow"].split(", ")) == {
        "GET",
        "POST",
    }


def test_it_answers_an_api_route_that_fails_with_json_and_no_traceback(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import make_token

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a secret detail of the failure")

    monkeypatch.setattr(coverage_api, "coverage_report", broken)
    client = Client(raise_request_exception=False)
    response = client.get("/api/coverage", HTTP_AUTHORIZATION=f"Bearer {make_token('read')}")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Internal Server Error: the server's log has the details."}


def test_it_answers_json_for_a_refusal_and_a_failure_under_api(db: None, failing_urls: None) -> None:
    client = Client(raise_request_exception=False)
    refused = client.get("/api/refused")
    assert refused.status_code == 403 and refused.json() == {"detail": "Only the release manager may do this."}
    broken = client.get("/api/broken")
    assert broken.status_code == 500 and "secret" not in broken.json()["detail"]


def test_it_keeps_the_api_s_own_errors_as_they_were(db: None) -> None:
    unauthenticated = Client().get("/api/runs")
    assert unauthenticated.status_code == 401 and "Bearer" in unauthenticated.json()["detail"]


# -- the admin and the icon -------------------------------------------------------------------------------------------


def test_it_titles_the_admin_as_the_product_and_leads_its_index_to_the_queue_and_the_grid(staff_client: Client) -> None:
    body = text(staff_client.get("/admin/"))
    assert "Django administration" not in body and "Django site admin" not in body
    assert "<title>Administration | Scenario harness</title>" in body
    assert '<a href="/admin/">Scenario harness</a>' in body
    assert '<a href="/admin/runs_app/judgeverdict/queue/">Review queue</a>' in body
    assert '<a href="/admin/runs_app/provider/coverage/">Coverage grid</a>' in body
    assert 'rel="icon" href="/static/favicon-1.svg"' in body
    assert "Review queue" in text(staff_client.get("/admin/runs_app/judgeverdict/queue/"))
    assert staff_client.get("/admin/runs_app/provider/coverage/").status_code == 200


def test_it_serves_the_icon_and_points_favicon_ico_at_it(db: None) -> None:
    icon = Client().get("/static/favicon-1.svg")
    body = b"".join(icon.streaming_content) if icon.streaming else icon.content
    assert icon.status_code == 200 and icon["Content-Type"].startswith("image/svg+xml")
    assert body.startswith(b"<svg") and b"<script" not in body
    redirect = Client().get("/favicon.ico")
    assert redirect.status_code == 302 and redirect["Location"] == "/static/favicon-1.svg"
