"""Azure OpenAI through the openai SDK's ``AzureOpenAI`` client, chat and legacy completions: the deployment in the
path names the model, the ``api-version`` query is taken, and a scenario plays as on OpenAI's own path."""

from __future__ import annotations

import openai
import pytest

from tests.conftest import make_scenario, recorded_run


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


def test_it_serves_a_deployments_legacy_completions_plain_and_streamed(harness_server, transactional_db) -> None:
    """``/openai/deployments/{deployment}/completions``: the deployment names the model (whatever the body says)."""
    make_scenario("azure-instruct", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Instructed."}}])
    client = azure(harness_server.url)
    raw = client.completions.with_raw_response.create(model="my-instruct-deployment", prompt="azure-instruct")
    completion = raw.parse()
    assert completion.object == "text_completion" and completion.model == "my-instruct-deployment"
    assert completion.choices[0].text == "Instructed." and completion.choices[0].finish_reason == "stop"
    assert completion.usage.completion_tokens > 0
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=4)
    assert run.scenario_id == "azure-instruct"
    assert run.events.get(kind="request").data["path"] == "/openai/deployments/my-instruct-deployment/completions"
    chunks = list(client.completions.create(model="my-instruct-deployment", prompt="azure-instruct", stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "Instructed."
    assert {c.model for c in chunks} == {"my-instruct-deployment"}


def test_it_answers_a_deployments_legacy_completions_errors_in_azures_format(harness_server, transactional_db) -> None:
    client = azure(harness_server.url)
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model="my-instruct-deployment", prompt={"not": "a prompt"})  # type: ignore[arg-type]
    assert caught.value.body["code"] == "BadRequest" and "prompt" in caught.value.body["message"]
    keyless = {"api-key": openai.Omit(), "x-harness-require-key": "1"}  # the key left out, and required
    with pytest.raises(openai.AuthenticationError) as refused:
        client.completions.create(model="d", prompt="hi", extra_headers=keyless)
    assert refused.value.body["message"].startswith("Access denied due to missing subscription key")


async def test_it_streams_to_the_async_client_and_embeds_for_a_deployment(harness_server, transactional_db) -> None:
    client = openai.AsyncAzureOpenAI(azure_endpoint=harness_server.url, api_key="k", api_version="2024-10-21")
    stream = await client.chat.completions.create(
        model="chat-deployment", messages=[{"role": "user", "content": "Say hi"}], stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text.endswith("Say hi")  # the lorem and its echo
    vectors = await client.embeddings.create(model="embedding-deployment", input=["alpha", "beta"])
    assert [len(v.embedding) for v in vectors.data] == [1536, 1536] and vectors.model == "embedding-deployment"


def test_it_serves_azures_v1_routes_and_its_error_format(harness_server, transactional_db) -> None:
    v1 = openai.OpenAI(base_url=f"{harness_server.url}/openai/v1", api_key="k", max_retries=0)
    reply = v1.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello"}])
    assert reply.choices[0].message.content.endswith("hello")
    assert v1.responses.create(model="gpt-4o", input="hello").output_text.endswith("hello")
    make_scenario("azure-limited", [{"turn": 1, "failures_before_success": 1, "failure_status": "rate_limit",
                                     "failure_retry_after_ms": 1500,
                                     "response": {"kind": "text", "assistant_text": "ok"}}])  # fmt: skip
    with pytest.raises(openai.RateLimitError) as caught:
        azure(harness_server.url).chat.completions.create(
            model="d", messages=[{"role": "user", "content": "azure-limited"}]
        )
    assert caught.value.body == {"code": "429", "message": "Rate limit exceeded (simulated)"}
    assert caught.value.response.headers["retry-after"] == "2"


def test_it_works_under_langchains_azure_chat_model(harness_server, transactional_db) -> None:
    from langchain_openai import AzureChatOpenAI

    make_scenario("azure-langchain", [{"turn": 1, "response": {"kind": "text", "assistant_text": "From LangChain."}}])
    model = AzureChatOpenAI(azure_endpoint=harness_server.url, azure_deployment="lc-deployment",
                            api_version="2024-10-21", api_key="k", max_retries=0)  # fmt: skip
    assert model.invoke("azure-langchain").content == "From LangChain."
    assert "".join(chunk.content for chunk in model.stream("azure-langchain")) == "From LangChain."
