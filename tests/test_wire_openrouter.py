"""OpenRouter's wire, byte for byte: OpenAI's protocol at ``/api/v1/`` with OpenRouter's extras (routing preferences
checked and accepted, ``usage.include``, the answer's ``provider`` and ``usage.cost`` from the price table), its
error shape and its model list."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from harnessweb.engine import respond, routes
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Reply, Usage
from harnessweb.engine.stream_summary import summarize
from harnessweb.engine.wire import openai, openrouter
from harnessweb.engine.wire.common import WireError

REPLY = Reply((Block("text", text="Hello there, world"),), "stop", Usage(3, 4, 7), chunk_words=2, id_seed="s")
GPT_4O_COST = 3 * 2.5e-6 + 4 * 10e-6  # genai-prices' gpt-4o: $2.50 in, $10 out per million tokens


def make_body(**fields: Any) -> dict[str, Any]:
    return {"model": "openai/gpt-4o", "messages": [{"role": "user", "content": "hello"}], **fields}


def read(body: dict[str, Any]) -> ChatRequest:
    route = routes.resolve("POST", "/api/v1/chat/completions", {})
    return respond.read_request(route, orjson.dumps(body))[1]


def test_it_plays_openais_protocol_at_openrouters_paths() -> None:
    play, models = routes.resolve("POST", openrouter.PATH, {}), routes.resolve("GET", "/api/v1/models", {})
    assert (play.kind, play.wire, models.kind, models.wire) == ("play", openrouter, "models", openrouter)
    assert routes.is_provider_path("/api/v1/chat/completions") and routes.play_wire(openrouter.PATH) is openrouter
    missing = routes.resolve("POST", "/api/v1/completions", {})
    assert isinstance(missing, routes.Refusal) and missing.wire is openrouter
    request = read(make_body(provider={"order": ["openai"], "sort": "price"}, transforms=["middle-out"]))
    assert (request.protocol, request.family, request.model) == ("openai", "openrouter", "openai/gpt-4o")
    assert not request.include_usage and read(make_body(usage={"include": True})).include_usage


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"provider": "openai"}, "provider"),
        ({"provider": {"order": "openai"}}, "provider.order"),
        ({"provider": {"allow_fallbacks": "no"}}, "provider.allow_fallbacks"),
        ({"models": ["a", 1]}, "models"),
        ({"transforms": "middle-out"}, "transforms"),
        ({"usage": {"include": "yes"}}, "usage.include"),
        ({"messages": []}, "messages"),
    ],
)
def test_it_refuses_a_bad_extra_naming_the_field(fields: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as caught:
        openrouter.parse_request(make_body(**fields))
    assert caught.value.param == param


def test_it_answers_openais_completion_with_the_provider_and_the_cost() -> None:
    body = orjson.loads(openrouter.encode_reply(REPLY, ChatRequest("openai", "openai/gpt-4o")).body)
    plain = orjson.loads(openai.encode_reply(REPLY, ChatRequest("openai", "openai/gpt-4o")).body)
    assert {k: v for k, v in body.items() if k not in ("provider", "usage")} == {
        k: v for k, v in plain.items() if k != "usage"
    }
    assert body["provider"] == "Harness"
    assert body["usage"] == {
        "prompt_tokens": 3,
        "completion_tokens": 4,
        "total_tokens": 7,
        "cost": pytest.approx(GPT_4O_COST),
        "is_byok": False,
        "prompt_tokens_details": {"cached_tokens": 0},
        "cost_details": {"upstream_inference_cost": None},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    assert openrouter.cost("no-such-model", plain["usage"]) is None


def test_it_streams_openais_chunks_with_the_cost_in_the_usage_chunk() -> None:
    encoded = openrouter.encode_reply(REPLY, ChatRequest("openai", "openai/gpt-4o", stream=True, include_usage=True))
    assert encoded.frames[-1] == b"data: [DONE]\n\n" and len(encoded.frames) == 5
    chunks = [orjson.loads(frame.removeprefix(b"data: ")) for frame in encoded.frames[:-1]]
    assert {c["provider"] for c in chunks} == {"Harness"}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["cost"] == pytest.approx(GPT_4O_COST)
    summary = summarize(encoded.body, headers=[(k.decode(), v.decode()) for k, v in encoded.headers])
    assert (summary.protocol, summary.text, summary.text_deltas, summary.has_done) == ("openai", REPLY.text, 2, True)


def test_it_gives_errors_and_failures_in_openrouters_shape() -> None:
    error = openrouter.encode_error(400, "provider must be an object", param="provider")
    assert orjson.loads(error.body) == {
        "error": {"code": 400, "message": "provider must be an object", "metadata": {"param": "provider"}}
    }
    failure = openrouter.encode_failure(Failure("rate_limit", "slow down", True, 1500))
    assert failure.status == 429 and (b"retry-after-ms", b"1500") in failure.headers
    assert orjson.loads(failure.body) == {"error": {"code": 429, "message": "slow down", "metadata": None}}


def test_it_lists_models_priced_per_token() -> None:
    listed = orjson.loads(openrouter.encode_models(["openai/gpt-4o", "scenario"]).body)["data"]
    assert [m["id"] for m in listed] == ["openai/gpt-4o", "scenario"]
    assert listed[0]["pricing"] == {"prompt": "0.0000025", "completion": "0.00001"}
    assert listed[1]["pricing"] == {"prompt": "0", "completion": "0"}
