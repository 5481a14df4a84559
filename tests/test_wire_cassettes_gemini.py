"""Our Gemini streams against the recorded ones: chunk shape and accumulated content."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tests.conftest import make_scenario
from tests.sse import parse_sse
from tests.wire_cassettes_helpers import GEMINI_STREAMS, body_chunks, interaction_of, media_type, scenario_id

# The recorded requests name a model the SDK warns about; that warning is about the recordings, not the endpoint.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


# ---------------------------------------------------------------------------------------------------------------
# Gemini


def gemini_events(chunks: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(data) for _, data in parse_sse(chunks)]


def gemini_content(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a Gemini stream says, accumulated: text, function calls, the finish reason, the usage."""
    text, calls, finish = "", [], None
    for event in events:
        for candidate in event["candidates"]:
            for part in candidate["content"]["parts"]:
                if "functionCall" in part:
                    calls.append(part["functionCall"])
                elif not part.get("thought"):
                    text += part.get("text", "")
            finish = candidate.get("finishReason") or finish
    usage = next((e["usageMetadata"] for e in events if e.get("usageMetadata")), None)
    return {"text": text, "calls": calls, "finish": finish, "usage": usage}


def gemini_turn(content: dict[str, Any]) -> dict[str, Any]:
    if content["calls"]:
        calls = [{"tool_name": c["name"], "arguments": c["args"]} for c in content["calls"]]
        response: dict[str, Any] = {"kind": "tool-call", "tool_calls": calls}
        if content["text"]:
            response["assistant_text"] = content["text"]
    else:
        response = {"kind": "text", "assistant_text": content["text"]}
    usage = content["usage"]
    return {
        "turn": 1,
        "response": response,
        "finish_reason": "length" if content["finish"] == "MAX_TOKENS" else "stop",
        "usage": {
            "input_tokens": usage["promptTokenCount"],
            "output_tokens": usage["candidatesTokenCount"],
            "total_tokens": usage["totalTokenCount"],
        },
    }


@pytest.mark.parametrize(("name", "index"), GEMINI_STREAMS)
def test_it_streams_gemini_chunks_of_the_recorded_shape_and_content(harness_server, transactional_db, name, index):
    interaction = interaction_of(name, index)
    recorded = gemini_events(body_chunks(interaction["response"]))
    content = gemini_content(recorded)
    make_scenario(scenario_id(name, index), [gemini_turn(content)])
    path = interaction["request"]["url"].split("googleapis.com", 1)[1].split("&key=")[0]
    body = {"contents": [{"role": "user", "parts": [{"text": scenario_id(name, index)}]}]}
    response = httpx2.post(f"{harness_server.url}{path}", json=body, headers={"x-goog-api-key": "k"}, timeout=20)
    assert response.status_code == 200
    assert media_type(response.headers["content-type"]) == "text/event-stream"
    ours = gemini_events([response.content])

    # The real API adds modelVersion and responseId to every chunk, which these hand-written recordings leave out.
    assert set().union(*(e.keys() for e in ours)) - {"modelVersion", "responseId"} == set().union(
        *(e.keys() for e in recorded)
    )
    for events in (recorded, ours):
        candidates = [c for e in events for c in e["candidates"]]
        assert all(c["content"]["role"] == "model" for c in candidates)
        # finishReason on the last chunk only, usageMetadata on the last chunk only.
        assert [bool(c.get("finishReason")) for c in candidates] == [False] * (len(candidates) - 1) + [True]
        assert [bool(e.get("usageMetadata")) for e in events] == [False] * (len(events) - 1) + [True]
        assert all(
            set(part) <= {"text", "functionCall", "thought", "thoughtSignature"}
            for c in candidates
            for part in c["content"]["parts"]
        )
    assert gemini_content(ours) == content
