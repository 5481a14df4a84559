"""Azure OpenAI's legacy completions (harnessweb/engine/wire/azure_completions.py): the route, the deployment as the
model, OpenAI's completion bytes and Azure's errors."""

from __future__ import annotations

import json

from harnessweb.engine import respond, routes, wire
from harnessweb.engine.exchange import Block, Reply, Usage
from harnessweb.engine.wire import azure_completions

REPLY = Reply(blocks=(Block(type="text", text="Done."),), finish="stop", usage=Usage(2, 1, 3))


def test_the_route_table_sends_a_deployments_completions_to_it_and_chat_elsewhere() -> None:
    route = routes.resolve("POST", "/openai/deployments/instruct-1/completions", {}, "api-version=2024-10-21")
    assert isinstance(route, routes.Route) and route.wire is azure_completions and route.param == "instruct-1"
    assert routes.play_wire("/openai/deployments/d/chat/completions") is wire.BY_NAME["azure"]
    assert wire.BY_NAME["azure_completions"] is azure_completions
    assert "POST /openai/deployments/{id}/completions" in routes.SERVED


def test_the_deployment_names_the_model_whatever_the_body_says() -> None:
    route = routes.resolve("POST", "/openai/deployments/instruct-1/completions", {}, "")
    assert isinstance(route, routes.Route)
    _, request = respond.read_request(route, b'{"model": "gpt-3.5-turbo-instruct", "prompt": ["a", "b"]}')
    assert request.model == "instruct-1" and request.messages[-1].text == "a\nb"
    _, bare = respond.read_request(route, b'{"prompt": "hi", "stream": true}')
    assert bare.model == "instruct-1" and bare.stream
    body = json.loads(azure_completions.encode_reply(REPLY, request).body)
    assert body["object"] == "text_completion" and body["model"] == "instruct-1"
    assert body["choices"][0]["text"] == "Done."


def test_its_errors_take_azures_format() -> None:
    error = azure_completions.encode_error(400, "prompt must be a string", param="prompt")
    assert error.status == 400 and json.loads(error.body) == {
        "error": {"code": "BadRequest", "message": "prompt must be a string"}
    }
