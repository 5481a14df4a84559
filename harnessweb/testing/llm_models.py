"""Seed 002's boundary: harness-backed models for the ``llm`` library.

Registered through the ``llm`` entry point (``llm_plugin.py``: a model named ``harness``), and handed out by the
pytest fixture for any name (``llm.get_model(name)`` returns this test's model of that name). Calls take the same
step as every wire call (:meth:`Harness.answer`) and land in the same history.

Where real ``llm`` and seed 002 disagree, a response satisfies both: ``response.text()`` and ``response.text``
(a string that can be called), ``response.usage()`` (llm's ``Usage``) and ``response.usage`` (seed 002's
``{"input_tokens", "output_tokens"}``, a dict that can be called), and ``response.json()`` the answer parsed as
JSON (seed 002; it raises ``json.JSONDecodeError`` for a plain-text answer) where real llm returns the provider's
raw JSON. As in seed 002, ``model.prompt(...)`` is the call (recorded, a configured exception raised, when it
is made; llm's own conversations build their responses themselves and stay lazy), streamed chunks are strings
with a ``.text``, and each model has a ``model_name`` and a ``default_response``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import llm
import orjson
from pydantic import ConfigDict

from harnessweb.engine.asked import number
from harnessweb.engine.exchange import ChatRequest, Message, word_chunks
from harnessweb.testing.calls import Call

LLM_PATH = "llm"
_SCALARS = frozenset({str, int, float, bool})
_HARNESS_DEFAULT: Any = object()  # a model whose default_response was never set answers the harness's


class HarnessModelError(llm.ModelError):
    """A failure kind configured for an ``llm`` model (``set_error("rate_limit")``): what a provider's error is at
    this boundary, with its ``status``, ``kind`` and ``retry_after_ms``."""

    def __init__(self, kind: str, message: str, retry_after_ms: int | None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.status = {"rate_limit": 429, "timeout": 504, "model_error": 500}.get(kind)
        self.retry_after_ms = retry_after_ms


class _Text(str):
    """A string that also answers ``()``: ``response.text`` and ``response.text()`` both read the text."""

    def __call__(self) -> str:
        return str(self)


class _Chunk(str):
    """A streamed chunk: the string real llm yields, with seed 002's ``chunk.text`` (§10.2)."""

    @property
    def text(self) -> _Text:
        return _Text(self)


class _UsageView(dict):
    """Seed 002's usage dict that also answers ``()`` with llm's ``Usage``."""

    def __init__(self, usage: llm.Usage) -> None:
        super().__init__(input_tokens=usage.input, output_tokens=usage.output)
        self._usage = usage

    def __call__(self) -> llm.Usage:
        return self._usage


class HarnessResponse(llm.Response):
    @property  # type: ignore[override]
    def text(self) -> _Text:
        self._force()
        return _Text("".join(self._chunks))

    @property  # type: ignore[override]
    def usage(self) -> _UsageView:
        self._force()
        return _UsageView(llm.Usage(input=self.input_tokens, output=self.output_tokens, details=self.token_details))

    def json(self) -> Any:  # type: ignore[override]
        return json.loads(self.text)


class _Options(llm.Options):
    model_config = ConfigDict(extra="allow")
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None


class _History:
    """A model answered by a test's harness, with seed 002's per-model history on the model itself."""

    can_stream = True
    supports_schema = True
    supports_tools = True
    Options = _Options

    def __init__(self, harness: Any, model_id: str) -> None:
        self.harness = harness
        self.model_id = model_id
        self._default: Any = _HARNESS_DEFAULT

    @property
    def model_name(self) -> str:
        """Seed 002's name for ``model_id``."""
        return self.model_id

    @property
    def default_response(self) -> Any:
        """What this model answers when nothing is configured and nothing matched (seed 002's per-model default):
        the harness's (``harness_llm_default``) until set; a string is a text answer, None the engine's lorem."""
        return self.harness.options.llm_default if self._default is _HARNESS_DEFAULT else self._default

    @default_response.setter
    def default_response(self, value: Any) -> None:
        self._default = value

    def _answer_now(self, response: Any) -> None:
        """Seed 002's ``prompt()`` is the call: take it now (recorded, a configured exception raised here), and let
        the response's reading yield what it got."""
        response._harness_chunks = _answer(self, response.prompt, response, response.conversation, response.stream)

    @property
    def call_history(self) -> list[Call]:
        return [c for c in self.harness.calls if c.model == self.model_id]

    @property
    def prompt_count(self) -> int:
        return len(self.call_history)

    def reset_history(self) -> None:
        self.harness.forget(self.call_history)

    def assert_called_with(self, **wanted: Any) -> Call:
        from harnessweb.testing.calls import assert_called_with

        return assert_called_with(self.call_history, **wanted)


def _request(model_id: str, prompt: llm.Prompt, conversation: Any, stream: bool) -> tuple[ChatRequest, dict]:
    messages: list[Message] = []
    for earlier in getattr(conversation, "responses", None) or ():
        messages.append(Message("user", earlier.prompt.prompt or ""))
        messages.append(Message("assistant", earlier.text_or_raise()))
    messages.append(Message("user", prompt.prompt or ""))
    options = {k: v for k, v in _options_set(prompt.options).items() if v is not None}
    request = ChatRequest(
        protocol="llm",
        model=model_id,
        system=prompt.system or "",
        messages=tuple(messages),
        tools=tuple(tool.name for tool in prompt.tools or ()),
        temperature=number(options.get("temperature")),
        top_p=number(options.get("top_p")),
        stream=stream,
        schema_json=orjson.dumps(prompt.schema).decode() if isinstance(prompt.schema, dict) else "",
    )
    return request, options


def _options_set(options: llm.Options) -> dict[str, Any]:
    """``options.model_dump()``, without its cost when every value is a plain scalar (as options are): the fields
    in order, then the extra options; anything else (a list, a model) is dumped, a copy of its own."""
    values = {**options.__dict__, **(options.__pydantic_extra__ or {})}
    if all(value is None or type(value) in _SCALARS for value in values.values()):
        return values
    return options.model_dump()


def _answer(model: Any, prompt: llm.Prompt, response: llm.Response, conversation: Any, stream: bool) -> list[str]:
    """One call at the llm boundary: the text chunks to yield (tool calls and usage set on ``response``)."""
    harness = model.harness
    request, options = _request(model.model_id, prompt, conversation, stream)
    call, decision, failure = harness.answer(request, options, LLM_PATH)
    call.schema = prompt.schema if isinstance(prompt.schema, dict) else None
    try:
        if failure is not None:
            call.error = {"status": None, "kind": failure.status, "message": failure.message}
            raise HarnessModelError(failure.status, failure.message, failure.retry_after_ms)
        reply = decision.reply
        text, default = reply.text, model.default_response
        if decision.mode == "lorem" and default is not None and not request.schema_json:
            text = default if isinstance(default, str) else json.dumps(default)
            call.answered_by, call.answer = "default", default
        for tool_call in reply.tool_calls:
            arguments = json.loads(tool_call["arguments"] or "{}")
            response.add_tool_call(
                llm.ToolCall(name=tool_call["name"], arguments=arguments, tool_call_id=tool_call["id"])
            )
        output = len(text.split())
        response.set_usage(input=reply.usage.input_tokens, output=output)
        call.response = {
            "text": text,
            "json": _parsed(text),
            "tool_calls": reply.tool_calls,
            "finish_reason": reply.finish,
            "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": output},
        }
        if call.answered_by != "default":  # seed 002's record: a JSON answer's value as configured, else the text
            configured = call.configured
            call.answer = configured.json if getattr(configured, "has_json", False) else text
        return [_Chunk(chunk) for chunk in word_chunks(text, reply.chunk_words)] if stream else [_Chunk(text)]
    finally:
        call.finish()


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


class HarnessModel(_History, llm.Model):
    """A model of any name, answered by a test's harness."""

    def prompt(self, prompt: str | None = None, **kwargs: Any) -> HarnessResponse:  # type: ignore[override]
        response = super().prompt(prompt, **kwargs)
        response.__class__ = HarnessResponse  # seed 002's reading of text, usage and json (see the docstring)
        self._answer_now(response)
        return response  # type: ignore[return-value]

    def execute(self, prompt: llm.Prompt, stream: bool, response: llm.Response, conversation: Any) -> Iterator[str]:
        yield from _taken(self, prompt, response, conversation, stream)


class HarnessAsyncModel(_History, llm.AsyncModel):
    """The async twin: ``llm.get_async_model(name)``."""

    def prompt(self, prompt: str | None = None, **kwargs: Any) -> Any:  # type: ignore[override]
        response = super().prompt(prompt, **kwargs)
        self._answer_now(response)
        return response

    async def execute(  # type: ignore[override]
        self, prompt: llm.Prompt, stream: bool, response: Any, conversation: Any
    ) -> AsyncIterator[str]:
        for chunk in _taken(self, prompt, response, conversation, stream):
            yield chunk


def _taken(model: Any, prompt: llm.Prompt, response: Any, conversation: Any, stream: bool) -> list[str]:
    """What ``prompt()`` already answered, else (a conversation's prompt, which llm builds itself) the call now."""
    chunks = response.__dict__.pop("_harness_chunks", None)
    return chunks if chunks is not None else _answer(model, prompt, response, conversation, stream)


class WireModel(llm.Model):
    """A model answered by a harness server over its Chat Completions wire (activation by a server URL): its calls
    land in the run it names, the starting test's history."""

    can_stream = True
    supports_schema = True
    Options = _Options

    def __init__(self, url: str, run: str, model_id: str) -> None:
        self.url, self.run, self.model_id = url, run, model_id

    def execute(self, prompt: llm.Prompt, stream: bool, response: llm.Response, conversation: Any) -> Iterator[str]:
        import httpx2

        request, options = _request(self.model_id, prompt, conversation, stream=False)
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": m.role, "content": m.text} for m in request.messages]
        headers = {"X-Harness-Run": self.run} if self.run else {}
        body = {"model": self.model_id, "messages": messages, **options}
        if prompt.schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "schema", "schema": prompt.schema},
            }
        reply = httpx2.post(f"{self.url}/v1/chat/completions", json=body, headers=headers, timeout=60)
        if reply.status_code >= 400:
            raise llm.ModelError(f"{reply.status_code}: {reply.text[:500]}")
        data = reply.json()
        usage = data.get("usage") or {}
        response.set_usage(input=usage.get("prompt_tokens"), output=usage.get("completion_tokens"))
        yield data["choices"][0]["message"].get("content") or ""
