"""Scenario authoring pages through the Django test client, as a logged-in user."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import Scenario as ScenarioSchema
from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire import openai as openai_wire
from scenarios_app.editor import fields, mapping, raw
from scenarios_app.editor.preview import try_body
from scenarios_app.models import Scenario, ScenarioVersion
from tests.conftest import make_run, make_scenario, make_user

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def user() -> User:
    return make_user("author")


@pytest.fixture
def client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def make_tool_scenario(scenario_id: str = "weather", **fields: Any) -> ScenarioSchema:
    """A stored two-turn scenario: a tool call with expectations, then a text answer after one rate limit."""
    return make_scenario(
        scenario_id,
        turns=[
            {
                "turn": 1,
                "expected_tools": ["get_weather"],
                "expected_temperature": 0.2,
                "response": {
                    "kind": "tool-call",
                    "assistant_text": "Checking.",
                    "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}],
                },
            },
            {
                "turn": 2,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 200,
                "response": {"kind": "text", "assistant_text": "Sunny.", "reasoning": [{"text": "It said sunny."}]},
            },
        ],
        **fields,
    )


def editor_post(data: dict[str, Any], original_id: str = "", **extra: str) -> dict[str, str]:
    """The editor form's post for scenario data (form tab)."""
    post = fields.flatten(mapping.scenario_to_state(data))
    post.update(original_id=original_id, mode="form", **extra)
    return post


def new_data(scenario_id: str = "fresh", text: str = "Hello.") -> dict[str, Any]:
    return ScenarioSchema.model_validate(
        {"id": scenario_id, "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": text}}]}
    ).canonical()


def error_slot(content: bytes, name: str) -> str:
    """The text of a field's error slot in a rendered page or partial."""
    match = re.search(rf'<div class="field-errors" id="err-{re.escape(name)}"[^>]*>(.*?)</div>', content.decode(), re.S)
    assert match, f"no error slot for {name}"
    return html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).strip()


# -- access -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/scenarios/"),
        ("get", "/scenarios/new/"),
        ("get", "/scenarios/demo/"),
        ("get", "/scenarios/demo/export/"),
        ("get", "/scenarios/import/"),
        ("post", "/scenarios/editor/validate/"),
        ("post", "/scenarios/editor/save/"),
        ("post", "/scenarios/editor/preview/"),
        ("post", "/scenarios/demo/delete/"),
        ("post", "/scenarios/demo/versions/1/restore/"),
    ],
)
def test_it_sends_anonymous_visitors_to_the_login_page(method: str, url: str) -> None:
    make_scenario("demo")

    response = getattr(Client(), method)(url)

    assert response.status_code == 302
    assert response["Location"].startswith(f"/login/?next={url}")
    assert Scenario.objects.filter(id="demo").exists()


def test_it_refuses_posts_without_a_csrf_token(user: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    make_scenario("demo")

    assert client.post("/scenarios/demo/delete/").status_code == 403
    assert client.post("/scenarios/editor/save/", editor_post(new_data())).status_code == 403
    assert Scenario.objects.filter(id="demo").exists()
    assert not Scenario.objects.filter(id="fresh").exists()


# -- the list -----------------------------------------------------------------------------------------------------


@pytest.mark.backends
def test_it_lists_scenarios_with_turns_last_status_and_pass_rate(client: Client) -> None:
    make_tool_scenario("weather", tags=["tools"])
    make_scenario("plain")
    now = timezone.now()
    make_run(scenario_id="weather", status="passed", started_at=now - dt.timedelta(minutes=30))
    make_run(scenario_id="weather", status="failed", started_at=now - dt.timedelta(minutes=20))
    make_run(scenario_id="weather", status="passed", started_at=now - dt.timedelta(minutes=10))
    make_run(scenario_id="weather", status="running", started_at=now - dt.timedelta(minutes=1))

    response = client.get("/scenarios/")

    rows = {row["id"]: row for row in response.context["rows"]}
    assert rows["weather"]["turns"] == 2
    assert rows["weather"]["last_status"] == "running"
    assert (rows["weather"]["passed"], rows["weather"]["finished"], rows["weather"]["pass_rate"]) == (2, 3, 67)
    assert rows["plain"]["last_status"] == ""
    assert rows["plain"]["pass_rate"] is None
    assert b"67%" in response.content
    assert b"never run" in response.content


@pytest.mark.backends
def test_it_counts_runs_in_one_query_whatever_the_number_of_rows(client: Client, django_assert_num_queries) -> None:
    make_scenario("one")
    make_run(scenario_id="one", status="passed")
    client.get("/scenarios/")  # warm the session and user caches
    with django_assert_num_queries(4) as one:  # session, user, tags, rows
        client.get("/scenarios/")
    for n in range(8):
        make_scenario(f"more-{n}")
        make_run(scenario_id=f"more-{n}", status="failed")
    with django_assert_num_queries(len(one.captured_queries)):
        client.get("/scenarios/")


def test_it_searches_ids_and_descriptions_with_an_htmx_partial(client: Client) -> None:
    make_scenario("alpha", description="Refund flow")
    make_scenario("beta", description="Weather")
    make_scenario("refund-two")

    response = client.get("/scenarios/", {"q": "refund"}, **HTMX)

    assert [row["id"] for row in response.context["rows"]] == ["alpha", "refund-two"]
    assert response.templates[0].name == "scenarios_app/scenario_table.html"
    assert b"<html" not in response.content
    assert "HX-Request" in response["Vary"]


def test_it_serves_the_whole_page_for_a_history_restore(client: Client) -> None:
    response = client.get("/scenarios/", {"q": "x"}, HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")

    assert b"<html" in response.content


@pytest.mark.backends
def test_it_filters_by_tag(client: Client) -> None:
    make_scenario("a", tags=["tools", "weather"])
    make_scenario("b", tags=["tools"])
    make_scenario("c")

    response = client.get("/scenarios/", {"tag": "weather"})

    assert [row["id"] for row in response.context["rows"]] == ["a"]
    assert response.context["tags"] == ["tools", "weather"]
    assert b'<option value="weather" selected>' in response.content


def test_it_escapes_user_content_on_the_list_and_in_the_editor(client: Client) -> None:
    make_scenario("xss", description="<script>alert(1)</script>", tags=["<b>t</b>"])

    for url in ("/scenarios/", "/scenarios/xss/"):
        content = client.get(url).content
        assert b"<script>alert(1)</script>" not in content
        assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in content
        assert b"<b>t</b>" not in content


# -- the editor ---------------------------------------------------------------------------------------------------


def test_it_opens_a_stored_scenario_in_the_form_with_its_values(client: Client) -> None:
    make_tool_scenario()

    response = client.get("/scenarios/weather/")

    assert response.status_code == 200
    assert response.context["mode"] == "form"
    content = response.content.decode()
    assert 'name="turns-0-tool_calls-0-tool_name" value="get_weather"' in content
    assert 'name="id" value="weather"' in content
    assert "readonly" in content
    assert 'id="preview-sse"' in content


def test_it_opens_a_scenario_the_form_cannot_show_on_the_raw_tab(client: Client) -> None:
    make_scenario("odd", tags=["a,b"])

    response = client.get("/scenarios/odd/")

    assert response.context["mode"] == "raw"
    assert "list item" in response.context["notice"]
    assert json.loads(response.context["raw_text"])["tags"] == ["a,b"]


def test_it_opens_stored_data_that_no_longer_validates_as_raw_text_with_the_errors(client: Client) -> None:
    make_scenario("stale")
    Scenario.objects.filter(id="stale").update(data={"id": "stale", "turns": [{"turn": 1}]})  # bypassing save()

    response = client.get("/scenarios/stale/")

    assert response.status_code == 200
    assert response.context["mode"] == "raw"
    assert response.context["raw_errors"] == ["turns.0.response: Field required"]
    assert "does not validate" in response.context["notice"]


@pytest.mark.backends
def test_it_refuses_text_the_database_cannot_store_beside_its_field(client: Client) -> None:
    post = editor_post(new_data(text="nul \x00 here"))

    response = client.post("/scenarios/editor/save/", post, **HTMX)

    assert response.status_code == 422
    assert "NUL" in error_slot(response.content, "turns-0-assistant_text")
    assert not Scenario.objects.exists()


def test_it_refuses_raw_text_that_renames_a_stored_scenario(client: Client) -> None:
    make_scenario("keep")

    response = client.post(
        "/scenarios/editor/save/",
        {"original_id": "keep", "mode": "raw", "raw_format": "json", "raw": json.dumps(new_data("other"))},
        **HTMX,
    )

    assert response.status_code == 422
    assert "to make 'other' from it, clone it" in response.context["raw_errors"][0]
    assert not Scenario.objects.filter(id="other").exists()


def test_it_validates_as_you_type_with_errors_beside_their_fields(client: Client) -> None:
    post = editor_post(new_data())
    post["id"] = "has space"
    post["turns-0-expected_temperature"] = "hot"

    response = client.post("/scenarios/editor/validate/", post, **HTMX)

    assert response.status_code == 200
    assert "String should match pattern" in error_slot(response.content, "id")
    assert error_slot(response.content, "turns-0-expected_temperature") == (
        "Input should be a valid number, unable to parse string as a number"
    )
    assert error_slot(response.content, "description") == ""  # sent empty, so a fixed error clears
    assert 'id="err-id" hx-swap-oob="true"' in response.content.decode()
    assert "2 problems" in response.content.decode()
    assert not Scenario.objects.exists()


def test_it_reports_a_valid_form_and_whether_it_differs_from_the_stored_one(client: Client) -> None:
    data = make_tool_scenario().canonical()

    same = client.post("/scenarios/editor/validate/", editor_post(data, "weather"), **HTMX)
    changed = client.post("/scenarios/editor/validate/", editor_post({**data, "description": "new"}, "weather"), **HTMX)

    assert "Valid · no unsaved changes" in same.content.decode()
    assert "Valid · unsaved changes" in changed.content.decode()


def test_it_says_beside_the_id_that_a_new_scenario_id_is_taken(client: Client) -> None:
    make_scenario("taken")

    response = client.post("/scenarios/editor/validate/", editor_post(new_data("taken")), **HTMX)

    assert "already exists" in error_slot(response.content, "id")


def test_it_saves_a_valid_new_scenario_as_version_one(client: Client, user: User) -> None:
    response = client.post("/scenarios/editor/save/", editor_post(new_data(), version_note="first draft"))

    assert response.status_code == 302
    assert response["Location"] == "/scenarios/fresh/"
    row = Scenario.objects.get(id="fresh")
    assert row.data == new_data()
    version = row.versions.get()
    assert (version.number, version.saved_by, version.note, version.data) == (1, user, "first draft", row.data)


def test_it_answers_an_htmx_save_with_a_redirect_header(client: Client) -> None:
    response = client.post("/scenarios/editor/save/", editor_post(new_data()), **HTMX)

    assert response.status_code == 200
    assert response["HX-Redirect"] == "/scenarios/fresh/"


def test_it_refuses_an_invalid_save_with_the_errors_and_writes_nothing(client: Client) -> None:
    post = editor_post(new_data())
    post["turns-0-kind"] = "tool-call"  # with a blank tool call row

    partial = client.post("/scenarios/editor/save/", post, **HTMX)
    page = client.post("/scenarios/editor/save/", post)

    assert partial.status_code == 422
    assert partial.templates[0].name == "scenarios_app/editor_panel.html"
    assert error_slot(partial.content, "turns-0-tool_calls-0-tool_name") == "String should have at least 1 character"
    assert page.status_code == 422
    assert b"<html" in page.content
    assert not Scenario.objects.exists()
    assert not ScenarioVersion.objects.exists()


def test_it_keeps_the_stored_id_when_editing(client: Client) -> None:
    data = make_tool_scenario().canonical()
    post = editor_post({**data, "description": "edited"}, "weather")
    post["id"] = "renamed"  # the field is read-only; cloning makes another id

    client.post("/scenarios/editor/save/", post)

    assert Scenario.objects.get(id="weather").description == "edited"
    assert not Scenario.objects.filter(id="renamed").exists()


def test_it_refuses_to_overwrite_a_save_made_elsewhere(client: Client) -> None:
    data = make_tool_scenario().canonical()
    opened = Scenario.objects.get(id="weather").revision
    make_tool_scenario(description="saved by someone else")

    response = client.post(
        "/scenarios/editor/save/", editor_post({**data, "description": "mine"}, "weather", base_revision=str(opened))
    )

    assert response.status_code == 422
    assert "saved elsewhere" in error_slot(response.content, fields.ALL)
    assert Scenario.objects.get(id="weather").description == "saved by someone else"


def test_it_edits_turns_without_losing_what_was_typed(client: Client) -> None:
    data = make_tool_scenario().canonical()
    post = editor_post(data, "weather", op="move_down", turn="0")
    post["turns-0-assistant_text"] = "typed but not saved"

    response = client.post("/scenarios/editor/turns/", post, **HTMX)

    form = response.context["form"]
    assert [t["kind"].value for t in form["turns"]] == ["text", "tool-call"]
    assert form["turns"][1]["assistant_text"].value == "typed but not saved"
    assert [t["turn"].value for t in form["turns"]] == ["1", "2"]
    assert Scenario.objects.get(id="weather").data == data


def test_it_autofocuses_the_new_id_on_the_page_but_not_in_a_re_rendered_panel(client: Client) -> None:
    page = client.get("/scenarios/new/")
    panel = client.post("/scenarios/editor/turns/", editor_post(new_data(), op="add_turn"), **HTMX)

    assert re.search(r'<input id="f-id"[^>]*autofocus', page.content.decode())
    assert 'id="f-id"' in panel.content.decode()
    assert "autofocus" not in panel.content.decode()


def test_it_refuses_an_unknown_turn_operation(client: Client) -> None:
    response = client.post("/scenarios/editor/turns/", editor_post(new_data(), op="explode"), **HTMX)

    assert response.status_code == 400


# -- the raw tab --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_it_round_trips_the_form_through_the_raw_tab(client: Client, fmt: str) -> None:
    data = make_tool_scenario().canonical()

    to_raw = client.post("/scenarios/editor/panel/", editor_post(data, "weather", to=fmt), **HTMX)
    raw_text = to_raw.context["raw_text"]
    assert raw.from_raw(raw_text, fmt) == data
    assert to_raw.context["mode"] == "raw"

    edited = raw.to_raw({**data, "description": "from raw"}, fmt)
    back = client.post(
        "/scenarios/editor/panel/",
        {"original_id": "weather", "mode": "raw", "raw_format": fmt, "raw": edited, "to": "form"},
        **HTMX,
    )
    assert back.context["mode"] == "form"
    assert back.context["form"]["description"].value == "from raw"
    assert 'name="turns-0-tool_calls-0-tool_name" value="get_weather"' in back.content.decode()


def test_it_switches_raw_json_to_yaml(client: Client) -> None:
    data = new_data()

    response = client.post(
        "/scenarios/editor/panel/",
        {"mode": "raw", "raw_format": "json", "raw": raw.to_raw(data, "json"), "to": "yaml"},
        **HTMX,
    )

    assert response.context["raw_format"] == "yaml"
    assert yaml.safe_load(response.context["raw_text"]) == data


def test_it_keeps_invalid_raw_text_with_its_line_and_field_errors(client: Client) -> None:
    broken = client.post(
        "/scenarios/editor/panel/",
        {"mode": "raw", "raw_format": "json", "raw": '{"id": "x",\n  "turns": [}', "to": "form"},
        **HTMX,
    )
    no_answer = "id: x\nturns:\n- turn: 1\n  response: {kind: text}\n"
    invalid = client.post(
        "/scenarios/editor/panel/", {"mode": "raw", "raw_format": "yaml", "raw": no_answer, "to": "form"}, **HTMX
    )

    assert broken.context["mode"] == "raw"
    assert "line 2, column 13: invalid JSON" in broken.context["raw_errors"][0]
    assert broken.context["raw_text"] == '{"id": "x",\n  "turns": [}'
    assert invalid.context["mode"] == "raw"
    assert invalid.context["raw_errors"] == ["turns.0.response.text.assistant_text: Field required"]


def test_it_validates_and_saves_from_the_raw_tab(client: Client) -> None:
    yaml_text = raw.to_raw(new_data("from-yaml"), "yaml")
    validation = client.post(
        "/scenarios/editor/validate/", {"mode": "raw", "raw_format": "yaml", "raw": "id: [\n"}, **HTMX
    )
    saved = client.post("/scenarios/editor/save/", {"mode": "raw", "raw_format": "yaml", "raw": yaml_text})

    assert 'id="raw-errors" hx-swap-oob="true"' in validation.content.decode()
    assert "invalid YAML" in validation.content.decode()
    assert saved.status_code == 302
    assert Scenario.objects.get(id="from-yaml").data == new_data("from-yaml")


# -- preview ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "wire"), [("openai", openai_wire), ("anthropic", anthropic_wire)])
def test_it_previews_exactly_the_bytes_the_encoder_sends(client: Client, protocol: str, wire: Any) -> None:
    scenario = make_tool_scenario()
    post = editor_post(scenario.canonical(), "weather", preview_turn="1", preview_protocol=protocol)

    response = client.post("/scenarios/editor/preview/", post, **HTMX)

    request = wire.parse_request(try_body(scenario, 1, protocol))
    decision = decide(
        Catalog.build([scenario]), request, header_scenario="weather", signature_key=settings.HARNESS_SIGNATURE_KEY
    )
    expected = wire.encode_reply(decision.reply, request).body.decode()
    shown = re.search(r'<pre class="sse" id="preview-sse">(.*?)</pre>', response.content.decode(), re.S).group(1)
    assert html.unescape(shown) == expected
    assert decision.problem == ""  # the built request meets the turn's expectations
    assert "get_weather" in expected
    assert b"data-try-it" in response.content


def test_it_builds_a_request_that_meets_the_turns_expectations() -> None:
    scenario = ScenarioSchema.model_validate(
        {
            "id": "strict",
            "system_prompt_must_include": ["You are strict"],
            "turns": [
                {"turn": 1, "response": {"kind": "text", "assistant_text": "one"}},
                {
                    "turn": 2,
                    "expected_tools": ["a", "b"],
                    "expected_temperature": 0.3,
                    "expected_top_p": 0.9,
                    "expected_reasoning": "enabled",
                    "response": {"kind": "text", "assistant_text": "two"},
                },
            ],
        }
    )

    for protocol, wire in (("openai", openai_wire), ("anthropic", anthropic_wire)):
        body = try_body(scenario, 2, protocol)
        request = wire.parse_request(body)
        decision = decide(Catalog.build([scenario]), request)
        assert body["stream"] is True
        assert request.turn == 2
        assert request.first_user == "strict"
        assert decision.problem == ""
        assert decision.reply.text == "two"


def test_it_previews_unsaved_edits_and_the_simulated_failure_first(client: Client) -> None:
    data = make_tool_scenario().canonical()
    post = editor_post(data, "weather", preview_turn="2", preview_protocol="openai")
    post["turns-1-assistant_text"] = "Edited answer."

    response = client.post("/scenarios/editor/preview/", post, **HTMX)

    content = html.unescape(response.content.decode())
    assert "Edited answer." in content
    assert "from your unsaved edits" in content
    assert "HTTP 429" in content
    assert "retry-after-ms: 200" in content


def test_it_previews_nothing_while_the_form_is_invalid(client: Client) -> None:
    post = editor_post(new_data(), preview_turn="1")
    post["id"] = ""

    response = client.post("/scenarios/editor/preview/", post, **HTMX)

    assert response.context["invalid"] is True
    assert b"preview-sse" not in response.content


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
