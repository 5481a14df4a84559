"""The engine: given the catalog of scenarios and one parsed request, decide the answer.

Pure and deterministic: no Django, no I/O, no clock. The endpoints parse a request into a neutral
:class:`~harnessweb.engine.exchange.ChatRequest`, call :func:`decide`, and encode the
:class:`~harnessweb.engine.exchange.Decision` for their protocol. Here: the catalog, scenario selection (header, first
user message, match rules), scripted turns (turn = assistant messages + 1) with their expectations
(:mod:`harnessweb.engine.expectations`) and failures; without a scenario, :mod:`harnessweb.engine.fallback` answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from harnessweb.engine import structured, tokens
from harnessweb.engine.exchange import (
    ALWAYS,
    FALLBACK_CHUNK_WORDS,
    Block,
    ChatRequest,
    Decision,
    Failure,
    InvalidRequest,
    NothingMatched,
    Reply,
    ScenarioNotFound,
    Usage,
    evolved,
    sanitize_tool_name,
    short_id,
    sign_thinking,
)
from harnessweb.engine.expectations import key_expectations, system_prompt_expectations, turn_expectations
from harnessweb.engine.fallback import instruction_reply, lorem_reply, parse_instruction
from harnessweb.engine.schemas import (
    DefaultUsage,
    EmbeddingPin,
    ExpectKey,
    FailureScope,
    FinalReportResponse,
    Scenario,
    ScenarioTurn,
    StructuredResponse,
    TextResponse,
    ToolCallResponse,
)

FINAL_REPORT_TOOL = "agent__final_report"
FINAL_REPORT_CALL_ID = "agent-final-report"
# ---------------------------------------------------------------------------------------------------------------
# Selection


@dataclass(frozen=True)
class Catalog:
    """The scenarios the server serves, indexed once per change of the catalog."""

    by_id: dict[str, Scenario]
    matchers: tuple[Scenario, ...]  # scenarios with match rules, best first
    # Embedding pins by input text (the first scenario by id that pins a text wins).
    pins: dict[str, EmbeddingPin] = field(default_factory=dict)
    # Replies of scripted turns, built once per catalog: the same turn always gets the same reply (and, through
    # the encoders' caches, the same bytes). Not a structured turn's: its reply follows each request.
    replies: dict[tuple[str, int, bool, str], Reply] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def build(cls, scenarios: list[Scenario]) -> Catalog:
        by_id = {s.id: s for s in scenarios}
        matchers = tuple(sorted((s for s in scenarios if s.match is not None), key=lambda s: (-s.priority, s.id)))
        pins: dict[str, EmbeddingPin] = {}
        for scenario in sorted(scenarios, key=lambda s: s.id):
            for pin in scenario.embeddings:
                pins.setdefault(pin.input, pin)
        return cls(by_id=by_id, matchers=matchers, pins=pins)


def _matches(scenario: Scenario, request: ChatRequest) -> bool:
    rules = scenario.match
    assert rules is not None
    if rules.model is not None and rules.model != request.model:
        return False
    if rules.system_contains is not None and rules.system_contains not in request.system:
        return False
    if rules.first_user_contains is not None and rules.first_user_contains not in request.first_user:
        return False
    if rules.first_user_regex is not None and not re.search(rules.first_user_regex, request.first_user):
        return False
    if rules.last_user_contains is not None and rules.last_user_contains not in request.last_user:
        return False
    if rules.last_user_regex is not None and not re.search(rules.last_user_regex, request.last_user):
        return False
    offered = {sanitize_tool_name(t) for t in request.tools}
    return all(sanitize_tool_name(t) in offered for t in rules.tools_include)


def select_scenario(catalog: Catalog, request: ChatRequest, header_id: str | None) -> tuple[Scenario | None, str]:
    """The scenario a request plays, and how it was chosen. Raises ScenarioNotFound for an unknown header id."""
    if header_id:
        scenario = catalog.by_id.get(header_id)
        if scenario is None:
            raise ScenarioNotFound(header_id)
        return scenario, "header"
    scenario = catalog.by_id.get(request.first_user.strip())
    if scenario is not None:
        return scenario, "first user message"
    for candidate in catalog.matchers:
        if _matches(candidate, request):
            return candidate, "match rules"
    return None, ""


# ---------------------------------------------------------------------------------------------------------------
# Scenario playback


def _error_turn(turn: int, message: str, *, assistant_text: str, heading: str) -> ScenarioTurn:
    return ScenarioTurn(
        turn=turn,
        response=FinalReportResponse(
            kind="final-report",
            assistant_text=assistant_text,
            report_content=f"# {heading}\n\n{message}",
            report_format="markdown",
            status="failure",
        ),
    )


def _blocks_for(
    step: ScenarioTurn, id_seed: str, signature_key: str, request: ChatRequest | None = None
) -> tuple[tuple[Block, ...], bool]:
    response = step.response
    blocks = [
        # Redacted thinking shows no text anywhere, whatever text the entry holds.
        Block(type="reasoning", redacted=seg.redacted_data)
        if seg.redacted_data
        else Block(type="reasoning", text=seg.text, signature=seg.signature or sign_thinking(seg.text, signature_key))
        for seg in response.reasoning
    ]
    has_tools = False
    if isinstance(response, TextResponse):
        blocks.append(Block(type="text", text=response.assistant_text))
    elif isinstance(response, StructuredResponse):  # where the request asks for it (a structured turn needs one)
        blocks.extend(structured.blocks(response.data, request or ChatRequest("", ""), id_seed))
        has_tools = any(b.type == "tool_call" for b in blocks)
    elif isinstance(response, ToolCallResponse):
        has_tools = True
        if response.assistant_text:
            blocks.append(Block(type="text", text=response.assistant_text))
        for index, call in enumerate(response.tool_calls):
            if call.assistant_text:
                blocks.append(Block(type="text", text=call.assistant_text))
            blocks.append(
                Block(
                    type="tool_call",
                    call_id=call.call_id or f"call_{short_id(f'{id_seed}:{index}')}",
                    derived_id=call.call_id is None,
                    name=call.tool_name,
                    arguments=orjson.dumps(call.arguments).decode(),
                )
            )
    else:
        has_tools = True
        if response.assistant_text:
            blocks.append(Block(type="text", text=response.assistant_text))
        arguments: dict[str, Any] = {
            "status": response.status,
            "report_format": response.report_format,
            "report_content": response.report_content,
        }
        if response.report_content_json is not None:
            arguments["content_json"] = response.report_content_json
        blocks.append(
            Block(
                type="tool_call",
                call_id=FINAL_REPORT_CALL_ID,
                name=FINAL_REPORT_TOOL,
                arguments=orjson.dumps(arguments).decode(),
            )
        )
    return tuple(blocks), has_tools


_FINISH_ALIASES = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool-calls": "tool_calls",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
}


def _scenario_reply(
    scenario: Scenario, step: ScenarioTurn, pacing_enabled: bool, signature_key: str, request: ChatRequest | None = None
) -> Reply:
    id_seed = f"{scenario.id}:{step.turn}"
    blocks, has_tools = _blocks_for(step, id_seed, signature_key, request)
    finish = _FINISH_ALIASES.get(step.finish_reason or "", "tool_calls" if has_tools else "stop")
    pacing = scenario.pacing
    usage = step.usage
    return Reply(
        blocks=blocks,
        finish=finish,  # type: ignore[arg-type]
        usage=Usage(0, 0, 0),  # counted per request (harnessweb.engine.tokens.finished)
        chunk_words=pacing.chunk_words if pacing else FALLBACK_CHUNK_WORDS,
        interval_ms=pacing.interval_ms if (pacing and pacing_enabled) else 0,
        id_seed=id_seed,
        authored_usage=(usage.input_tokens, usage.output_tokens, usage.total_tokens) if usage else (None, None, None),
        image=step.image or "",
    )


_DEFAULT_FAILURE_MESSAGES = {
    "timeout": "Simulated timeout",
    "invalid_response": "Simulated invalid response",
    "network_error": "Simulated network error",
    "rate_limit": "Rate limit exceeded (simulated)",
    "model_error": "Simulated model error",
    "auth_error": "Invalid API key provided (simulated)",
    "permission_error": "Your API key does not have permission to use this resource (simulated)",
    "not_found": "The model does not exist or you do not have access to it (simulated)",
    "bad_request": "Invalid request (simulated)",
    "request_too_large": "Request exceeds the maximum allowed number of bytes (simulated)",
    "server_error": "Internal server error (simulated)",
    "bad_gateway": "Bad gateway (simulated)",
    "unavailable": "The service is temporarily unavailable (simulated)",
    "overloaded": "The API is temporarily overloaded (simulated)",
}


def failure_of(
    status: str,
    message: str | None = None,
    *,
    retryable: bool = True,
    retry_after_ms: int | None = None,
    error: dict[str, Any] | None = None,
    http_status: int | None = None,
    throws: bool = False,
) -> Failure:
    """A failure of one of the schema's kinds, with the default message and (for a rate limit) ``Retry-After``."""
    if status == "rate_limit" and retry_after_ms is None:
        retry_after_ms = 1000
    default = _DEFAULT_FAILURE_MESSAGES.get(status, f"Simulated failure: {status}")
    return Failure(status, message or default, retryable, retry_after_ms, error, http_status, throws)


def _failure(step: ScenarioTurn) -> Failure:
    # Seed 000 throws Error(failureMessage ?? "Simulated failure") from its provider: on the wire, a dropped connection.
    thrown = bool(step.failure_throws)
    return failure_of(
        "network_error" if thrown else step.failure_status,
        step.failure_message or ("Simulated failure" if thrown else None),
        throws=thrown,
        retryable=step.failure_retryable,
        retry_after_ms=step.failure_retry_after_ms,
        error=step.failure_error,
        http_status=step.failure_http_status,
    )


def in_scope(scope: FailureScope | None, request: ChatRequest) -> bool:
    """Whether a turn's failure applies to this request: no scope, or every list the scope gives holds the
    request's protocol, model and key fingerprint."""
    if scope is None:
        return True
    return all(
        not allowed or value in allowed
        for allowed, value in (
            (scope.protocol, request.family or request.protocol),
            (scope.model, request.model),
            (scope.key_fingerprint, request.key_fingerprint),
        )
    )


def counter_key(scenario_id: str, scope: FailureScope | None, request: ChatRequest) -> str:
    """The provider a turn's failure attempts are counted for (beside the run and the turn): the scenario and the
    protocol, with the model and the key's fingerprint where the scope names them, so that each provider a client
    tries fails as often as the turn says. At most 20 characters: the protocol readable, then a digest."""
    protocol = request.family or request.protocol
    parts = [scenario_id, protocol]
    if scope is not None and scope.model:
        parts.append(request.model)
    if scope is not None and scope.key_fingerprint:
        parts.append(request.key_fingerprint)
    return f"{protocol[:11]}:{short_id(chr(31).join(parts), 8)}"


def _play_scenario(
    catalog: Catalog, scenario: Scenario, request: ChatRequest, pacing_enabled: bool, signature_key: str, how: str
) -> Decision:
    turn = request.turn
    notes = (f"scenario {scenario.id} chosen by {how}",)
    missing = [row.expected for row in system_prompt_expectations(scenario, request) if not row.ok]
    problem = f"System prompt missing: {', '.join(missing)}" if missing else ""
    problem = problem or next((r.problem for r in key_expectations(scenario.expect_key, request) if not r.ok), "")
    if problem:
        step = _error_turn(turn, problem, assistant_text="Scenario validation failed.", heading="Test Harness Error")
    else:
        step = scenario.turn(turn)
        if step is None:
            problem = f"Scenario {scenario.id} defines no turn {turn} (it has {len(scenario.turns)} turns)"
            step = _error_turn(
                turn, problem, assistant_text="Encountered scenario mismatch.", heading="Scenario Failure"
            )
        else:
            validation = next((row.problem for row in turn_expectations(step, request) if not row.ok), "")
            if validation:
                problem = validation
                step = _error_turn(
                    turn, problem, assistant_text="Scenario validation failed.", heading="Test Harness Error"
                )
    if problem:
        reply = _scenario_reply(scenario, step, pacing_enabled, signature_key)
        return Decision("scenario", scenario.id, turn, reply, problem=problem, notes=notes)
    if isinstance(step.response, StructuredResponse):
        # Its blocks follow what each request asks for (tools, schema): built each time, as cheap as it is, rather
        # than kept per schema in a cache a long-running server would grow without bound.
        reply = _scenario_reply(scenario, step, pacing_enabled, signature_key, request)
    else:
        key = (scenario.id, turn, pacing_enabled, signature_key)
        reply = catalog.replies.get(key) or catalog.replies.setdefault(
            key, _scenario_reply(scenario, step, pacing_enabled, signature_key)
        )
    if request.choices > 1:  # every choice answers as scripted
        reply = replace(reply, blocks=tuple(replace(b, choice=i) for i in range(request.choices) for b in reply.blocks))
    return Decision(
        "scenario",
        scenario.id,
        turn,
        reply,
        failure=_failure(step) if step.failures_before_success and in_scope(step.failure_scope, request) else None,
        failures_before_success=ALWAYS if step.failures_before_success == "always" else step.failures_before_success,
        counter=counter_key(scenario.id, step.failure_scope, request),
        completes_run=turn == scenario.last_turn,
        scripted_turns=tuple(t.turn for t in scenario.turns),
        notes=notes,
    )


def check_key(decision: Decision, request: ChatRequest, expected: ExpectKey | None, signature_key: str) -> Decision:
    """A decision checked against the key a test expects of every request (the plugin's ``expect_key``, a run
    script's): unchanged when the request carries that key (or already fails validation), else the validation
    failure naming where the key came and its fingerprint, served as the failure report, with no failure."""
    problem = next((row.problem for row in key_expectations(expected, request) if not row.ok), "")
    if not problem or decision.problem:
        return decision
    reply = validation_reply(request, problem, f"key:{decision.scenario_id}", signature_key)
    reply = replace(reply, chunk_words=decision.reply.chunk_words, id_seed=f"key:{request.turn}")
    return replace(decision, reply=reply, problem=problem, failure=None, failures_before_success=0, completes_run=False)


def validation_reply(request: ChatRequest, problem: str, seed: str, signature_key: str) -> Reply:
    """The validation failure a request gets instead of an answer that fails its checks: the failure report naming
    the problem, its usage counted."""
    step = _error_turn(
        request.turn, problem, assistant_text="Scenario validation failed.", heading="Test Harness Error"
    )
    blocks, _ = _blocks_for(step, f"{seed}:{request.turn}", signature_key)
    return Reply(blocks, "tool_calls", tokens.counted(request, blocks), id_seed=f"{seed}:{request.turn}")


# ---------------------------------------------------------------------------------------------------------------
# The entry point


def check_thinking_signatures(request: ChatRequest, scenario: Scenario | None, key: str) -> None:
    """Refuse thinking blocks sent back without their signature or with an altered one, as the real API does."""
    authored = set()
    if scenario is not None:
        authored = {(seg.text, seg.signature) for t in scenario.turns for seg in t.response.reasoning if seg.signature}
    for message in request.messages:
        for block in message.thinking:
            if not block.signature:
                raise InvalidRequest(f"{block.where}.signature: Field required")
            if block.signature != sign_thinking(block.text, key) and (block.text, block.signature) not in authored:
                raise InvalidRequest(f"{block.where}: Invalid `signature` in `thinking` block")


def decide(
    catalog: Catalog,
    request: ChatRequest,
    *,
    header_scenario: str | None = None,
    pacing_enabled: bool = True,
    signature_key: str = "",
    unmatched_error: bool = False,
    default_usage: DefaultUsage = "counted",
) -> Decision:
    """Decide what a request gets: a scenario's turn, an instructed answer, or the deterministic lorem (or, with
    ``unmatched_error``, :class:`NothingMatched` instead of the lorem).

    ``default_usage`` (the server's ``HARNESS_DEFAULT_USAGE``) is the usage of answers that set none, unless the
    scenario played says its own ``default_usage``.

    Raises :class:`ScenarioNotFound` for an unknown ``X-Harness-Scenario`` id and :class:`InvalidRequest` for a
    request the real provider would refuse.
    """
    decision = _decide(catalog, request, header_scenario, pacing_enabled, signature_key, unmatched_error)
    own = getattr(catalog.by_id.get(decision.scenario_id), "default_usage", None)  # the scenario played says first
    default = tokens.default_counts(default_usage if own is None else own)
    if decision.problem:  # a failure report is served whole
        usage = tokens.counted(request, decision.reply.blocks, default)
        return replace(decision, reply=replace(decision.reply, usage=usage))
    served = tokens.finished(decision.reply, request, default)
    # The same reply (nothing cut, its usage as counted) keeps the decision.
    return decision if served is decision.reply else evolved(decision, reply=served)


def _decide(
    catalog: Catalog,
    request: ChatRequest,
    header_scenario: str | None,
    pacing_enabled: bool,
    signature_key: str,
    unmatched_error: bool,
) -> Decision:
    scenario, how = select_scenario(catalog, request, header_scenario)
    check_thinking_signatures(request, scenario, signature_key)
    if scenario is not None and request.model_missing:
        raise InvalidRequest("model: you must provide a model parameter (a scenario plays only a named model)")
    if scenario is not None:
        return _play_scenario(catalog, scenario, request, pacing_enabled, signature_key, how)
    instruction, why_not = parse_instruction(request.last_user)
    if instruction is not None:
        reply = instruction_reply(instruction, request, pacing_enabled, signature_key)
        return Decision("instruction", "", request.turn, reply, notes=("instruction block",))
    if unmatched_error:
        raise NothingMatched(_tried(catalog, request, why_not))
    notes = ("lorem fallback",) + ((f"instruction block ignored: {why_not}",) if why_not else ())
    return Decision("lorem", "", request.turn, lorem_reply(request, pacing_enabled, signature_key), notes=notes)


def _tried(catalog: Catalog, request: ChatRequest, why_not: str) -> str:
    """What selection tried, for a request nothing answered: so a client that lost its conversation is told why."""
    first = request.first_user.strip()
    shown = first if len(first) <= 80 else first[:77] + "..."
    instruction = f"its instruction block is ignored ({why_not})" if why_not else "there is no instruction block"
    return (
        "No scenario answers this request: no X-Harness-Scenario header; "
        f"the first user message {shown!r} is no scenario id; "
        f"the match rules of {len(catalog.matchers)} scenario(s) do not hold; {instruction}"
    )
