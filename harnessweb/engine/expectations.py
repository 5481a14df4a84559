"""A scenario's expectations of a request (system prompt, API key, tools offered, temperature, top_p, reasoning, and a
turn's ``expect`` block on the conversation the client sent: its last message, the results of the previous answer's
tool calls, the earlier messages kept, the system prompt), each checked into a row that says what was expected,
what came, and the seed's failure message when it is not met.

The engine fails a turn with the first unmet row's message; the run page shows every row. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from harnessweb.engine import shapes, structured
from harnessweb.engine.exchange import ChatRequest, sanitize_tool_name
from harnessweb.engine.mcp_schema import McpConfig, arguments_match
from harnessweb.engine.schemas import ExpectKey, Scenario, ScenarioTurn, TurnExpect

TOLERANCE = 1e-6
KEY_PROBLEM = "Expected the API key"  # how a key's problem begins (the plugin fails a test on it)


def _js(value: float | None) -> str:
    """A number as the seed's messages print it (JavaScript): 1 not 1.0, undefined for a missing value."""
    if value is None:
        return "undefined"
    return str(int(value)) if float(value).is_integer() else repr(value)


@dataclass(frozen=True)
class Expectation:
    """One expectation of a scenario checked against a request: what was expected beside what came, and, when it
    is not met, the problem the seed's failure report states (``problem`` is empty for a met one)."""

    what: str
    expected: str
    actual: str
    ok: bool
    problem: str = ""


def _shown(value: float | None) -> str:
    return "not sent" if value is None else _js(value)


def system_prompt_expectations(scenario: Scenario, request: ChatRequest) -> list[Expectation]:
    """One row per fragment the scenario's system prompt must include."""
    return fragment_expectations(scenario.system_prompt_must_include, request)


def fragment_expectations(fragments: list[str], request: ChatRequest) -> list[Expectation]:
    """One row per fragment the request's system prompt must include (a scenario's, or a turn's ``expect``)."""
    rows = []
    for fragment in fragments:
        present = fragment in request.system
        problem = "" if present else f"System prompt missing: {fragment}"
        rows.append(
            Expectation("System prompt includes", fragment, "present" if present else "missing", present, problem)
        )
    return rows


def _where(place: str) -> str:
    return "the ?key query parameter" if place.startswith("?") else f"the {place} header"


def key_expectations(expected: ExpectKey | None, request: ChatRequest) -> list[Expectation]:
    """One row when a key is expected (a scenario's ``expect_key``, or the plugin's ``harness.expect_key``): met
    when the request's key has that fingerprint (and came in that place, if one is given). The row and its problem
    name where the key came and its fingerprint, never the key."""
    if expected is None:
        return []
    wanted = f"fingerprint {expected.fingerprint}" + (f" in {_where(expected.place)}" if expected.place else "")
    got = f"fingerprint {request.key_fingerprint} in {_where(request.key_place)}" if request.key_fingerprint else ""
    ok = bool(got) and request.key_fingerprint == expected.fingerprint and expected.place in (None, request.key_place)
    carried = f"the key with {got}" if got else "no API key"
    problem = "" if ok else f"{KEY_PROBLEM} with {wanted} but the request carried {carried}"
    return [Expectation("API key", wanted, got or "no key", ok, problem)]


def scenario_expectations(scenario: Scenario, request: ChatRequest) -> list[Expectation]:
    """What the scenario expects of every request, whatever its turn: its system prompt's fragments, its key."""
    return system_prompt_expectations(scenario, request) + key_expectations(scenario.expect_key, request)


def turn_expectations(step: ScenarioTurn, request: ChatRequest) -> list[Expectation]:
    """A turn's expectations of the request (tools offered, temperature, top_p, reasoning), in the order the seed
    checks them. Tools named ``agent__…`` are exempt; ``allow_missing_tools`` makes missing tools a met row."""
    rows = []
    if step.expected_tools:
        offered = {sanitize_tool_name(t) for t in request.tools}
        missing = [
            t for t in step.expected_tools if not t.startswith("agent__") and sanitize_tool_name(t) not in offered
        ]
        expected = ", ".join(step.expected_tools) + (" (missing allowed)" if step.allow_missing_tools else "")
        actual = ", ".join(request.tools) or "no tools"
        if missing:
            actual += f" — missing {', '.join(missing)}"
        ok = step.allow_missing_tools or not missing
        problem = "" if ok else f"Expected tools not available: {', '.join(missing)}"
        rows.append(Expectation("Tools offered", expected, actual, ok, problem))
    for what, seed_name, expected_value, got in (
        ("temperature", "temperature", step.expected_temperature, request.temperature),
        ("top_p", "topP", step.expected_top_p, request.top_p),
    ):
        if expected_value is not None:
            ok = got is not None and abs(got - expected_value) <= TOLERANCE
            problem = "" if ok else f"Expected {seed_name} {_js(expected_value)} but received {_js(got)}"
            rows.append(Expectation(what, _shown(expected_value), _shown(got), ok, problem))
    rows += demand_expectations(step, request)
    rows += conversation_expectations(step.expect, request) if step.expect is not None else []
    if step.expected_reasoning:
        got_reasoning = "enabled" if request.reasoning_enabled else "disabled"
        ok = got_reasoning == step.expected_reasoning
        if ok:
            problem = ""
        elif step.expected_reasoning == "enabled":
            problem = "Expected reasoning to remain enabled"
        else:
            problem = "Expected reasoning to be disabled"
        rows.append(Expectation("Reasoning", step.expected_reasoning, got_reasoning, ok, problem))
    return rows


def _excerpt(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _last_said(request: ChatRequest) -> tuple[str, str] | None:
    """The role and text of the last user or tool message of the conversation, if there is one."""
    return next(((m.role, m.text) for m in reversed(request.messages) if m.role in ("user", "tool")), None)


def _unanswered(request: ChatRequest) -> tuple[list[str], list[str]] | None:
    """The previous answer's tool call ids, and those no later tool result carries; None without a previous
    answer."""
    for index in range(len(request.messages) - 1, -1, -1):
        if request.messages[index].role == "assistant":
            answered = {i for m in request.messages[index + 1 :] for i in m.result_ids}
            calls = list(request.messages[index].call_ids)
            return calls, [c for c in calls if c not in answered]
    return None


def conversation_expectations(expect: TurnExpect, request: ChatRequest) -> list[Expectation]:
    """A turn's ``expect`` block against the conversation the client sent (the neutral request, so every protocol
    alike): the last user or tool message's text, the previous answer's tool calls each answered by a result
    carrying its id, the number of messages before the last one (the system prompt not counted), the system
    prompt's fragments."""
    rows = []
    last = _last_said(request)
    where = f"the last {last[0]} message" if last else "no user or tool message"
    for what, wanted, found in (
        ("Last message contains", expect.last_message_contains, lambda t, w: w in t),
        ("Last message matches", expect.last_message_regex, lambda t, w: re.search(w, t) is not None),
    ):
        if wanted is None:
            continue
        ok = last is not None and found(last[1], wanted)
        verb = "contain" if what.endswith("contains") else "match"
        said = f"{where} reads {_excerpt(last[1])}" if last else f"the request has {where}"
        problem = "" if ok else f"Expected the last user or tool message to {verb} {wanted!r} but {said}"
        rows.append(Expectation(what, wanted, f"{where}: {_excerpt(last[1])}" if last else where, ok, problem))
    if expect.tool_calls_answered:
        found_calls = _unanswered(request)
        calls, missing = found_calls or ([], [])
        if found_calls is None:
            actual = "no previous answer"
        elif not calls:
            actual = "the previous answer called no tool"
        elif missing:
            actual = f"no result for {', '.join(missing)}"
        else:
            actual = f"results for {', '.join(calls)}"
        problem = f"Tool calls of the previous answer have no result carrying their id: {', '.join(missing)}"
        expected = "a result carrying each call's id"
        rows.append(Expectation("Tool calls answered", expected, actual, not missing, problem if missing else ""))
    if expect.min_earlier_messages is not None:
        earlier = max(len(request.messages) - 1, 0)
        ok = earlier >= expect.min_earlier_messages
        wanted_text = f"at least {expect.min_earlier_messages}"
        problem = "" if ok else f"Expected {wanted_text} earlier messages but the request carried {earlier}"
        rows.append(Expectation("Earlier messages", wanted_text, str(earlier), ok, problem))
    return rows + fragment_expectations(expect.system_prompt_must_include, request)


def _answers(step: ScenarioTurn) -> tuple[list[str], str | None]:
    """The tools a turn calls, and its text when it answers with text only."""
    response = step.response
    if response.kind == "tool-call":
        return [c.tool_name for c in response.tool_calls], None
    if response.kind == "final-report":
        return ["agent__final_report"], None
    return [], response.assistant_text


def demand_expectations(step: ScenarioTurn, request: ChatRequest) -> list[Expectation]:
    """What the request demands of the answer, against what the turn answers: a forced tool must be called, and
    under ``required`` / ``any`` one of the tools allowed (unless the turn ignores tool_choice); a structured output's
    text must be JSON valid against the requested schema; a structured turn's data must fit where it is served."""
    if step.response.kind == "structured":
        asked_for, why = structured.check(step.response.data, request)
        if not asked_for:
            return []
        problem = (
            f"The request asks for {asked_for}; turn {step.turn}'s structured answer fails it: {why}" if why else ""
        )
        return [Expectation("Structured output", asked_for, why or "valid", not why, problem)]
    rows = []
    called, text = _answers(step)
    if request.required_tools:
        allowed = request.required_tools
        # The row shows a forced tool's name as it is, the message quotes it; several read "one of 'a', 'b'" in both.
        expected = allowed[0] if len(allowed) == 1 else "one of " + ", ".join(f"'{t}'" for t in allowed)
        wanted = f"'{expected}'" if len(allowed) == 1 else expected
        names = {sanitize_tool_name(t) for t in allowed}
        ok = step.ignore_tool_choice or any(sanitize_tool_name(t) in names for t in called)
        actual = f"calls {', '.join(called)}" if called else "text"
        verb = "forces" if len(allowed) == 1 else "requires a call to"
        problem = "" if ok else f"tool_choice {verb} {wanted} but turn {step.turn} answers {actual}"
        rows.append(Expectation("Forced tool", expected, actual, ok, problem))
    if request.schema_json and text is not None:
        schema = orjson.loads(request.schema_json)
        name = schema.get("title") if isinstance(schema, dict) else None
        asked_for = f"JSON valid against {name!r}" if name else "JSON valid against the requested schema"
        try:
            why = shapes.problem(orjson.loads(text), schema)
        except orjson.JSONDecodeError:
            why = "the text is not JSON"
        problem = f"The request asks for {asked_for}; turn {step.turn}'s answer fails it: {why}" if why else ""
        rows.append(Expectation("Structured output", asked_for, why or "valid", not why, problem))
    return rows


def expectations(scenario: Scenario, step: ScenarioTurn | None, request: ChatRequest) -> list[Expectation]:
    """Every expectation the scenario has of this request: its system prompt's and its key's, then its turn's (if it
    has one)."""
    rows = scenario_expectations(scenario, request)
    return rows + turn_expectations(step, request) if step is not None else rows


def mcp_call_expectations(config: McpConfig, calls: list[tuple[str, str, dict[str, Any]]]) -> list[Expectation]:
    """One row per tool call a scenario's ``mcp.expect_calls`` names, against the calls the agent made (``calls``:
    server, tool and arguments, in the order made): met when a call of that tool (on that server, if named) carried
    each argument given, after the previous row's call when ``expect_order``."""
    rows = []
    after = 0  # (in order: where the next expected call is looked for)
    for number, wanted in enumerate(config.expect_calls, start=1):
        name = f"{wanted.server}.{wanted.tool}" if wanted.server else wanted.tool
        shown = f"{name} with {orjson.dumps(wanted.arguments).decode()}" if wanted.arguments else name
        same = [i for i, (on, tool, _) in enumerate(calls) if tool == wanted.tool and wanted.server in (None, on)]
        fits = [i for i in same if arguments_match(wanted.arguments, calls[i][2], "subset")]
        found = next((i for i in fits if i >= after), None) if config.expect_order else (fits or [None])[0]
        if found is not None:
            after = found + 1
            rows.append(Expectation(f"MCP call {number}", shown, f"call {found + 1} of {len(calls)}", True))
            continue
        if fits:
            actual = f"out of order: call {fits[-1] + 1} of {len(calls)}, before the call expected ahead of it"
            problem = f"Expected MCP tool {name} to be called after the calls listed before it, but it came before"
        elif same:
            carried = orjson.dumps(calls[same[-1]][2]).decode()
            actual = f"called with {carried}"
            wanted_arguments = shown.partition(" with ")[2]
            problem = f"Expected MCP tool {name} to be called with {wanted_arguments} but it was called with {carried}"
        else:
            actual, problem = "never called", f"Expected the agent to call MCP tool {shown} but it never did"
        rows.append(Expectation(f"MCP call {number}", shown, actual, False, problem))
    return rows
