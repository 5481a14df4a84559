"""The call history a test reads: one :class:`Call` per request that reached the harness (through a provider's wire
or at the ``llm`` boundary), what each request asked for as sent (its secrets redacted), and the assertions on
them, whose failure message shows the closest call and the fields that differ.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import time
from copy import deepcopy
from dataclasses import dataclass, field, fields
from typing import Any

from harnessweb.engine import asked
from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.redaction import redact_json, redact_text, redact_url

_UNSET: Any = object()
# What a call's dict leaves out: the body as sent, what answered it beyond the record, and its clock.
_NOT_IN_DICT = frozenset({"body", "configured", "answer", "started"})


@dataclass
class Call:
    """One request as the code under test sent it, and what it got. Reads as attributes or, as seed 002's call
    records do, as a dict (``call["prompt"]``)."""

    protocol: str
    model: str
    path: str
    messages: list[dict[str, str]]
    system: str
    prompt: str
    tools: list[str]
    schema: dict[str, Any] | None
    temperature: float | None
    top_p: float | None
    max_tokens: int | None
    params: dict[str, Any]
    stream: bool
    timestamp: str
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    duration_ms: float | None = None
    # How it was answered: "configured" (set_response/set_error), "scenario", "instruction", "lorem", "default" or
    # "cassette" (replayed in-process: cassettes.py).
    answered_by: str = ""
    # Where its API key came and its fingerprint ({"place", "fingerprint"}, never the key), None without one; the
    # validation failure it got ("" for none): a scenario's expectation, or the key the test expects.
    key: dict[str, str] | None = None
    problem: str = ""
    body: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the request body as sent
    # The configured answer or error (``configured.Answer`` / ``Error``) that answered it, None for any other.
    configured: Any = field(default=None, repr=False, compare=False)
    # Seed 002's ``response`` as the ``llm`` boundary answered it (a JSON answer's value, a text answer's text, the
    # model's default); _UNSET for a call on a wire, whose ``call["response"]`` is read from ``configured``.
    answer: Any = field(default=_UNSET, repr=False, compare=False)
    started: float = field(default_factory=time.perf_counter, repr=False, compare=False)

    @property
    def prompt_length(self) -> int:
        return len(self.prompt)

    @property
    def kwargs(self) -> dict[str, Any]:
        """Seed 002's ``kwargs``: the schema by name, temperature, model and every other parameter."""
        return {"schema": schema_name(self.schema), "temperature": self.temperature, "model": self.model, **self.params}

    @property
    def answered(self) -> Any:
        """Seed 002's ``response`` (§4.2): what the call was answered with as configured (a JSON answer's value, a
        text answer's text, the ``llm`` default), or the text it got; None for a call that failed."""
        if self.error is not None or self.response is None:
            return None
        if self.answer is not _UNSET:
            return self.answer
        if getattr(self.configured, "has_json", False):
            return self.configured.json
        return self.response.get("text")

    def __getitem__(self, name: str) -> Any:
        # Read as a dict, a call is seed 002's record: "response" what was answered, "error" the message; the
        # structured records stay the attributes, and "response_record" / "error_record" as a dict.
        if name == "response":
            return self.answered
        if name == "error":
            return None if self.error is None else self.error.get("message")
        if name in ("response_record", "error_record"):
            return getattr(self, name.removesuffix("_record"))
        if name in ("prompt_length", "kwargs"):
            return getattr(self, name)
        if name not in self.__dataclass_fields__:
            raise KeyError(name)
        return getattr(self, name)

    def as_dict(self) -> dict[str, Any]:
        """The call's record as a dict of its own (each field copied, as ``dataclasses.asdict`` would), and
        ``prompt_length``; the body, the configured answer and seed 002's response are left out, never copied."""
        data = {f.name: deepcopy(getattr(self, f.name)) for f in fields(self) if f.name not in _NOT_IN_DICT}
        return {**data, "prompt_length": self.prompt_length}

    def finish(self) -> None:
        """The call's response has been read to its end (or cut): its duration is known."""
        self.duration_ms = round((time.perf_counter() - self.started) * 1000, 3)


def call_from(request: ChatRequest, body: dict[str, Any], path: str, timestamp: str) -> Call:
    """The call a request makes, from the neutral request and its body as sent; secrets redacted (a key in a
    message, the body or a URL is kept as its marker and fingerprint, as the server records it)."""
    return Call(
        protocol=request.protocol,
        model=request.model,
        path=redact_url(path),
        messages=[{"role": m.role, "content": redact_text(m.text)} for m in request.messages],
        system=redact_text(request.system),
        prompt=redact_text(request.last_user),
        tools=list(request.tools),
        schema=asked.requested_schema(body),
        temperature=request.temperature,
        top_p=request.top_p,
        max_tokens=asked.max_tokens_of(body),
        params=redact_json(asked.params_of(body)),
        stream=request.stream,
        timestamp=timestamp,
        body=redact_json(body),
    )


def call_out(call: Call) -> dict[str, Any]:
    """A call as ``POST /api/runs/{id}/calls`` takes it."""
    body = call.body or {"model": call.model, "messages": call.messages, **call.params}
    return {
        "protocol": call.protocol,
        "model": call.model,
        "path": call.path,
        "body": body,
        "turn": sum(1 for m in call.messages if m["role"] == "assistant") + 1,
        "answered_by": call.answered_by,
        "response": call.response,
        "error": call.error,
        "timestamp": call.timestamp,
        "duration_ms": call.duration_ms,
    }


def schema_name(schema: dict[str, Any] | None) -> str | None:
    if schema is None:
        return None
    return str(schema.get("title") or schema.get("name") or "schema")


# ---------------------------------------------------------------------------------------------------------------
# Assertions


def _schema_matches(expected: Any, actual: dict[str, Any] | None) -> bool:
    if expected is None:
        return actual is None
    if actual is None:
        return False
    if isinstance(expected, str):
        return schema_name(actual) == expected
    if isinstance(expected, dict):
        return {k: v for k, v in actual.items() if k != "title"} == {k: v for k, v in expected.items() if k != "title"}
    json_schema = getattr(expected, "model_json_schema", None)  # a pydantic model class
    if json_schema is not None:
        return _schema_matches(json_schema(), actual) or schema_name(actual) == expected.__name__
    return False


def differences(call: Call, **wanted: Any) -> list[str]:
    """The fields of ``call`` that differ from what is wanted, each as one readable line."""
    found = []
    for name, value in wanted.items():
        if value is _UNSET:
            continue
        if name == "prompt_contains":
            texts = [call.prompt, call.system, *(m["content"] for m in call.messages)]
            if not any(value in text for text in texts):
                found.append(f"prompt_contains: {value!r} is in no message (last user message: {call.prompt!r})")
        elif name == "tools":
            if sorted(value) != sorted(call.tools):
                found.append(f"tools: wanted {sorted(value)}, sent {sorted(call.tools)}")
        elif name == "schema":
            if not _schema_matches(value, call.schema):
                found.append(f"schema: wanted {getattr(value, '__name__', value)!r}, sent {call.schema!r}")
        elif getattr(call, name) != value:
            found.append(f"{name}: wanted {value!r}, sent {getattr(call, name)!r}")
    return found


def assert_called_with(calls: list[Call], **wanted: Any) -> Call:
    """The first call that matches every field given; else an AssertionError showing the closest call and what
    differs in it."""
    wanted = {k: v for k, v in wanted.items() if v is not _UNSET}
    if not calls:
        raise AssertionError(f"No call reached the harness (wanted one with {_shown(wanted)})")
    scored = [(differences(call, **wanted), i, call) for i, call in enumerate(calls)]
    for diffs, _, call in scored:
        if not diffs:
            return call
    diffs, index, call = min(scored, key=lambda row: (len(row[0]), row[1]))
    lines = "\n".join(f"  - {line}" for line in diffs)
    raise AssertionError(
        f"No call matches {_shown(wanted)} among {len(calls)} call(s). "
        f"Closest: call {index} ({call.protocol} {call.model!r}, prompt {call.prompt[:80]!r}), which differs in:\n"
        f"{lines}"
    )


def _shown(wanted: dict[str, Any]) -> str:
    return ", ".join(f"{k}={getattr(v, '__name__', v)!r}" for k, v in wanted.items()) or "anything"


def describe(calls: list[Call]) -> str:
    """The calls, one line each, for a failure message."""
    if not calls:
        return "  (none)"
    return "\n".join(
        f"  {i}: {c.protocol} {c.model!r} {c.prompt[:60]!r} ({c.answered_by})" for i, c in enumerate(calls)
    )
