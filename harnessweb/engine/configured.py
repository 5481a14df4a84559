"""Answers configured without a scenario file (the pytest plugin's ``set_response`` and ``set_error``, in-process or
stored on a run in server mode): text, JSON, tool calls or reasoning, and failures of the schema's kinds (or, in
process, an exception to raise), per model or for any model.

Set several times for one model, answers come in that order and the last one stays; an error lasts ``times``
calls (or always). Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import ValidationError

from harnessweb.engine import chaos, structured, tokens
from harnessweb.engine.exchange import (
    Block,
    ChatRequest,
    Decision,
    Failure,
    Reply,
    conversation_seed,
)
from harnessweb.engine.fallback import lorem_reply
from harnessweb.engine.playback import failure_of, validation_reply
from harnessweb.engine.schemas import ExpectKey, FailureStatus

FAILURE_KINDS: tuple[str, ...] = get_args(FailureStatus)


@dataclass
class Answer:
    """One configured answer; ``used`` counts the calls it served (strict mode reports the unused)."""

    model: str | None
    text: str | None = None
    json: Any = None
    has_json: bool = False
    tool_calls: tuple[dict[str, Any], ...] = ()
    reasoning: str | None = None
    used: int = 0

    def describe(self) -> str:
        what = "json" if self.has_json else "tool_calls" if self.tool_calls else "text"
        return f"set_response({what}, model={self.model!r})"


@dataclass
class Error:
    model: str | None
    error: str | BaseException
    times: int | None  # None: always
    used: int = 0

    def describe(self) -> str:
        return f"set_error({self.error!r}, model={self.model!r})"

    def failure(self) -> Failure:
        assert isinstance(self.error, str)
        return failure_of(self.error)  # type: ignore[arg-type]


def make_answer(
    model: str | None,
    text: str | None,
    json_value: Any,
    has_json: bool,
    tool_calls: Any,
    reasoning: str | None,
) -> Answer:
    pairs = (("text", text is not None), ("json", has_json), ("tool_calls", bool(tool_calls)))
    given = [name for name, present in pairs if present]
    if len(given) != 1:
        raise TypeError(f"set_response takes exactly one of text=, json= or tool_calls= (got {given or 'none'})")
    calls = ()
    if tool_calls:
        calls = tuple(_tool_call(call, i) for i, call in enumerate(tool_calls))
    return Answer(model, text, json_value, has_json, calls, reasoning)


def _tool_call(call: Any, index: int) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise TypeError(f"tool_calls[{index}] must be a dict with a 'name' (and 'arguments'), got {call!r}")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {"name": call["name"], "arguments": arguments, "id": call.get("id", "")}


def make_error(model: str | None, error: Any, times: int | str) -> Error:
    if isinstance(error, str) and error not in FAILURE_KINDS:
        raise ValueError(f"set_error: unknown failure kind {error!r}; use one of {', '.join(FAILURE_KINDS)}")
    if not isinstance(error, str | BaseException):
        raise TypeError(f"set_error takes a failure kind or an exception instance, got {error!r}")
    if times == "always":
        return Error(model, error, None)
    if not isinstance(times, int) or times < 1:
        raise ValueError(f"set_error: times must be a positive number or 'always', got {times!r}")
    return Error(model, error, times)


class Answers:
    """The answers and errors configured for one test."""

    def __init__(self) -> None:
        self.answers: list[Answer] = []
        self.errors: list[Error] = []
        self.expect_key: ExpectKey | None = None  # the key every request must carry (``harness.expect_key``)
        self.chaos: chaos.Chaos | None = None  # failures at random, seeded (``chaos.py``)
        self.chaos_used = 0  # the requests chaos has decided for: the next one's number

    def clear(self) -> None:
        self.answers.clear()
        self.errors.clear()
        self.expect_key = None
        self.chaos, self.chaos_used = None, 0

    def take_chaos(self) -> chaos.Hit | None:
        """The failure chaos gives this request, if any, counted (every request takes a number, failed or not)."""
        if self.chaos is None:
            return None
        self.chaos_used += 1
        return chaos.hit(self.chaos, self.chaos_used - 1)

    def take_error(self, model: str) -> Error | None:
        for error in self._for(self.errors, model):
            if error.times is None or error.used < error.times:
                error.used += 1
                return error
        return None

    def take_answer(self, model: str) -> Answer | None:
        queue = self._for(self.answers, model)
        if not queue:
            return None
        answer = next((a for a in queue if not a.used), queue[-1])  # in order, then the last one stays
        answer.used += 1
        return answer

    @staticmethod
    def _for(items: list[Any], model: str) -> list[Any]:
        scoped = [item for item in items if item.model == model]
        return scoped or [item for item in items if item.model is None]

    def unused(self) -> list[str]:
        return [item.describe() for item in (*self.answers, *self.errors) if not item.used]

    def to_data(self) -> dict[str, Any]:
        """The JSON form (failure kinds only: an exception instance cannot leave the process)."""
        answers = []
        for a in self.answers:
            what: dict[str, Any] = {"json": a.json} if a.has_json else {"text": a.text} if a.text is not None else {}
            if a.tool_calls:
                what = {"tool_calls": [dict(c) for c in a.tool_calls]}
            answers.append({"model": a.model, **what, "reasoning": a.reasoning, "used": a.used})
        errors = [
            {"model": e.model, "kind": e.error, "times": "always" if e.times is None else e.times, "used": e.used}
            for e in self.errors
        ]
        expect_key = self.expect_key.model_dump(mode="json", exclude_none=True) if self.expect_key else None
        made = {"answers": answers, "errors": errors, "expect_key": expect_key}
        return made | ({"chaos": {**self.chaos.to_data(), "used": self.chaos_used}} if self.chaos else {})

    @classmethod
    def from_data(cls, data: Any) -> Answers:
        """Read the JSON form; ``ValueError`` names the item and field that is wrong (``answers.0: ...``)."""
        if not isinstance(data, dict):
            raise ValueError("body: must be an object with 'answers' and 'errors' lists")
        made = cls()
        for name in ("answers", "errors"):
            items = data.get(name, [])
            if not isinstance(items, list):
                raise ValueError(f"{name}: must be a list")
            for i, item in enumerate(items):
                try:
                    if not isinstance(item, dict):
                        raise TypeError("must be an object")
                    if not isinstance(item.get("model"), str | None):
                        raise TypeError("model must be a string or null")
                    if name == "answers":
                        entry: Any = make_answer(
                            item.get("model"), item.get("text"), item.get("json"), "json" in item,
                            item.get("tool_calls"), item.get("reasoning"),
                        )  # fmt: skip
                    else:
                        if not isinstance(item.get("kind"), str):
                            raise TypeError(f"kind must be one of {', '.join(FAILURE_KINDS)}")
                        entry = make_error(item.get("model"), item["kind"], item.get("times", 1))
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"{name}.{i}: {exc}") from None
                entry.used = item.get("used", 0) if isinstance(item.get("used", 0), int) else 0
                (made.answers if name == "answers" else made.errors).append(entry)
        if data.get("expect_key") is not None:
            try:
                made.expect_key = ExpectKey.model_validate(data["expect_key"])
            except ValidationError as exc:
                err = exc.errors()[0]
                raise ValueError(".".join(str(p) for p in ("expect_key", *err["loc"])) + f": {err['msg']}") from None
        if data.get("chaos") is not None:
            made.chaos = chaos.from_data(data["chaos"])
            used = data["chaos"].get("used", 0)
            made.chaos_used = used if isinstance(used, int) and not isinstance(used, bool) and used >= 0 else 0
        return made


def play(
    entry: Answer | Error, request: ChatRequest, index: int, signature_key: str
) -> tuple[Decision, Failure | None]:
    """What a configured answer or failure kind gives a request: the decision (its reply; for a failure, the reply
    a cut connection cuts) and the failure to serve, if any."""
    if isinstance(entry, Error):
        reply = lorem_reply(request, False, signature_key)
        return Decision("configured", "", request.turn, reply), entry.failure()  # type: ignore[arg-type]
    if entry.has_json:  # checked against what the request asks, as a structured turn is
        asked_for, why = structured.check(entry.json, request)
        if why:
            problem = f"The request asks for {asked_for}; {entry.describe()} fails it: {why}"
            reply = validation_reply(request, problem, f"configured:{index}", signature_key)
            return Decision("configured", "", request.turn, reply, problem=problem), None  # type: ignore[arg-type]
    reply = tokens.finished(reply_for(entry, request, index), request)
    return Decision("configured", "", request.turn, reply), None  # type: ignore[arg-type]


def reply_for(answer: Answer, request: ChatRequest, index: int) -> Reply:
    """The reply a configured answer gives this request: a JSON answer is served as a scenario's ``structured``
    turn is (:mod:`harnessweb.engine.structured`: the required tool's arguments, else its JSON text)."""
    blocks: list[Block] = []
    if answer.reasoning:
        blocks.append(Block("reasoning", text=answer.reasoning))
    seed = f"configured:{index}:{conversation_seed(request)}"
    calls = list(answer.tool_calls)
    if answer.has_json:  # served as a scenario's structured turn is: one mechanism
        blocks.extend(structured.blocks(answer.json, request, seed))
    elif answer.text is not None:
        blocks.append(Block("text", text=answer.text))
    for i, call in enumerate(calls):
        call_id = call["id"] or f"call_{seed[-12:]}{i}"
        blocks.append(Block("tool_call", call_id=call_id, name=call["name"], arguments=call["arguments"]))
    usage = tokens.counted(request, tuple(blocks), (None, None, None))
    finish = "tool_calls" if any(b.type == "tool_call" for b in blocks) else "stop"
    return Reply(tuple(blocks), finish, usage, id_seed=seed)
