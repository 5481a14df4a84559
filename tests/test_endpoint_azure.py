"""Azure OpenAI's chat completions through the openai SDK's ``AzureOpenAI`` client: the deployment in the path names
the model, the ``api-version`` query is taken, and a scenario plays as on OpenAI's own path."""

from __future__ import annotations

import openai
import pytest

from tests.conftest import make_scenario


def azure(url: str) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(azure_endpoint=url, api_key="azure-key", api_version="2024-10-21", max_retries=0)


def test_it_plays_a_scenario_for_an_azure_deployment(harness_server, transactional_db) -> None:
    make_scenario("azure-hello", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from Azure."}}])
    client = azure(harness_server.url)
    raw = client.chat.completions.with_raw_response.create(
        model="my-gpt4o-deployment", messages=[{"role": "user", "content": "azure-hello"}]
    )
    reply = raw.parse()
    assert reply.choices[0].message.content == "Hello from Azure." and reply.model == "my-gpt4o-deployment"
    assert raw.headers["x-harness-run"]
    chunks = list(
        client.chat.completions.create(
            model="my-gpt4o-deployment", messages=[{"role": "user", "content": "azure-hello"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello from Azure."


def test_it_answers_an_unserved_azure_path_with_a_json_404(harness_server, transactional_db) -> None:
    """Azure's embeddings are not served yet: the client gets a 404 in JSON naming the path, not an HTML page."""
    with pytest.raises(openai.NotFoundError) as caught:
        azure(harness_server.url).embeddings.create(model="my-embedding-deployment", input="x")
    assert "Nothing is served at POST /openai/deployments/my-embedding-deployment/embeddings" in caught.value.message
