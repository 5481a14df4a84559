"""A call: one request as the code under test sent it and what it got (:class:`Call`), built from the neutral
request and its body as sent (``call_from``; ``call_later`` builds the same fields when first read: the pytest
plugin's in-process history, most of whose calls are never read), or from the events a run
recorded (``calls_from_events``: the server's ``GET /api/runs/{id}/calls``, which the plugin's server mode and the
npm package read). One place turns a request into a call's fields, whichever side of the wire asks.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import datetime
import time
from copy import deepcopy
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from harnessweb.engine import asked, respond, routes
from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.redaction import redact_json, redact_text, redact_url
from harnessweb.engine.wire.common import WireError

# A value not given (an assertion's field left out, a call on a wire whose seed 002 answer is read from ``configured``).
UNSET: Any = object()
# What a call's dict leaves out: the body as sent, what answered it beyond the record, and its clock.
_NOT_IN_DICT = frozenset({"body", "configured", "answer", "started"})
# The fields ``call_later`` leaves to be built when first read (everything read from the body, redacted).
_LATER = frozenset(
    {"path", "messages", "system", "prompt", "tools", "schema", "max_tokens", "params", "body", "timestamp"}
)
# What a call's record keeps of its response event.
RESPONSE_KEPT = ("text", "reasoning", "tool_calls", "finish_reason", "usage", "chunks")


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
    # "cassette" (replayed in-process: the plugin's cassettes.py).
    answered_by: str = ""
    # Where its API key came and its fingerprint ({"place", "fingerprint"}, never the key), None without one; the
    # validation failure it got ("" for none): a scenario's expectation, or the key the test expects.
    key: dict[str, str] | None = None
    problem: str = ""
    body: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # the request body as sent
    # The configured answer or error (``configured.Answer`` / ``Error``) that answered it, None for any other.
    configured: Any = field(default=None, repr=False, compare=False)
    # Seed 002's ``response`` as the ``llm`` boundary answered it (a JSON answer's value, a text answer's text, the
    # model's default); UNSET for a call on a wire, whose ``call["response"]`` is read from ``configured``.
    answer: Any = field(default=UNSET, repr=False, compare=False)
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
        if self.answer is not UNSET:
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

    def as_record(self) -> dict[str, Any]:
        """The call as ``GET /api/runs/{id}/calls`` answers it: :meth:`as_dict` and the body as sent (redacted)."""
        return {**self.as_dict(), "body": deepcopy(self.body)}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Call:
        """A call read back from :meth:`as_record`'s JSON (what it does not name keeps its default)."""
        names = ({f.name for f in fields(cls)} - _NOT_IN_DICT) | {"body"}
        return cls(**{name: value for name, value in record.items() if name in names})

    def __getattr__(self, name: str) -> Any:
        # Reached only for an attribute not set: a field ``call_later`` left to build, built now (with the others).
        pending = self.__dict__.pop("_pending", None) if name in _LATER else None
        if pending is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        request, body, path, clock = pending
        built = _recorded(request, body, path)
        built["timestamp"] = datetime.datetime.fromtimestamp(clock, datetime.UTC).isoformat()
        for key, value in built.items():  # a field set since (the llm boundary's schema) stays as set
            self.__dict__.setdefault(key, value)
        return self.__dict__[name]

    def __getstate__(self) -> dict[str, Any]:
        """A copy or a pickle holds the call's fields built, never the unredacted body they are built from."""
        if "_pending" in self.__dict__:
            self.body  # noqa: B018 (builds the fields)
        return self.__dict__

    def finish(self) -> None:
        """The call's response has been read to its end (or cut): its duration is known."""
        self.duration_ms = round((time.perf_counter() - self.started) * 1000, 3)


def call_from(request: ChatRequest, body: dict[str, Any], path: str, timestamp: str) -> Call:
    """The call a request makes, from the neutral request and its body as sent; secrets redacted (a key in a
    message, the body or a URL is kept as its marker and fingerprint, as the server records it)."""
    return Call(**_at_once(request), timestamp=timestamp, **_recorded(request, body, path))


def call_later(request: ChatRequest, body: dict[str, Any], path: str, clock: float) -> Call:
    """:func:`call_from`'s call, whose fields read from the body (and its timestamp, from ``clock``: a
    ``time.time()``) are built when one of them is first read: the in-process history, where most calls are never
    read. The request and body must not change after (the caller's own: a body it parsed, options it built)."""
    call = Call.__new__(Call)  # the other fields keep their defaults (class attributes) until set
    call.__dict__.update(_at_once(request), started=time.perf_counter(), _pending=(request, body, path, clock))
    return call


def _at_once(request: ChatRequest) -> dict[str, Any]:
    """A call's fields read from the neutral request alone (what the history filters on at once)."""
    return {
        "protocol": request.protocol,
        "model": request.model,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "stream": request.stream,
    }


def _recorded(request: ChatRequest, body: dict[str, Any], path: str) -> dict[str, Any]:
    """A call's fields read from the request's messages and its body as sent, secrets redacted."""
    return {
        "path": redact_url(path),
        "messages": [{"role": m.role, "content": redact_text(m.text)} for m in request.messages],
        "system": redact_text(request.system),
        "prompt": redact_text(request.last_user),
        "tools": list(request.tools),
        "schema": asked.requested_schema(body),
        "max_tokens": asked.max_tokens_of(body),
        "params": redact_json(asked.params_of(body)),
        "body": redact_json(body),
    }


def schema_name(schema: dict[str, Any] | None) -> str | None:
    """A structured output's schema by name (its title, else its name, else "schema"); None for none."""
    if schema is None:
        return None
    return str(schema.get("title") or schema.get("name") or "schema")


def calls_from_events(events: list[dict[str, Any]]) -> list[Call]:
    """The calls a run's events record (each a dict with ``kind``, ``data`` and ``timestamp``, in order): one per
    ``request`` event of a conversation, with how it was answered and what it got. Requests that are no
    conversation (embeddings, token counts, model lists) and requests no route serves are left out."""
    found: list[Call] = []
    call: Call | None = None
    for event in events:
        kind, data = event["kind"], event["data"]
        if kind == "request":
            call = _call_of(data, event["timestamp"])
            if call is not None:
                found.append(call)
        elif call is None:
            continue
        elif kind == "match":
            call.answered_by = data.get("mode", "")
        elif kind == "validation":
            call.problem = data.get("problem") or ""
        elif kind == "failure_injected":
            call.error = {"status": None, "kind": data.get("status"), "message": data.get("message")}
        elif kind == "rejected":
            call.error = {"status": data.get("status"), "kind": "rejected", "message": data.get("message")}
        elif kind == "response":
            call.duration_ms = data.get("duration_ms")
            if call.error is not None:
                call.error["status"] = data.get("status")
            else:
                call.response = {k: data[k] for k in RESPONSE_KEPT if k in data}
    return found


def _call_of(data: dict[str, Any], timestamp: str) -> Call | None:
    route = routes.resolve(data.get("method", "POST"), data.get("path", ""), data.get("headers", {}))
    if isinstance(route, routes.Refusal):
        return None
    try:
        body, request = respond.read_request(route, orjson.dumps(data.get("body")))
    except WireError:
        return None
    if not isinstance(request, ChatRequest):
        return None
    call = call_from(request, body, data["path"], timestamp)
    call.key = data.get("key") if isinstance(data.get("key"), dict) else None
    return call
