"""The endpoints around the conversation ones, through the official SDKs: models, count_tokens, embeddings, and the
JSON 404/405 for any other path under /v1/ and /v1beta/."""

from __future__ import annotations

import math

import anthropic
import httpx2
import openai
import pytest

from tests.conftest import make_scenario


def test_it_retrieves_any_model_by_id_in_either_format(oai, claude):
    model = oai.models.retrieve("gpt-4o-mini")
    assert (model.id, model.object, model.owned_by) == ("gpt-4o-mini", "model", "harness")
    info = claude.models.retrieve("claude-sonnet-4-5")
    assert (info.id, info.type, info.display_name) == ("claude-sonnet-4-5", "model", "claude-sonnet-4-5")


def test_it_counts_tokens_deterministically(claude):
    messages = [{"role": "user", "content": "count these five words"}]
    first = claude.messages.count_tokens(model="m", system="be brief", messages=messages)
    again = claude.messages.count_tokens(model="m", system="be brief", messages=messages)
    assert first.input_tokens == again.input_tokens == 6


def test_it_embeds_deterministic_unit_vectors_as_the_sdk_asks_by_default(oai):
    result = oai.embeddings.create(model="text-embedding-3-small", input=["alpha beta", "gamma"])
    again = oai.embeddings.create(model="text-embedding-3-small", input="alpha beta")
    vectors = [item.embedding for item in result.data]
    assert [len(v) for v in vectors] == [1536, 1536]
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5 for v in vectors)
    assert again.data[0].embedding == vectors[0] and vectors[0] != vectors[1]
    assert (result.usage.prompt_tokens, result.usage.total_tokens) == (3, 3)


def test_it_embeds_as_floats_with_the_dimensions_asked(oai):
    floats = oai.embeddings.create(model="m", input="alpha beta", dimensions=8, encoding_format="float")
    base64 = oai.embeddings.create(model="m", input="alpha beta", dimensions=8)
    assert len(floats.data[0].embedding) == 8
    assert floats.data[0].embedding == base64.data[0].embedding


def test_it_refuses_a_bad_embeddings_request_naming_the_field(oai):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.embeddings.create(model="m", input="x", dimensions=0)
    assert caught.value.body["param"] == "dimensions"


@pytest.mark.parametrize("path", ["/v1/assistants", "/v1beta/models/gemini-2.0-flash:countTokens", "/v1/nope/deep"])
def test_it_answers_an_unserved_path_with_json_naming_it_and_what_is_served(harness_server, path):
    response = httpx2.post(f"{harness_server.url}{path}", json={}, timeout=10)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    message = response.json()["error"]["message"]
    assert path in message and "POST /v1/chat/completions" in message and "GET /v1/models/{id}" in message


def test_it_answers_an_unserved_path_in_anthropic_s_format_to_an_anthropic_client(claude):
    with pytest.raises(anthropic.NotFoundError) as caught:
        claude.get("/v1/fine_tuning/jobs", cast_to=object)
    assert caught.value.body["type"] == "error" and "/v1/fine_tuning/jobs" in caught.value.body["error"]["message"]


def test_it_refuses_a_method_a_path_does_not_take(harness_server):
    response = httpx2.get(f"{harness_server.url}/v1/chat/completions", timeout=10)
    assert response.status_code == 405
    assert response.json()["error"]["message"] == "Method GET not allowed on /v1/chat/completions; use POST"


def test_it_plays_a_scenario_through_legacy_completions(oai):
    make_scenario("legacy", [{"turn": 1, "response": {"kind": "text", "assistant_text": "an old friend"}}])
    raw = oai.completions.with_raw_response.create(model="gpt-3.5-turbo-instruct", prompt="legacy")
    completion = raw.parse()
    assert completion.object == "text_completion"
    assert completion.choices[0].text == "an old friend" and completion.choices[0].finish_reason == "stop"
    assert raw.headers["x-harness-run"]

    stream = oai.completions.create(
        model="gpt-3.5-turbo-instruct", prompt="legacy", stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "an old friend"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 4


def test_it_answers_an_unmatched_request_with_a_404_saying_what_was_tried_when_asked(oai):
    lorem = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "lost conversation"}])
    assert lorem.choices[0].message.content.endswith("lost conversation")
    with pytest.raises(openai.NotFoundError) as caught:
        oai.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "lost conversation"}],
            extra_headers={"X-Harness-Unmatched": "error"},
        )
    message = caught.value.body["message"]
    assert "No scenario answers this request" in message and "'lost conversation' is no scenario id" in message


def test_it_serves_the_vectors_a_scenario_pins(oai):
    make_scenario(
        "retrieval-pins",
        embeddings=[
            {"input": "the refund policy", "same_as": "how do I get my money back?"},
            {"input": "a fixed point", "vector": [0.6, 0.8]},
        ],
    )
    query, document, other = oai.embeddings.create(
        model="m", input=["how do I get my money back?", "the refund policy", "the shipping policy"]
    ).data
    assert document.embedding == query.embedding != other.embedding
    fixed = oai.embeddings.create(model="m", input="a fixed point", encoding_format="float").data[0]
    assert fixed.embedding == pytest.approx([0.6, 0.8], rel=1e-6)
    make_scenario("nothing-pinned")
    unpinned = oai.embeddings.create(
        model="m", input="the refund policy", extra_headers={"X-Harness-Scenario": "nothing-pinned"}
    )
    assert unpinned.data[0].embedding != query.embedding


def test_it_refuses_embeddings_for_an_unknown_scenario_header(oai):
    with pytest.raises(openai.NotFoundError):
        oai.embeddings.create(model="m", input="x", extra_headers={"X-Harness-Scenario": "no-such-scenario"})
