"""Managing stored scenarios through the Django test client: import and export, clone and delete, versions."""

from __future__ import annotations

import json

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from scenarios_app.models import Scenario, ScenarioVersion
from tests.conftest import make_scenario
from tests.scenario_views_helpers import HTMX, editor_post, make_tool_scenario, new_data
from tests.scenario_views_helpers import client_fixture as client_fixture  # a fixture: pytest finds it by name
from tests.scenario_views_helpers import user_fixture as user_fixture  # a fixture: pytest finds it by name

pytestmark = pytest.mark.django_db


# -- import and export --------------------------------------------------------------------------------------------


def test_it_imports_uploaded_files_and_pasted_text(client: Client, user: User) -> None:
    upload = SimpleUploadedFile("pair.json", json.dumps([new_data("one"), new_data("two")]).encode())

    response = client.post(
        "/scenarios/import/", {"files": [upload], "text": yaml.safe_dump(new_data("three")), "text_format": "yaml"}
    )

    assert response.status_code == 200
    assert [r["outcome"] for r in response.context["results"]] == ["created"] * 3
    assert set(Scenario.objects.values_list("id", flat=True)) == {"one", "two", "three"}
    version = ScenarioVersion.objects.get(scenario_id="one")
    assert (version.note, version.saved_by) == ("imported from pair.json", user)


@pytest.mark.backends
def test_it_imports_nothing_when_any_file_is_bad(client: Client) -> None:
    make_scenario("one", description="before")
    good = SimpleUploadedFile("good.yaml", yaml.safe_dump({**new_data("one"), "description": "after"}).encode())
    bad = SimpleUploadedFile("bad.json", json.dumps({"id": "two", "turns": [{"turn": 1}]}).encode())

    response = client.post("/scenarios/import/", {"files": [good, bad]})

    assert response.status_code == 422
    assert response.context["problems"] == ["bad.json: turns.0.response: Field required"]
    assert Scenario.objects.get(id="one").description == "before"
    assert not Scenario.objects.filter(id="two").exists()


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("broken.json", b'{"id": "x",,}', "broken.json: line 1, column 12: invalid JSON"),
        ("notes.txt", b"id: x", "notes.txt: not a scenario file"),
        ("latin.yaml", "id: café".encode("latin-1"), "latin.yaml: not UTF-8 text"),
        ("empty.yaml", b"  \n", "empty.yaml: the file is empty"),
    ],
)
def test_it_names_the_file_of_an_import_problem(client: Client, name: str, content: bytes, problem: str) -> None:
    response = client.post("/scenarios/import/", {"files": [SimpleUploadedFile(name, content)]})

    assert response.status_code == 422
    assert response.context["problems"][0].startswith(problem)
    assert not Scenario.objects.exists()


def test_it_refuses_an_id_imported_twice(client: Client) -> None:
    upload = SimpleUploadedFile("a.json", json.dumps(new_data("dup")).encode())

    response = client.post(
        "/scenarios/import/", {"files": [upload], "text": json.dumps(new_data("dup")), "text_format": "json"}
    )

    assert response.context["problems"] == ["pasted.json: scenario id 'dup' is also in a.json"]
    assert not Scenario.objects.exists()


def test_it_exports_json_and_yaml(client: Client) -> None:
    data = make_tool_scenario().canonical()

    as_json = client.get("/scenarios/weather/export/")
    as_yaml = client.get("/scenarios/weather/export/", {"format": "yaml"})

    assert as_json["Content-Disposition"] == 'attachment; filename="weather.json"'
    assert json.loads(as_json.content) == data
    assert as_yaml["Content-Disposition"] == 'attachment; filename="weather.yaml"'
    assert yaml.safe_load(as_yaml.content) == data


# -- clone and delete ---------------------------------------------------------------------------------------------


def test_it_clones_under_a_new_id(client: Client) -> None:
    data = make_tool_scenario().canonical()

    form = client.get("/scenarios/weather/clone/")
    response = client.post("/scenarios/weather/clone/", {"new_id": "weather-2"})

    assert form.context["new_id"] == "weather-copy"
    assert response["Location"] == "/scenarios/weather-2/"
    assert Scenario.objects.get(id="weather-2").data == {**data, "id": "weather-2"}
    assert ScenarioVersion.objects.get(scenario_id="weather-2").note == "cloned from weather"


@pytest.mark.parametrize(
    ("new_id", "message"), [("bad id", "String should match pattern"), ("taken", "already exists")]
)
def test_it_refuses_a_clone_id_that_is_invalid_or_taken(client: Client, new_id: str, message: str) -> None:
    make_tool_scenario()
    make_scenario("taken")

    response = client.post("/scenarios/weather/clone/", {"new_id": new_id})

    assert response.status_code == 422
    assert message in response.context["errors"][0]
    assert Scenario.objects.count() == 2


def test_it_deletes_only_on_post(client: Client) -> None:
    make_tool_scenario()

    confirm = client.get("/scenarios/weather/delete/")
    assert confirm.status_code == 200
    assert Scenario.objects.filter(id="weather").exists()

    response = client.post("/scenarios/weather/delete/")
    assert response["Location"] == "/scenarios/"
    assert not Scenario.objects.filter(id="weather").exists()
    assert not ScenarioVersion.objects.filter(scenario_id="weather").exists()


def test_it_deletes_a_row_from_the_list_with_htmx(client: Client) -> None:
    make_scenario("gone")

    response = client.post("/scenarios/gone/delete/", **HTMX)

    assert (response.status_code, response.content) == (200, b"")
    assert not Scenario.objects.exists()
    assert client.put("/scenarios/gone/delete/").status_code == 405


def test_it_reaches_a_scenario_whose_id_is_a_page_name(client: Client) -> None:
    make_scenario("new")

    listed = client.get("/scenarios/")
    opened = client.get("/scenarios/new/edit/")

    assert listed.context["rows"][0]["url"] == "/scenarios/new/edit/"
    assert opened.context["row"].id == "new"


# -- versions -----------------------------------------------------------------------------------------------------


@pytest.mark.backends
def test_it_creates_versions_only_when_the_data_changes(client: Client) -> None:
    data = make_tool_scenario().canonical()
    assert ScenarioVersion.objects.filter(scenario_id="weather").count() == 1

    client.post("/scenarios/editor/save/", editor_post(data, "weather"))
    assert ScenarioVersion.objects.filter(scenario_id="weather").count() == 1

    client.post("/scenarios/editor/save/", editor_post({**data, "description": "v2"}, "weather"))
    make_tool_scenario(description="v2")  # the same data through upsert: unchanged, no version
    numbers = list(ScenarioVersion.objects.filter(scenario_id="weather").values_list("number", "data__description"))
    assert numbers == [(2, "v2"), (1, "")]


@pytest.mark.backends
def test_it_catches_up_on_a_change_written_without_a_version() -> None:
    make_scenario("direct")
    row = Scenario.objects.get(id="direct")
    row.data = {**row.data, "description": "edited in the admin"}
    row.save()  # as the admin does: no upsert

    make_scenario("direct", description="then through upsert")

    history = list(ScenarioVersion.objects.filter(scenario_id="direct").values_list("number", "data__description"))
    assert history == [(3, "then through upsert"), (2, "edited in the admin"), (1, "")]


def test_it_diffs_a_version_against_the_current_data(client: Client) -> None:
    make_scenario("d", description="old <b>text</b>")
    make_scenario("d", description="new text")

    response = client.get("/scenarios/d/versions/1/diff/", **HTMX)

    content = response.content.decode()
    assert response.templates[0].name == "scenarios_app/diff.html"
    assert '<span class="d-del">-  &quot;description&quot;: &quot;old &lt;b&gt;text&lt;/b&gt;&quot;,</span>' in content
    assert '<span class="d-add">+  &quot;description&quot;: &quot;new text&quot;,</span>' in content
    assert '<span class="d-meta">--- version 1</span>' in content
    assert b"<html" in client.get("/scenarios/d/versions/1/diff/").content


def test_it_shows_the_history_on_the_scenario_page(client: Client) -> None:
    make_scenario("h")
    make_scenario("h", description="second")

    response = client.get("/scenarios/h/")

    assert [v.number for v in response.context["versions"]] == [2, 1]
    assert "/scenarios/h/versions/1/diff/" in response.content.decode()


@pytest.mark.backends
def test_it_restores_a_version_as_a_new_version(client: Client, user: User) -> None:
    make_scenario("r", description="first")
    make_scenario("r", description="second")

    assert client.get("/scenarios/r/versions/1/restore/").status_code == 405
    response = client.post("/scenarios/r/versions/1/restore/")

    assert response["Location"] == "/scenarios/r/"
    assert Scenario.objects.get(id="r").description == "first"
    newest = ScenarioVersion.objects.filter(scenario_id="r").first()
    assert (newest.number, newest.note, newest.saved_by) == (3, "restored version 1", user)


def test_it_restores_with_an_htmx_redirect(client: Client) -> None:
    make_scenario("r", description="first")
    make_scenario("r", description="second")

    response = client.post("/scenarios/r/versions/1/restore/", **HTMX)

    assert response["HX-Redirect"] == "/scenarios/r/"
