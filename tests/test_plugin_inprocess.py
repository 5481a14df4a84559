"""The in-process mode under the plugin's own fixture (this project's tests have the plugin too): frameworks on
``harness.base_url`` and ``harness.http_client()``, failures that behave as over the network, the history's fields,
and the core importable and runnable with no Django in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import time

import anthropic
import httpx2
import openai
import pytest

from harnessweb.testing.harness import Harness, Options


def ask(client: openai.OpenAI, text: str = "hi", **kw: object) -> object:
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}], **kw)


def test_it_runs_without_django_in_a_fresh_interpreter() -> None:
    code = (
        "import sys\n"
        "import harnessweb.testing.plugin, harnessweb.testing.llm_models\n"
        "from harnessweb.testing import Harness\n"
        "h = Harness(); h.set_response(text='no django')\n"
        "reply = h.openai_client().chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'x'}])\n"
        "assert reply.choices[0].message.content == 'no django'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'channels', 'ninja', 'daphne')))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "LLM_USER_PATH": "/tmp/harness-llm-user"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_it_serves_langchain_chat_models(harness: Harness) -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_openai import ChatOpenAI

    harness.set_response(text="from langchain")
    chat = ChatOpenAI(model="gpt-4o", base_url=harness.base_url + "/v1", api_key="k", http_client=harness.http_client())
    assert chat.invoke("hello").content == "from langchain"
    assert "".join(chunk.content for chunk in chat.stream("again")) == "from langchain"
    # ChatAnthropic takes no HTTP client: on its default base URL the fixture answers it in-process.
    assert ChatAnthropic(model="claude-sonnet-4-6", api_key="k").invoke("hey").content == "from langchain"
    assert [c.protocol for c in harness.calls] == ["openai", "openai", "anthropic"]


async def test_it_serves_pydantic_ai(harness: Harness) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    harness.set_response(text="from pydantic-ai")
    provider = OpenAIProvider(
        base_url=harness.base_url + "/v1", api_key="k", http_client=harness.http_client(asynchronous=True)
    )
    agent = Agent(OpenAIChatModel("gpt-4o", provider=provider))
    result = await agent.run("hello")
    assert result.output == "from pydantic-ai"
    assert harness.last_call.prompt == "hello"


def test_it_times_out_as_the_client_would(harness: Harness) -> None:
    harness.set_error("timeout")  # held for 30 s, longer than the client waits
    started = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):
        ask(harness.openai_client(max_retries=0, timeout=httpx2.Timeout(0.2)))
    assert 0.2 <= time.perf_counter() - started < 2


def test_it_sends_invalid_bytes_the_sdk_cannot_parse(harness: Harness) -> None:
    harness.set_error("invalid_response")
    with pytest.raises((openai.APIError, ValueError)):
        ask(harness.openai_client(max_retries=0))
    assert harness.last_call.error["kind"] == "invalid_response"


def test_it_continues_a_stored_response(harness: Harness) -> None:
    harness.set_response(text="first answer")
    client = harness.openai_client()
    first = client.responses.create(model="gpt-4o", input="one", store=True)
    client.responses.create(model="gpt-4o", input="two", previous_response_id=first.id)
    assert [m["content"] for m in harness.last_call.messages] == ["one", "first answer", "two"]
    assert client.responses.retrieve(first.id).output_text == "first answer"
    with pytest.raises(openai.BadRequestError, match="resp_unknown"):
        client.responses.create(model="gpt-4o", input="x", previous_response_id="resp_unknown")


def test_it_refuses_what_the_provider_would_refuse(harness: Harness) -> None:
    with pytest.raises(anthropic.BadRequestError, match="temperature"):
        harness.anthropic_client().messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}], extra_body={"temperature": "hot"}
        )
    with pytest.raises(openai.NotFoundError, match="not found"):
        ask(harness.openai_client(default_headers={"X-Harness-Scenario": "nope"}))


def test_it_answers_unmatched_calls_with_a_404_when_asked() -> None:
    harness = Harness(options=Options(unmatched_error=True))
    with pytest.raises(openai.NotFoundError, match="No scenario answers this request"):
        ask(harness.openai_client())
    assert harness.calls[0].answered_by == ""


def test_it_rejects_set_response_without_exactly_one_answer(harness: Harness) -> None:
    with pytest.raises(TypeError, match="exactly one of text=, json= or tool_calls="):
        harness.set_response(text="a", json={"b": 1})
    with pytest.raises(ValueError, match="unknown failure kind 'teapot'"):
        harness.set_error("teapot")


def test_it_records_what_was_sent_per_protocol(harness: Harness) -> None:
    harness.anthropic_client().messages.create(
        model="claude-sonnet-4-6",
        max_tokens=64,
        system="be brief",
        messages=[{"role": "user", "content": "ping"}],
        metadata={"user_id": "u1"},
        extra_body={"temperature": 0.4},
    )
    call = harness.last_call
    assert (call.system, call.max_tokens, call.temperature, call.params) == (
        "be brief",
        64,
        0.4,
        {"metadata": {"user_id": "u1"}},
    )
    # The lorem for "ping" is longer than 64 tokens: cut there, as a real model stops at max_tokens.
    assert call.duration_ms is not None and call.response["finish_reason"] == "length"
    assert call.response["usage"]["output_tokens"] == 64
