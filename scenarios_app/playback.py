"""The engine: given the catalog of scenarios and one parsed request, decide the answer.

Pure and deterministic: no Django, no I/O, no clock. The endpoints parse a request into :class:`ChatRequest`,
call :func:`decide`, and encode the :class:`Decision` for their protocol. Rules come from the scenario harness
(scenario selection, turn = assistant messages + 1, validations as failure final reports, simulated failures)
and from the server test mode (instruction blocks, the deterministic lorem fallback with its echo).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from scenarios_app.schemas import FinalReportResponse, Scenario, ScenarioTurn, TextResponse, ToolCallResponse

FINAL_REPORT_TOOL = "agent__final_report"
FINAL_REPORT_CALL_ID = "agent-final-report"
INSTRUCTION_START = "<|instruction_start|>"
INSTRUCTION_END = "<|instruction_end|>"
REASON_MARKER = "\nReason:"
# Server test mode: 5-word chunks at 50 words a second.
FALLBACK_CHUNK_WORDS = 5
FALLBACK_INTERVAL_MS = 100
TOLERANCE = 1e-6

LOREM_WORDS = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
    "ut",
    "enim",
    "ad",
    "minim",
    "veniam",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
    "nisi",
    "ut",
    "aliquip",
    "ex",
    "ea",
    "commodo",
    "consequat",
    "duis",
    "aute",
    "irure",
    "dolor",
    "in",
    "reprehenderit",
    "in",
    "voluptate",
    "velit",
    "esse",
    "cillum",
    "dolore",
    "eu",
    "fugiat",
    "nulla",
    "pariatur",
    "excepteur",
    "sint",
    "occaecat",
    "cupidatat",
    "non",
    "proident",
    "sunt",
    "in",
    "culpa",
    "qui",
    "officia",
    "deserunt",
    "mollit",
    "anim",
    "id",
    "est",
    "laborum",
]


# ---------------------------------------------------------------------------------------------------------------
# The neutral request


@dataclass(frozen=True)
class Thinking:
    """A thinking block a client sent back inside an assistant message (Anthropic only)."""

    text: str
    signature: str | None
    where: str  # e.g. "messages.1.content.0", for the error message


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant", "tool"]
    text: str = ""
    thinking: tuple[Thinking, ...] = ()


@dataclass(frozen=True)
class ChatRequest:
    """One request in a protocol-neutral shape, as the wire parsers produce it."""

    protocol: str
    model: str
    system: str = ""
    messages: tuple[Message, ...] = ()
    tools: tuple[str, ...] = ()
    temperature: float | None = None
    top_p: float | None = None
    reasoning_enabled: bool = False
    stream: bool = False
    include_usage: bool = False

    @property
    def turn(self) -> int:
        return sum(1 for m in self.messages if m.role == "assistant") + 1

    def user_texts(self) -> list[str]:
        return [m.text for m in self.messages if m.role == "user"]

    @property
    def first_user(self) -> str:
        texts = self.user_texts()
        return texts[0] if texts else ""

    @property
    def last_user(self) -> str:
        texts = self.user_texts()
        return texts[-1] if texts else ""


# ---------------------------------------------------------------------------------------------------------------
# The neutral answer


@dataclass(frozen=True)
class Block:
    """One content block: text, reasoning (with its signature) or a tool call (arguments as JSON text)."""

    type: Literal["text", "reasoning", "tool_call"]
    text: str = ""
    signature: str = ""
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    derived_id: bool = False  # the call id was derived (``call_…``), not authored: encoders may re-prefix it
    choice: int = 0  # OpenAI choice index; instruction mode gives each message its own


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class Reply:
    blocks: tuple[Block, ...]
    finish: Literal["stop", "tool_calls", "length"]
    usage: Usage
    chunk_words: int = FALLBACK_CHUNK_WORDS
    interval_ms: int = 0
    id_seed: str = ""  # deterministic seed for response and tool call ids

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if b.type == "text")

    @property
    def reasoning(self) -> str:
        return "".join(b.text for b in self.blocks if b.type == "reasoning")

    @property
    def tool_calls(self) -> list[dict[str, str]]:
        return [
            {"id": b.call_id, "name": b.name, "arguments": b.arguments} for b in self.blocks if b.type == "tool_call"
        ]


@dataclass(frozen=True)
class Failure:
    status: str
    message: str
    retryable: bool
    retry_after_ms: int | None
    error: dict[str, Any] | None = None


@dataclass(frozen=True)
class Decision:
    mode: Literal["scenario", "instruction", "lorem"]
    scenario_id: str
    turn: int
    reply: Reply
    # Serve ``failure`` for the first ``failures_before_success`` attempts at this turn.
    failure: Failure | None = None
    failures_before_success: int = 0
    problem: str = ""  # validation failure or scenario mismatch: the run fails with this reason
    completes_run: bool = False  # the last scripted turn, served as scripted
    scripted_turns: tuple[int, ...] = ()  # every turn the scenario defines: a run passes only if all were served
    notes: tuple[str, ...] = field(default_factory=tuple)


class ScenarioNotFound(Exception):
    """The request named a scenario (header) that the catalog does not hold."""


class InvalidRequest(Exception):
    """The request is well-formed JSON but the provider would refuse it (e.g. a tampered thinking signature)."""


# ---------------------------------------------------------------------------------------------------------------
# Helpers


def stable_hash(text: str) -> int:
    """FNV-1a over UTF-8, as a signed 32-bit integer: the same on every platform and run."""
    h = 0x811C9DC5
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def short_id(seed: str, length: int = 24) -> str:
    """A deterministic id fragment for response and tool call ids."""
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:length]


def sign_thinking(text: str, key: str) -> str:
    """The deterministic signature the Anthropic endpoint gives a thinking block."""
    return base64.b64encode(hmac.new(key.encode(), text.encode("utf-8"), hashlib.sha256).digest()).decode()


def lorem(count: int) -> str:
    return " ".join(LOREM_WORDS[i % len(LOREM_WORDS)] for i in range(count))


def lorem_length(message: str) -> int:
    return 5 + abs(stable_hash(message)) % 496


def word_chunks(text: str, words: int) -> list[str]:
    """Split text into chunks of ``words`` words; joining the chunks gives the text back exactly."""
    pieces = re.findall(r"\s*\S+", text)
    tail = text[sum(map(len, pieces)) :]
    if tail:  # trailing whitespace rides with the last word
        if pieces:
            pieces[-1] += tail
        else:
            pieces = [tail]
    return ["".join(pieces[i : i + words]) for i in range(0, len(pieces), words)]


def sanitize_tool_name(name: str) -> str:
    """Tool names as providers accept them: letters, digits, ``_`` and ``-``; anything else becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name.strip())


def _count_words(*texts: str) -> int:
    return sum(len(t.split()) for t in texts)


# ---------------------------------------------------------------------------------------------------------------
# Selection


@dataclass(frozen=True)
class Catalog:
    """The scenarios the server serves, indexed once per change of the catalog."""

    by_id: dict[str, Scenario]
    matchers: tuple[Scenario, ...]  # scenarios with match rules, best first
    # Replies of scripted turns, built once per catalog: the same turn always gets the same reply (and, through
    # the encoders' caches, the same bytes).
    replies: dict[tuple[str, int, bool, str], Reply] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def build(cls, scenarios: list[Scenario]) -> Catalog:
        by_id = {s.id: s for s in scenarios}
        matchers = tuple(sorted((s for s in scenarios if s.match is not None), key=lambda s: (-s.priority, s.id)))
        return cls(by_id=by_id, matchers=matchers)


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
    rows = []
    for fragment in scenario.system_prompt_must_include:
        present = fragment in request.system
        problem = "" if present else f"System prompt missing: {fragment}"
        rows.append(
            Expectation("System prompt includes", fragment, "present" if present else "missing", present, problem)
        )
    return rows


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


def expectations(scenario: Scenario, step: ScenarioTurn | None, request: ChatRequest) -> list[Expectation]:
    """Every expectation the scenario has of this request: its system prompt's, then its turn's (if it has one)."""
    rows = system_prompt_expectations(scenario, request)
    return rows + turn_expectations(step, request) if step is not None else rows


def _blocks_for(step: ScenarioTurn, id_seed: str, signature_key: str) -> tuple[tuple[Block, ...], bool]:
    response = step.response
    blocks = [
        Block(type="reasoning", text=seg.text, signature=seg.signature or sign_thinking(seg.text, signature_key))
        for seg in response.reasoning
    ]
    has_tools = False
    if isinstance(response, TextResponse):
        blocks.append(Block(type="text", text=response.assistant_text))
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


def _scenario_reply(scenario: Scenario, step: ScenarioTurn, pacing_enabled: bool, signature_key: str) -> Reply:
    id_seed = f"{scenario.id}:{step.turn}"
    blocks, has_tools = _blocks_for(step, id_seed, signature_key)
    finish = _FINISH_ALIASES.get(step.finish_reason or "", "tool_calls" if has_tools else "stop")
    pacing = scenario.pacing
    return Reply(
        blocks=blocks,
        finish=finish,  # type: ignore[arg-type]
        usage=Usage(step.usage.input_tokens, step.usage.output_tokens, step.usage.total_tokens),
        chunk_words=pacing.chunk_words if pacing else FALLBACK_CHUNK_WORDS,
        interval_ms=pacing.interval_ms if (pacing and pacing_enabled) else 0,
        id_seed=id_seed,
    )


_DEFAULT_FAILURE_MESSAGES = {
    "timeout": "Simulated timeout",
    "invalid_response": "Simulated invalid response",
    "network_error": "Simulated network error",
    "rate_limit": "Rate limit exceeded (simulated)",
    "model_error": "Simulated model error",
}


def _failure(step: ScenarioTurn) -> Failure:
    retry_after = step.failure_retry_after_ms
    if step.failure_status == "rate_limit" and retry_after is None:
        retry_after = 1000
    return Failure(
        status=step.failure_status,
        message=step.failure_message or _DEFAULT_FAILURE_MESSAGES[step.failure_status],
        retryable=step.failure_retryable,
        retry_after_ms=retry_after,
        error=step.failure_error,
    )


def _play_scenario(
    catalog: Catalog, scenario: Scenario, request: ChatRequest, pacing_enabled: bool, signature_key: str, how: str
) -> Decision:
    turn = request.turn
    notes = (f"scenario {scenario.id} chosen by {how}",)
    missing = [row.expected for row in system_prompt_expectations(scenario, request) if not row.ok]
    problem = f"System prompt missing: {', '.join(missing)}" if missing else ""
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
    key = (scenario.id, turn, pacing_enabled, signature_key)
    reply = catalog.replies.get(key) or catalog.replies.setdefault(
        key, _scenario_reply(scenario, step, pacing_enabled, signature_key)
    )
    return Decision(
        "scenario",
        scenario.id,
        turn,
        reply,
        failure=_failure(step) if step.failures_before_success else None,
        failures_before_success=step.failures_before_success,
        completes_run=turn == scenario.last_turn,
        scripted_turns=tuple(t.turn for t in scenario.turns),
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------------------------
# Instruction mode and the lorem fallback


def _is_length(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse_instruction(message: str) -> tuple[dict[str, Any] | None, str]:
    start = message.find(INSTRUCTION_START)
    if start < 0:
        return None, ""
    end = message.find(INSTRUCTION_END, start)
    if end < 0:
        return None, "instruction block has no end marker"
    try:
        data = orjson.loads(message[start + len(INSTRUCTION_START) : end])
    except orjson.JSONDecodeError as exc:
        return None, f"instruction block is not valid JSON: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list) or not data["messages"]:
        return None, "instruction block needs a non-empty messages array"
    for index, entry in enumerate(data["messages"]):
        ok = isinstance(entry, dict) and (
            (isinstance(entry.get("text_message"), dict) and _is_length(entry["text_message"].get("length")))
            or (
                isinstance(entry.get("tool_call"), list)
                and bool(entry["tool_call"])
                and all(
                    isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("args", {}), dict)
                    for c in entry["tool_call"]
                )
            )
        )
        if not ok:
            return None, f"instruction messages[{index}] is neither text_message {{length}} nor a non-empty tool_call"
    reasoning = data.get("reasoning")
    if reasoning is not None and not (isinstance(reasoning, dict) and _is_length(reasoning.get("length"))):
        return None, "instruction reasoning must be {length: int}"
    return data, ""


def _wrap(id_message: str, body: str) -> str:
    return f"{id_message} {body} {id_message}" if id_message else body


def _instruction_reply(data: dict[str, Any], request: ChatRequest, pacing_enabled: bool, key: str) -> Reply:
    id_message = str(data.get("id_message") or "")
    reasoning_length = (data.get("reasoning") or {}).get("length")
    seed = f"instruction:{short_id(request.last_user)}"
    blocks: list[Block] = []
    for index, entry in enumerate(data["messages"]):
        if "text_message" in entry:
            if reasoning_length:
                text = _wrap(id_message, lorem(reasoning_length))
                blocks.append(Block(type="reasoning", text=text, signature=sign_thinking(text, key), choice=index))
            blocks.append(
                Block(type="text", text=_wrap(id_message, lorem(entry["text_message"]["length"])), choice=index)
            )
        else:
            for n, call in enumerate(entry["tool_call"]):
                blocks.append(
                    Block(
                        type="tool_call",
                        call_id=f"call_{short_id(f'{seed}:{index}:{n}')}",
                        derived_id=True,
                        name=call["name"],
                        arguments=orjson.dumps(call.get("args", {})).decode(),
                        choice=index,
                    )
                )
    return _fallback_reply(tuple(blocks), request, pacing_enabled, seed)


def _lorem_reply(request: ChatRequest, pacing_enabled: bool, key: str) -> Reply:
    message = request.last_user
    body = lorem(lorem_length(message))
    # The echo: the user's message, verbatim, after each stream.
    echoed = f"{body} {message}" if message else body
    blocks = []
    if REASON_MARKER in message:
        blocks.append(Block(type="reasoning", text=echoed, signature=sign_thinking(echoed, key)))
    blocks.append(Block(type="text", text=echoed))
    return _fallback_reply(tuple(blocks), request, pacing_enabled, f"lorem:{short_id(message)}")


def _fallback_reply(blocks: tuple[Block, ...], request: ChatRequest, pacing_enabled: bool, seed: str) -> Reply:
    prompt_words = _count_words(request.system, *(m.text for m in request.messages))
    output_words = _count_words(*(b.text or b.arguments for b in blocks))
    has_tools = any(b.type == "tool_call" for b in blocks)
    return Reply(
        blocks=blocks,
        finish="tool_calls" if has_tools else "stop",
        usage=Usage(prompt_words, output_words, prompt_words + output_words),
        chunk_words=FALLBACK_CHUNK_WORDS,
        interval_ms=FALLBACK_INTERVAL_MS if pacing_enabled else 0,
        id_seed=seed,
    )


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
) -> Decision:
    """Decide what a request gets: a scenario's turn, an instructed answer, or the deterministic lorem.

    Raises :class:`ScenarioNotFound` for an unknown ``X-Harness-Scenario`` id and :class:`InvalidRequest` for a
    request the real provider would refuse.
    """
    scenario, how = select_scenario(catalog, request, header_scenario)
    check_thinking_signatures(request, scenario, signature_key)
    if scenario is not None:
        return _play_scenario(catalog, scenario, request, pacing_enabled, signature_key, how)
    instruction, why_not = _parse_instruction(request.last_user)
    if instruction is not None:
        reply = _instruction_reply(instruction, request, pacing_enabled, signature_key)
        return Decision("instruction", "", request.turn, reply, notes=("instruction block",))
    notes = ("lorem fallback",) + ((f"instruction block ignored: {why_not}",) if why_not else ())
    return Decision("lorem", "", request.turn, _lorem_reply(request, pacing_enabled, signature_key), notes=notes)
