"""``POST /api/runs/{id}/messages``: a CI job's conversation, in OpenAI's or Anthropic's shape, stored normalised,
idempotent on retry, refused with a 422 naming the field, and shown on the run page like a harness conversation."""

from __future__ import annotations

import json
import uuid

import httpx2
import pytest
from django.test import Client

from runs_app.models import RunMessage
from tests.conftest import make_ci_run, make_client, make_token, make_user
from tests.test_ci_message_shapes import ANTHROPIC, OPENAI

pytestmark = pytest.mark.django_db


def http(token: str | None = None) -> Client:
    """Django's client as a vitest suite's fetch: JSON bodies, a bearer token in the header."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {token or make_token()}")


def post_json(client: Client, path: str, body: object) -> object:
    return client.post(path, data=json.dumps(body), content_type="application/json")


def test_it_stores_an_openai_conversation_normalised() -> None:
    run = make_ci_run()
    response = post_json(http(), f"/api/runs/{run.id}/messages", OPENAI)

    assert response.status_code == 201
    body = response.json()
    assert (body["created"], body["duplicates"]) == (5, 0)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    stored = list(run.messages.order_by("position"))
    assert [m.position for m in stored] == [0, 1, 2, 3, 4]
    assert stored[2].parts[0] == {"type": "tool_call", "id": "call_1", "name": "generate_ui",
                                  "arguments": {"items": ["eggs", "milk"]}}  # fmt: skip
    assert stored[3].parts[0]["tool_call_id"] == "call_1"


def test_it_takes_anthropic_messages_with_their_system_prompt_in_an_object() -> None:
    run = make_ci_run()
    response = make_client().post(
        f"/runs/{run.id}/messages", json={"messages": ANTHROPIC, "system": "You make grocery lists."}
    )

    assert response.status_code == 201
    roles = list(run.messages.order_by("position").values_list("role", "format"))
    assert roles == [("system", "anthropic"), ("user", "anthropic"), ("assistant", "anthropic"),
                     ("tool", "anthropic"), ("assistant", "anthropic")]  # fmt: skip
    listed = make_client("read").get(f"/runs/{run.id}/messages").json()
    assert listed[2]["parts"][2]["name"] == "generate_ui"


def test_a_retried_upload_stores_nothing_twice() -> None:
    run = make_ci_run()
    client = http()
    first = post_json(client, f"/api/runs/{run.id}/messages", OPENAI[:3])
    again = post_json(client, f"/api/runs/{run.id}/messages", OPENAI[:3])
    # The whole conversation so far, sent again after two more turns: only the new messages are stored.
    more = post_json(client, f"/api/runs/{run.id}/messages", OPENAI)

    assert first.status_code == 201
    assert again.status_code == 200
    assert (again.json()["created"], again.json()["duplicates"]) == (0, 3)
    assert more.status_code == 201 and (more.json()["created"], more.json()["duplicates"]) == (2, 3)
    assert RunMessage.objects.filter(run=run).count() == 5
    # Only the new ones, from their position.
    extra = {"role": "user", "content": "Add hummus"}
    appended = post_json(client, f"/api/runs/{run.id}/messages", {"messages": [extra], "start": 5})
    assert appended.status_code == 201
    assert run.messages.get(position=5).parts == [{"type": "text", "text": "Add hummus"}]


def test_a_different_message_at_a_stored_position_is_a_conflict_naming_it() -> None:
    run = make_ci_run()
    client = http()
    post_json(client, f"/api/runs/{run.id}/messages", OPENAI[:2])
    changed = [OPENAI[0], {"role": "user", "content": "something else"}]
    response = post_json(client, f"/api/runs/{run.id}/messages", changed)

    assert response.status_code == 409
    error = response.json()["errors"][0]
    assert error["field"] == "body.1"
    assert "start 2" in error["message"]
    assert run.messages.get(position=1).parts[0]["text"] == OPENAI[1]["content"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([{"role": "user", "content": "ok"}, {"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}],
         "body.1.tool_calls.0.function.name"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "body.messages.0.role"),
        ({"messages": [], "format": "gemini"}, "body.format"),
        ({"messages": [{"role": "user", "content": "bad \x00 byte"}]}, "body.messages.0.content"),
        ({"conversation": []}, "body.messages"),
    ],
)  # fmt: skip
def test_a_bad_message_is_a_422_naming_the_field(body, field) -> None:
    run = make_ci_run()
    response = post_json(http(), f"/api/runs/{run.id}/messages", body)

    assert response.status_code == 422
    assert field in [error["field"] for error in response.json()["errors"]]
    assert not run.messages.exists()  # nothing of it stored


@pytest.mark.backends
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_constant_json_has_not_is_a_422_not_a_500(constant: str) -> None:
    """Python's JSON reader takes NaN and Infinity; no database stores them as JSON (PostgreSQL refuses them)."""
    run = make_ci_run()
    body = '{"messages": [{"role": "user", "content": "hi", "score": CONSTANT}]}'.replace("CONSTANT", constant)
    response = http().post(f"/api/runs/{run.id}/messages", data=body, content_type="application/json")
    assert response.status_code == 422
    assert f"{constant.lstrip('-')} is not JSON" in response.json()["errors"][0]["message"]
    assert not run.messages.exists()


def test_it_answers_404_for_an_unknown_run_and_401_without_a_token() -> None:
    missing = post_json(http(), f"/api/runs/{uuid.uuid4()}/messages", OPENAI)
    anonymous = post_json(Client(), f"/api/runs/{make_ci_run().id}/messages", OPENAI)
    read_only = post_json(http(make_token("read")), f"/api/runs/{make_ci_run().id}/messages", OPENAI)

    assert missing.status_code == 404
    assert anonymous.status_code == 401
    assert read_only.status_code == 403
    assert not RunMessage.objects.exists()


def test_the_run_page_shows_the_conversation_in_turns() -> None:
    run = make_ci_run(name="e2e grocery list")
    make_client().post(f"/runs/{run.id}/messages", json={"messages": ANTHROPIC, "system": "You make <lists>."})
    browser = Client()
    browser.force_login(make_user())

    page = browser.get(f"/runs/{run.id}/").content.decode()

    assert 'id="run-conversation"' in page
    assert "Before the first turn" in page and "Turn 1" in page
    assert "You make &lt;lists&gt;." in page  # escaped like everything uploaded
    assert 'class="message role-tool"' in page
    assert "call generate_ui · toolu_1" in page and "result of generate_ui · toolu_1" in page
    assert "sent in Anthropic&#x27;s message shape" in page
    assert "&quot;eggs&quot;" in page  # the tool call's arguments, pretty-printed
    assert page.index("Create a grocery list") < page.index("Here it is: /u/abc")


@pytest.mark.django_db(transaction=True)
def test_a_plain_http_client_uploads_over_the_network(harness_server) -> None:
    run = make_ci_run()
    headers = {"Authorization": f"Bearer {make_token()}"}
    url = f"{harness_server.url}/api/runs/{run.id}/messages"

    first = httpx2.post(url, json=OPENAI, headers=headers, timeout=10)
    retry = httpx2.post(url, json=OPENAI, headers=headers, timeout=10)

    assert (first.status_code, retry.status_code) == (201, 200)
    assert run.messages.count() == 5
