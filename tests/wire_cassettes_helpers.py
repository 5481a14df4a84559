"""The VCR cassettes that tests/test_wire_cassettes_*.py compare our streams and error bodies against, and how to
read and replay them.

For every streamed 200 on a protocol we serve, the recording's content is authored as a scenario, requested from
the server with the same protocol, and both streams are compared: event sequence, JSON keys, accumulated content.
The official SDKs then parse the recording and our stream alike. Error bodies are compared by JSON shape.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from tests.conftest import VCR_DIR


def load_cassettes() -> dict[str, dict[str, Any]]:
    """Every cassette in the folder (files with ``interactions``; the manifest is not one)."""
    cassettes = {}
    for path in sorted(VCR_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "interactions" in data:
            cassettes[path.name] = data
    return cassettes


CASSETTES = load_cassettes()


def protocol_of(interaction: dict[str, Any]) -> str | None:
    """The protocol we serve that the recorded request speaks, from its URL; None for the others."""
    path = interaction["request"]["url"].split("?")[0]
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    if path.endswith("/chat/completions"):  # OpenAI's and Azure's deployments URL alike
        return "openai"
    return None


def header(headers: Any, name: str) -> str | None:
    items = headers.items() if isinstance(headers, dict) else headers
    return next((value for key, value in items if key.lower() == name), None)


def media_type(value: str | None) -> str:
    return (value or "").split(";")[0].strip().lower()


def body_chunks(response: dict[str, Any]) -> list[bytes]:
    if "body_chunks_base64" in response:
        return [base64.b64decode(chunk) for chunk in response["body_chunks_base64"]]
    return [chunk.encode("utf-8") for chunk in response["body_chunks"]]


def is_stream(response: dict[str, Any]) -> bool:
    return response["status"] == 200 and media_type(header(response["headers"], "content-type")) == "text/event-stream"


def is_json_error(response: dict[str, Any]) -> bool:
    if response["status"] < 400 or media_type(header(response["headers"], "content-type")) != "application/json":
        return False
    return isinstance(json.loads(b"".join(body_chunks(response))), dict)


def select(protocol: str, kind: Any) -> list[Any]:
    return [
        pytest.param(name, index, id=f"{name.removesuffix('.json')}#{index}")
        for name, cassette in CASSETTES.items()
        for index, interaction in enumerate(cassette["interactions"])
        if protocol_of(interaction) == protocol and kind(interaction["response"])
    ]


ANTHROPIC_STREAMS = select("anthropic", is_stream)


OPENAI_STREAMS = select("openai", is_stream)


GEMINI_STREAMS = select("gemini", is_stream)


ERRORS = select("anthropic", is_json_error) + select("openai", is_json_error) + select("gemini", is_json_error)


STREAMS = ANTHROPIC_STREAMS + OPENAI_STREAMS + GEMINI_STREAMS


def interaction_of(name: str, index: int) -> dict[str, Any]:
    return CASSETTES[name]["interactions"][index]


def scenario_id(name: str, index: int) -> str:
    return f"vcr-{name.removesuffix('.json')}-{index}"


def replay_client(sdk: Any, response: dict[str, Any]) -> Any:
    """An official SDK client whose transport answers with the recorded response, chunk by recorded chunk."""
    skip = {"transfer-encoding", "content-length", "connection", "content-encoding"}
    headers = [(k, v) for k, v in response["headers"] if k.lower() not in skip]

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(response["status"], headers=headers, content=iter(body_chunks(response)))

    http_client = httpx2.Client(transport=httpx2.MockTransport(answer))
    kwargs = {"api_key": "replay", "http_client": http_client, "max_retries": 0}
    if sdk is anthropic:
        return anthropic.Anthropic(base_url="http://recording.invalid", **kwargs)
    return openai.OpenAI(base_url="http://recording.invalid/v1", **kwargs)
