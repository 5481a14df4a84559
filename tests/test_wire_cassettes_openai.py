"""Our OpenAI Chat Completions streams against OpenAI's and Azure's recordings: chunk shape, accumulated content,
and what the OpenAI SDK reads from both."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.conftest import make_scenario
from tests.sse import parse_sse
from tests.wire_cassettes_helpers import (
    OPENAI_STREAMS,
    body_chunks,
    header,
    interaction_of,
    media_type,
    replay_client,
    scenario_id,
)

# The recorded requests name a model the SDK warns about; that warning is about the recordings, not the endpoint.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


# ---------------------------------------------------------------------------------------------------------------
# OpenAI Chat Completions (OpenAI's and Azure's recordings)


def openai_chunks(chunks: list[bytes]) -> list[dict[str, Any]]:
    events = parse_sse(chunks)
    assert all(name is None for name, _ in events)  # data-only events
    data = [d for _, d in events]
    assert data[-1] == "[DONE]" and data.count("[DONE]") == 1
    return [json.loads(d) for d in data[:-1]]


def openai_content(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    text, reasoning, finish = "", "", None
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            assert choice["index"] == 0
            delta = choice["delta"]
            text += delta.get("content") or ""
            reasoning += delta.get("reasoning") or ""
            for item in delta.get("tool_calls") or []:
                call = calls.setdefault(item["index"], {"id": None, "name": None, "arguments": ""})
                call["id"] = item.get("id") or call["id"]
                call["name"] = item.get("function", {}).get("name") or call["name"]
                call["arguments"] += item.get("function", {}).get("arguments") or ""
            finish = choice["finish_reason"] or finish
    tool_calls = [{**calls[i], "arguments": json.loads(calls[i]["arguments"])} for i in sorted(calls)]
    assert sorted(calls) == list(range(len(calls)))
    usage = next((c["usage"] for c in chunks if c.get("usage")), None)
    return {"text": text, "reasoning": reasoning, "tool_calls": tool_calls, "finish_reason": finish, "usage": usage}


def tool_call_steps(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Where each tool call's index, id, type and name appear: its first delta, then argument deltas only."""
    steps: list[tuple[Any, ...]] = []
    for chunk in chunks:
        for choice in chunk["choices"]:
            for item in choice["delta"].get("tool_calls") or []:
                function = item["function"]
                if "id" in item:
                    step = ("first", item["index"], sorted(item), sorted(function), function["arguments"] == "")
                else:
                    step = ("arguments", item["index"], sorted(item), sorted(function))
                if not steps or steps[-1] != step:
                    steps.append(step)
    return steps


def openai_turn(content: dict[str, Any]) -> dict[str, Any]:
    usage = content["usage"]
    if content["tool_calls"]:
        response: dict[str, Any] = {
            "kind": "tool-call",
            "tool_calls": [
                {"tool_name": c["name"], "arguments": c["arguments"], "call_id": c["id"]} for c in content["tool_calls"]
            ],
        }
        if content["text"]:
            response["assistant_text"] = content["text"]
    else:
        response = {"kind": "text", "assistant_text": content["text"]}
    if content["reasoning"]:
        response["reasoning"] = [{"text": content["reasoning"]}]
    return {
        "turn": 1,
        "response": response,
        "finish_reason": content["finish_reason"],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
            "total_tokens": usage["total_tokens"],
        },
    }


def recorded_openai(name: str, index: int) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    chunks = openai_chunks(body_chunks(interaction_of(name, index)["response"]))
    content = openai_content(chunks)
    make_scenario(scenario_id(name, index), [openai_turn(content)])
    params: dict[str, Any] = {
        "model": chunks[0]["model"],
        "messages": [{"role": "user", "content": scenario_id(name, index)}],
    }
    if content["tool_calls"]:
        names = sorted({c["name"] for c in content["tool_calls"]})
        params["tools"] = [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names
        ]
    return chunks, content, params


def choice_chunks(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [choice for chunk in chunks for choice in chunk["choices"]]


@pytest.mark.parametrize(("name", "index"), OPENAI_STREAMS)
def test_it_streams_openai_chunks_of_the_recorded_shape_and_content(oai, name, index):
    recorded, content, params = recorded_openai(name, index)
    with oai.chat.completions.with_streaming_response.create(
        stream=True, stream_options={"include_usage": True}, **params
    ) as response:
        assert response.status_code == 200
        content_type = response.headers["content-type"]
        ours = openai_chunks(list(response.iter_bytes()))
    assert media_type(content_type) == media_type(
        header(interaction_of(name, index)["response"]["headers"], "content-type")
    )

    # Chunk keys: the real API's chunks carry system_fingerprint, which the hand-written recordings leave out.
    # Usage: these recordings put it on the finish_reason chunk; the real API sends it only when asked
    # (stream_options.include_usage), on one more chunk with "choices": [] just before [DONE], as we do.
    real_keys = set().union(*(c.keys() for c in recorded)) - {"usage"}
    assert set().union(*(c.keys() for c in ours)) - {"usage", "system_fingerprint"} == real_keys
    assert {c["object"] for c in ours} == {c["object"] for c in recorded} == {"chat.completion.chunk"}
    assert len({c["id"] for c in ours}) == 1 and {c["model"] for c in ours} == {params["model"]}
    *body, usage_chunk = ours
    assert usage_chunk["choices"] == [] and all(c["choices"] for c in body)
    assert usage_chunk["usage"] == content["usage"]

    real_choices, our_choices = choice_chunks(recorded), choice_chunks(body)
    assert set().union(*(c.keys() for c in our_choices)) == set().union(*(c.keys() for c in real_choices))
    # The role comes with the first delta, and only there.
    for choices in (real_choices, our_choices):
        assert choices[0]["delta"]["role"] == "assistant"
        assert all("role" not in c["delta"] for c in choices[1:])
    # The same delta fields, the opening delta included (role rides on the first content or tool call delta).
    for choices in (real_choices, our_choices):
        assert all(set(c["delta"]) <= {"role", "content", "tool_calls"} for c in choices)
    assert set(our_choices[0]["delta"]) == set(real_choices[0]["delta"])
    assert {k for c in our_choices for k in c["delta"]} == {k for c in real_choices for k in c["delta"]}
    assert tool_call_steps(ours) == tool_call_steps(recorded)
    # finish_reason on the last choice chunk only, with an empty delta.
    for choices in (real_choices, our_choices):
        assert all(c["finish_reason"] is None for c in choices[:-1])
        assert choices[-1]["finish_reason"] and choices[-1]["delta"] == {}

    assert openai_content(ours) == content


def final_snapshot(client: openai.OpenAI, params: dict[str, Any]) -> Any:
    """The SDK's accumulated completion (get_final_completion refuses finish_reason "length" when parsing)."""
    with client.chat.completions.stream(**params) as stream:
        for _ in stream:
            pass
        return stream.current_completion_snapshot


@pytest.mark.parametrize(("name", "index"), OPENAI_STREAMS)
def test_it_streams_what_the_openai_sdk_reads_to_the_same_completion_as_the_recording(oai, name, index):
    _, content, params = recorded_openai(name, index)
    replayed = final_snapshot(replay_client(openai, interaction_of(name, index)["response"]), params)
    served = final_snapshot(oai, params)

    def summary(completion: Any) -> dict[str, Any]:
        choice = completion.choices[0]
        calls = choice.message.tool_calls or []
        return {
            "text": choice.message.content,
            "tool_calls": [
                {"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments)} for c in calls
            ],
            "finish_reason": choice.finish_reason,
        }

    expected = {k: content[k] for k in ("text", "tool_calls", "finish_reason")}
    # Strictly equal, None content included (a tool-call-only stream has no text at all).
    assert summary(replayed) == summary(served)
    assert {**summary(served), "text": summary(served)["text"] or ""} == expected
    assert len(served.choices) == len(replayed.choices) == 1
