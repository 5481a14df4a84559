"""The scenarios API: list, read, idempotent upsert, delete, validate; errors named by field path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harnessweb.engine.schemas import Scenario as ScenarioSchema
from scenarios_app.models import Scenario
from tests.conftest import make_client, make_token

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parent.parent / "scenarios_app" / "examples"


def make_body(scenario_id: str | None = "greeting", text: str = "Hello from the harness.") -> dict[str, Any]:
    body: dict[str, Any] = {
        "description": "Says hello",
        "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": text}}],
    }
    if scenario_id is not None:
        body["id"] = scenario_id
    return body


@pytest.mark.backends
def test_it_creates_then_updates_then_leaves_a_scenario_unchanged() -> None:
    client = make_client()

    created = client.put("/scenarios/greeting", json=make_body())
    unchanged = client.put("/scenarios/greeting", json=make_body())
    updated = client.put("/scenarios/greeting", json=make_body(text="Hi again."))

    assert (created.status_code, unchanged.status_code, updated.status_code) == (201, 200, 200)
    assert [r.json()["outcome"] for r in (created, unchanged, updated)] == ["created", "unchanged", "updated"]
    # An unchanged PUT writes nothing: no new revision.
    assert [r.json()["revision"] for r in (created, unchanged, updated)] == [1, 1, 2]
    row = Scenario.objects.get(id="greeting")
    assert row.data["turns"][0]["response"]["assistant_text"] == "Hi again."


def test_it_writes_nothing_for_an_unchanged_put() -> None:
    client = make_client()
    client.put("/scenarios/greeting", json=make_body())
    before = Scenario.objects.values_list("updated_at", "revision").get(id="greeting")

    client.put("/scenarios/greeting", json=make_body())

    assert Scenario.objects.values_list("updated_at", "revision").get(id="greeting") == before


def test_it_fills_the_id_from_the_path_and_accepts_the_seeds_camel_case() -> None:
    body = make_body(scenario_id=None)
    body["turns"][0]["response"] = {"kind": "text", "assistantText": "camel"}

    response = make_client().put("/scenarios/camel-case", json=body)

    assert response.status_code == 201
    assert response.json()["scenario"]["id"] == "camel-case"
    assert response.json()["scenario"]["turns"][0]["response"]["assistant_text"] == "camel"


def test_it_refuses_a_body_whose_id_differs_from_the_path() -> None:
    response = make_client().put("/scenarios/greeting", json=make_body("other"))

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.id"
    assert not Scenario.objects.exists()


def test_it_names_the_field_path_of_an_invalid_scenario() -> None:
    body = make_body()
    body["turns"][0]["response"] = {"kind": "text"}
    body["turns"].append({"turn": 0, "response": {"kind": "tool-call", "tool_calls": []}})

    response = make_client().put("/scenarios/greeting", json=body)

    assert response.status_code == 422
    fields = {error["field"] for error in response.json()["errors"]}
    assert "body.turns.0.response.text.assistant_text" in fields
    assert "body.turns.1.turn" in fields
    assert "body.turns.1.response.tool-call.tool_calls" in fields
    assert not Scenario.objects.exists()


@pytest.mark.backends
def test_it_refuses_text_the_database_cannot_store() -> None:
    response = make_client().put("/scenarios/greeting", json=make_body(text="nul \x00 here"))

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.turns.0.response.assistant_text"


def test_it_answers_malformed_json_and_non_objects_with_422() -> None:
    client = make_client()

    malformed = client.put("/scenarios/greeting", data=b'{"id": "greeting",}', content_type="application/json")
    array = client.put("/scenarios/greeting", json=[make_body()])

    assert malformed.status_code == 422
    assert (malformed.json()["errors"][0]["line"], malformed.json()["errors"][0]["column"]) == (1, 19)
    assert array.status_code == 422
    assert array.json()["errors"][0]["field"] == "body"


def test_it_syncs_the_example_folder_idempotently() -> None:
    client = make_client()
    files = sorted(EXAMPLES.glob("*.json"))

    first = [client.put(f"/scenarios/{f.stem}", json=json.loads(f.read_text())).status_code for f in files]
    second = [client.put(f"/scenarios/{f.stem}", json=json.loads(f.read_text())).json()["outcome"] for f in files]

    assert first == [201] * len(files)
    assert second == ["unchanged"] * len(files)


def test_it_lists_and_reads_scenarios() -> None:
    writer = make_client()
    writer.put("/scenarios/b-second", json=make_body("b-second"))
    writer.put("/scenarios/a-first", json={**make_body("a-first"), "tags": ["smoke"]})
    reader = make_client("read")

    listing = reader.get("/scenarios").json()
    scenario = reader.get("/scenarios/a-first")

    assert listing["count"] == 2
    assert [(s["id"], s["turns"], s["revision"]) for s in listing["items"]] == [("a-first", 1, 1), ("b-second", 1, 1)]
    assert listing["items"][0]["tags"] == ["smoke"]
    assert scenario.status_code == 200
    assert scenario.json() == Scenario.objects.get(id="a-first").data
    assert reader.get("/scenarios/missing").status_code == 404


def test_it_round_trips_a_scenario_through_get_and_put() -> None:
    client = make_client()
    client.put("/scenarios/greeting", json=make_body())

    again = client.put("/scenarios/greeting", json=client.get("/scenarios/greeting").json())

    assert again.json()["outcome"] == "unchanged"


def test_it_deletes_a_scenario() -> None:
    client = make_client()
    client.put("/scenarios/greeting", json=make_body())

    deleted = client.delete("/scenarios/greeting")
    again = client.delete("/scenarios/greeting")

    assert (deleted.status_code, again.status_code) == (204, 404)
    assert not Scenario.objects.exists()


def test_it_validates_without_writing_and_with_a_read_token() -> None:
    reader = make_client("read")

    valid = reader.post("/scenarios/greeting/validate", json=make_body(scenario_id=None))
    body = make_body()
    body["turns"][0]["turn"] = "first"
    invalid = reader.post("/scenarios/greeting/validate", json=body)

    assert valid.status_code == 200
    assert valid.json() == {
        "ok": True,
        "id": "greeting",
        "outcome": "created",
        "scenario": ScenarioSchema.model_validate(make_body()).canonical(),
    }
    assert invalid.status_code == 422
    assert invalid.json()["errors"][0]["field"] == "body.turns.0.turn"
    assert not Scenario.objects.exists()


def test_it_tells_what_a_put_would_do() -> None:
    make_client().put("/scenarios/greeting", json=make_body())
    reader = make_client("read")

    same = reader.post("/scenarios/greeting/validate", json=make_body())
    changed = reader.post("/scenarios/greeting/validate", json=make_body(text="Changed."))

    assert (same.json()["outcome"], changed.json()["outcome"]) == ("unchanged", "updated")


def test_it_refuses_a_malformed_scenario_id_in_the_path() -> None:
    response = make_client().put("/scenarios/has space", json=make_body(scenario_id=None))

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "path.scenario_id"


@pytest.mark.django_db(transaction=True)
def test_it_upserts_over_http(harness_server: Any) -> None:
    headers = {"Authorization": f"Bearer {make_token()}"}
    with httpx2.Client(base_url=f"{harness_server.url}/api", headers=headers, timeout=20) as client:
        created = client.put("/scenarios/http-greeting", json=make_body("http-greeting"))
        unchanged = client.put("/scenarios/http-greeting", json=make_body("http-greeting"))
        invalid = client.put("/scenarios/http-greeting", content=b'{"turns": 5}')

    assert (created.status_code, unchanged.status_code, invalid.status_code) == (201, 200, 422)
    assert unchanged.json()["outcome"] == "unchanged"
    assert invalid.json()["errors"][0]["field"] == "body.turns"
    assert Scenario.objects.get(id="http-greeting").revision == 1
