"""The in-process history builds a call's record when a test first reads it (``call_later``): the same record as
``call_from`` builds at once, secrets redacted, and no copy or pickle of a call holds the body as sent."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import pickle

import orjson
import pytest

from harnessweb.engine import exchange, respond, routes
from harnessweb.engine.calls import Call, call_from, call_later
from harnessweb.testing.harness import Harness

SECRET = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
BODY = {
    "model": "gpt-4o",
    "messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": f"my key is {SECRET}"}],
    "temperature": 0.2,
    "max_tokens": 50,
    "metadata": {"api_key": SECRET},
    "response_format": {"type": "json_schema", "json_schema": {"name": "Answer", "schema": {"type": "object"}}},
}
PATH = "/v1/chat/completions"


def read() -> tuple[dict, object]:
    route = routes.resolve("POST", PATH, {"content-type": "application/json"})
    return respond.read_request(route, orjson.dumps(BODY))


def test_a_call_built_later_is_the_call_built_at_once() -> None:
    body, request = read()
    clock = 1_790_000_000.25
    stamp = datetime.datetime.fromtimestamp(clock, datetime.UTC).isoformat()
    later, now = call_later(request, body, PATH, clock), call_from(request, body, PATH, stamp)
    assert later.model == "gpt-4o" and "_pending" in vars(later)  # filtered on at once, the rest not built yet
    later.started = now.started
    assert later == now
    assert later.as_record() == now.as_record()
    assert SECRET not in repr(later.as_record()) and later.schema == {"title": "Answer", "type": "object"}
    assert "_pending" not in vars(later)


def test_a_field_set_before_the_record_is_built_stays_as_set() -> None:
    body, request = read()
    call = call_later(request, body, PATH, 0.0)
    call.schema = {"type": "string"}
    call.answered_by = "configured"
    assert call.prompt.startswith("my key is sk-proj-[REDACTED:")
    assert call.schema == {"type": "string"} and call.answered_by == "configured"


def test_an_unknown_attribute_is_an_attribute_error_and_builds_nothing() -> None:
    body, request = read()
    call = call_later(request, body, PATH, 0.0)
    with pytest.raises(AttributeError, match="'Call' object has no attribute 'nope'"):
        call.nope  # noqa: B018
    assert "_pending" in vars(call) and not hasattr(call, "nope")


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy, lambda c: pickle.loads(pickle.dumps(c))])
def test_a_copy_holds_the_record_built_never_the_body_as_sent(how) -> None:
    body, request = read()
    call = call_later(request, body, PATH, 0.0)
    assert SECRET not in repr(pickle.dumps(call))
    copied = how(call)
    assert "_pending" not in vars(copied) and copied == call and SECRET not in repr(vars(copied))


def test_the_harness_history_reads_as_before() -> None:
    h = Harness()
    h.set_response(text="Hi")
    h.openai_client().chat.completions.create(**BODY)
    (call,) = h.calls
    assert isinstance(call, Call) and call.answered_by == "configured"
    assert call["prompt"].startswith("my key is sk-proj-[REDACTED:") and call.max_tokens == 50
    assert (
        call.body["metadata"]["api_key"].startswith("[REDACTED:") and call.params["metadata"] == call.body["metadata"]
    )
    assert call.key is not None and call.key["place"] == "authorization"
    assert datetime.datetime.fromisoformat(call.timestamp).tzinfo is datetime.UTC
    assert call.response is not None and call.response["text"] == "Hi"


def test_evolved_is_a_dataclass_replace() -> None:
    _, request = read()
    changes = {"key_place": "authorization", "key_fingerprint": "abc", "stop": ("x",)}
    assert respond.evolved(request, **changes) == dataclasses.replace(request, **changes)
    assert respond.evolved(request, **changes) is not request and request.key_place == ""
    with pytest.raises(TypeError, match="no field nope"):
        respond.evolved(request, nope=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        respond.evolved(request).model = "x"  # type: ignore[misc]
    # The reply and the decision, which every request's decision copies too.
    reply = exchange.Reply(blocks=(), finish="stop", usage=exchange.Usage(1, 2, 3))
    decision = exchange.Decision(mode="scenario", scenario_id="s", turn=1, reply=reply)
    served = dataclasses.replace(reply, usage=exchange.Usage(3, 4, 7))
    assert exchange.evolved(reply, usage=served.usage) == served and reply.usage == exchange.Usage(1, 2, 3)
    assert exchange.evolved(decision, reply=served) == dataclasses.replace(decision, reply=served)
