"""A path nothing serves is answered with the route it comes closest to, when one is close (routes.nearest), in
each provider's error format."""

from __future__ import annotations

import httpx2
import pytest

from harnessweb.engine import routes
from harnessweb.engine.routes import SERVED, nearest


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/chat/completion", "POST /v1/chat/completions"),
        ("/v1/chat/completions/", "POST /v1/chat/completions"),
        ("/v1/message", "POST /v1/messages"),
        ("/v1/embedding", "POST /v1/embeddings"),
        ("/v1/model/gpt-4o", "GET /v1/models/{id}"),
        ("/v1beta/models/gemini-2.0-flash:generateContents", "POST /v1beta/models/{id}:generateContent"),
        ("/openai/deployments/gpt4/chat/completion", "POST /openai/deployments/{id}/chat/completions"),
        ("/model/anthropic.claude/convers", "POST /model/{id}/converse"),
        ("/v1/assistants", None),
        ("/v2/rerank", None),
        ("/v1/nope/deep", None),
        ("/v1beta/models/gemini-2.0-flash:countTokens", None),
    ],
)
def test_it_names_the_nearest_route_only_when_one_is_close(path: str, expected: str | None) -> None:
    assert nearest(path, SERVED) == expected


def test_it_puts_the_nearest_route_in_the_404_before_the_list() -> None:
    refusal = routes.resolve("POST", "/v1/chat/completion", {})
    assert isinstance(refusal, routes.Refusal) and refusal.status == 404
    assert refusal.message.startswith(
        "Nothing is served at POST /v1/chat/completion. Did you mean POST /v1/chat/completions? Served here: "
    )
    far = routes.resolve("POST", "/v1/assistants", {})
    assert "Did you mean" not in far.message and "Served here: " in far.message


def test_it_answers_a_mistyped_path_in_the_provider_s_format_naming_the_route(harness_server: object) -> None:
    openai_style = httpx2.post(f"{harness_server.url}/v1/chat/completion", json={}, timeout=10)
    assert openai_style.status_code == 404 and openai_style.headers["content-type"] == "application/json"
    assert "Did you mean POST /v1/chat/completions?" in openai_style.json()["error"]["message"]
    anthropic_style = httpx2.post(
        f"{harness_server.url}/v1/message", json={}, headers={"anthropic-version": "2023-06-01"}, timeout=10
    )
    body = anthropic_style.json()
    assert body["type"] == "error" and "Did you mean POST /v1/messages?" in body["error"]["message"]
