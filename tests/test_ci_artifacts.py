"""``POST /api/runs/{id}/artifacts``: a CI job's generated pages and texts, one or a list, idempotent, limited in
size (413), and their content served only to logged-in users under a Content-Security-Policy that runs nothing."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client

from runs_app.models import Artifact
from tests.conftest import change_url, make_ci_run, make_client, make_token, make_user

pytestmark = pytest.mark.django_db

PAGE = "<!doctype html><html><body><h1>Grocery list</h1><ul><li>eggs</li><li>milk</li></ul></body></html>"


def http(token: str | None = None) -> Client:
    """Django's client as a vitest suite's fetch: JSON bodies, a bearer token in the header."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {token or make_token()}")


def post_json(client: Client, path: str, body: object) -> object:
    return client.post(path, data=json.dumps(body), content_type="application/json")


def logged_in() -> Client:
    client = Client()
    client.force_login(make_user())
    return client


def test_it_stores_a_generated_page_under_its_url() -> None:
    run = make_ci_run()
    response = post_json(http(), f"/api/runs/{run.id}/artifacts", {"url": "https://x.test/u/abc", "content": PAGE})

    assert response.status_code == 201
    body = response.json()
    artifact = Artifact.objects.get(run=run)
    assert (body["name"], body["kind"], body["size"]) == ("https://x.test/u/abc", "html", len(PAGE))
    assert body["raw_url"] == f"/artifacts/{artifact.pk}/raw"
    assert artifact.content == PAGE


def test_a_list_answers_207_with_a_result_per_artifact_and_kinds_told_or_given() -> None:
    run = make_ci_run()
    items = [
        {"name": "notes.txt", "content": "<b>not markup</b>"},
        {"name": "page", "content": "<p>a fragment</p>", "contentType": "text/html; charset=utf-8"},
        {"name": "", "content": "no name"},
    ]
    response = make_client().post(f"/runs/{run.id}/artifacts", json=items)

    assert response.status_code == 207
    results = response.json()["results"]
    assert [r["accepted"] for r in results] == [True, True, False]
    assert results[2]["errors"][0]["field"] == "name"
    assert dict(run.artifacts.values_list("name", "kind")) == {"notes.txt": "text", "page": "html"}


def test_a_retry_keeps_one_artifact_and_new_content_replaces_it() -> None:
    run = make_ci_run()
    client = http()
    post_json(client, f"/api/runs/{run.id}/artifacts", {"name": "/u/abc", "content": PAGE})
    again = post_json(client, f"/api/runs/{run.id}/artifacts", {"name": "/u/abc", "content": PAGE})
    assert again.json()["duplicate"] is True
    newer = post_json(client, f"/api/runs/{run.id}/artifacts", {"name": "/u/abc", "content": PAGE + "<p>hummus</p>"})

    assert newer.status_code == 201 and newer.json()["duplicate"] is False
    assert run.artifacts.count() == 1
    assert run.artifacts.get().content.endswith("<p>hummus</p>")


def test_an_artifact_over_the_limit_is_a_413_and_nothing_is_stored(settings) -> None:
    assert settings.HARNESS_ARTIFACT_MAX_BYTES == 2 * 1024 * 1024
    run = make_ci_run()
    big = "x" * (2 * 1024 * 1024 + 1)
    response = post_json(http(), f"/api/runs/{run.id}/artifacts", {"name": "big.txt", "content": big})
    assert response.status_code == 413
    assert "'big.txt' is 2097153 bytes" in response.json()["detail"]

    settings.HARNESS_ARTIFACT_MAX_BYTES = 100
    batch = [{"name": "small", "content": "fits"}, {"name": "large", "content": "é" * 60}]  # 120 bytes in UTF-8
    response = post_json(http(), f"/api/runs/{run.id}/artifacts", batch)
    assert response.status_code == 413
    assert "HARNESS_ARTIFACT_MAX_BYTES" in response.json()["detail"]
    assert not run.artifacts.exists()


def test_an_artifact_holding_a_key_is_refused_naming_the_line() -> None:
    run = make_ci_run()
    content = "line one\nkey: sk-ant-api03-" + "x" * 40
    response = post_json(http(), f"/api/runs/{run.id}/artifacts", {"name": "log.txt", "content": content})

    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "body.content" and "line 2" in error["message"]
    assert "sk-ant-api03-xxxx" not in response.content.decode()


def test_it_answers_404_for_an_unknown_run_and_401_or_403_without_a_writing_token() -> None:
    body = {"name": "a", "content": "b"}
    assert post_json(http(), f"/api/runs/{uuid.uuid4()}/artifacts", body).status_code == 404
    assert post_json(Client(), f"/api/runs/{make_ci_run().id}/artifacts", body).status_code == 401
    assert post_json(http(make_token("read")), f"/api/runs/{make_ci_run().id}/artifacts", body).status_code == 403
    assert not Artifact.objects.exists()


def test_the_list_gives_metadata_without_content() -> None:
    run = make_ci_run()
    items = [{"name": "b.html", "content": PAGE}, {"name": "a", "content": "t"}]
    make_client().post(f"/runs/{run.id}/artifacts", json=items)

    listed = make_client("read").get(f"/runs/{run.id}/artifacts").json()

    assert [(a["name"], a["kind"]) for a in listed] == [("a", "text"), ("b.html", "html")]
    assert "content" not in listed[0]


def test_the_run_page_shows_text_escaped_and_html_only_in_a_sandboxed_frame() -> None:
    run = make_ci_run()
    hostile = "<script>alert(document.cookie)</script>"
    make_client().post(
        f"/runs/{run.id}/artifacts",
        json=[{"name": "/u/abc", "content": PAGE + hostile}, {"name": "notes.txt", "content": hostile}],
    )
    html = run.artifacts.get(kind="html")

    page = logged_in().get(f"/runs/{run.id}/").content.decode()

    assert 'id="run-artifacts"' in page
    assert "&lt;script&gt;alert(document.cookie)&lt;/script&gt;" in page  # the text artifact, escaped
    assert hostile not in page  # neither artifact's markup is in the dashboard's own page
    assert f'<iframe class="artifact-frame" src="/artifacts/{html.pk}/raw" sandbox=""' in page


def test_the_raw_content_is_isolated_and_for_logged_in_users_only() -> None:
    run = make_ci_run()
    make_client().post(f"/runs/{run.id}/artifacts", json={"name": "/u/abc", "content": PAGE})
    artifact = run.artifacts.get()

    anonymous = Client().get(f"/artifacts/{artifact.pk}/raw")
    browser = logged_in()
    response = browser.get(f"/artifacts/{artifact.pk}/raw")

    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert response.status_code == 200
    assert response.content.decode() == PAGE
    assert response["Content-Type"] == "text/html; charset=utf-8"
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "sandbox" in csp.split("; ") and "script-src" not in csp
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "SAMEORIGIN"  # the run page may frame it, no other site
    assert not response.cookies  # nothing set: the content needs no cookie
    assert browser.get("/artifacts/999999/raw").status_code == 404


def test_a_key_in_an_artifact_s_url_is_stored_redacted() -> None:
    run = make_ci_run()
    key = "AIza" + "Sy" + "b" * 33
    response = post_json(
        http(), f"/api/runs/{run.id}/artifacts", {"url": f"https://x.test/u/a?key={key}", "content": "ok"}
    )

    assert response.status_code == 201
    assert key not in run.artifacts.get().name and "[REDACTED" in run.artifacts.get().name


def test_the_run_admin_lists_messages_and_artifacts_without_their_markup(staff_client) -> None:
    run = make_ci_run()
    make_client().post(f"/runs/{run.id}/artifacts", json={"name": "/u/abc", "content": PAGE + "<script>x()</script>"})
    make_client().post(f"/runs/{run.id}/messages", json=[{"role": "user", "content": "make a list"}])

    page = staff_client.get(change_url(run)).content.decode()

    assert f'href="/artifacts/{run.artifacts.get().pk}/raw"' in page
    assert "make a list" in page
    assert "<script>x()</script>" not in page
