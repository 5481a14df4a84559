"""The engine's vocabulary: the protocol-neutral request every wire parser produces, the neutral answer every wire
encoder writes, and the deterministic ids, signatures and chunks both sides share.

Pure: no Django, no I/O, no clock.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

# Server test mode: 5-word chunks at 50 words a second.
FALLBACK_CHUNK_WORDS = 5
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
    # The ids of the tool calls an assistant message makes, and the ids of the calls a message's tool results answer
    # (Gemini's calls, which need no id, by their function's name): expectations check each call has its result.
    call_ids: tuple[str, ...] = ()
    result_ids: tuple[str, ...] = ()


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
    # How a stream is framed where a protocol frames it more than one way (Gemini: "sse" for ?alt=sse, else "json",
    # one JSON array written as it grows); "" for the protocol's only way.
    framing: str = ""
    # The client may refer back to this answer by its id (a stored response, a message thread): the endpoint keeps
    # its conversation, and gives it an id of its own conversation.
    keep: bool = False
    # The id of an earlier kept answer whose conversation this request continues (previous_response_id, a thread's
    # previous_message_id); the endpoint puts that conversation before ``messages``.
    continues: str = ""
    # What the request demands of the answer (harnessweb.engine.asked reads them from any protocol's body): the tools
    # it requires a call to one of (tool_choice: one name forces that tool; "required"/"any" allow every offered
    # one), the JSON Schema of a structured output, and each offered tool's parameter schema, all as JSON text so
    # that the request stays hashable.
    required_tools: tuple[str, ...] = ()
    schema_json: str = ""
    # The body named no model (seed 004 allows it in lorem and instruction mode; a scenario refuses it).
    model_missing: bool = False
    tool_schemas: tuple[tuple[str, str], ...] = ()
    # The request's limits and extras (harnessweb.engine.tokens applies them): the answer's token budget, the
    # sequences its text stops at, how many choices it wants (OpenAI ``n``, Gemini ``candidateCount``), and the
    # log-probabilities it asks for (None: none; else how many alternatives per token).
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    choices: int = 1
    logprobs: int | None = None
    # Where the request's API key came (a header's name, or ``?key``) and its fingerprint, never the key: set by the
    # endpoint from the headers (harnessweb.engine.keys.stamped); "" without a key.
    key_place: str = ""
    key_fingerprint: str = ""
    # The protocol of the path it came by (its route's: "azure" for an Azure deployment, which OpenAI's parser
    # reads), set by harnessweb.engine.respond.read_request; "" for ``protocol``. Failure scopes tell providers by it.
    family: str = ""

    @property
    def forced_tool(self) -> str:
        """The one tool the request forces (a named tool_choice, or a requirement that allows one tool), or ""."""
        return self.required_tools[0] if len(self.required_tools) == 1 else ""

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
    """One content block: text, reasoning (with its signature) or a tool call (arguments as JSON text).

    A reasoning block with ``redacted`` data is redacted thinking: it has no text, Anthropic serves it as a
    ``redacted_thinking`` block and the other protocols, which have no such thing, leave it out.
    """

    type: Literal["text", "reasoning", "tool_call"]
    text: str = ""
    signature: str = ""
    redacted: str = ""
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
    # The choices the request's limits cut: (choice, "length" or "stop_sequence", the stop sequence met).
    cuts: tuple[tuple[int, str, str], ...] = ()
    # The usage counts the scenario sets (input, output, total); None: counted (harnessweb.engine.tokens).
    authored_usage: tuple[int | None, int | None, int | None] = (None, None, None)
    single_finish: bool = False  # instruction mode: one finish chunk after all its messages (seed 004)
    image: str = ""  # the turn's image fixture (base64 PNG), which an images generation answers

    def cut(self, choice: int = 0) -> tuple[str, str]:
        """Why a choice was cut (``"length"``, ``"stop_sequence"`` or ``""``) and the stop sequence it met."""
        return next(((reason, sequence) for c, reason, sequence in self.cuts if c == choice), ("", ""))

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
    status: str  # the failure kind (schemas.FailureStatus)
    message: str
    retryable: bool
    retry_after_ms: int | None
    error: dict[str, Any] | None = None
    http_status: int | None = None  # overrides the kind's own status
    throws: bool = False  # thrown inside the client (failure_throws): said so on the harness's own protocol


# ``failures_before_success: "always"``: a count no run reaches.
ALWAYS = 2**31 - 1


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
    # The provider the failure's attempts are counted for, beside the run and the turn: the scenario, the protocol,
    # and the model and key fingerprint where the turn's failure scope names them (at most 20 characters).
    counter: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


class ScenarioNotFound(Exception):
    """The request named a scenario (header) that the catalog does not hold."""


class NothingMatched(Exception):
    """No scenario, match rule or instruction block says what to answer, and the request wants an error for that
    rather than the lorem fallback; the message says which rules were tried."""


class InvalidRequest(Exception):
    """The request is well-formed JSON but the provider would refuse it (e.g. a tampered thinking signature)."""


# ---------------------------------------------------------------------------------------------------------------
# Deterministic pieces


def short_id(seed: str, length: int = 24) -> str:
    """A deterministic id fragment for response and tool call ids."""
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:length]


def sign_thinking(text: str, key: str) -> str:
    """The deterministic signature the Anthropic endpoint gives a thinking block."""
    return base64.b64encode(hmac.new(key.encode(), text.encode("utf-8"), hashlib.sha256).digest()).decode()


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


def conversation_seed(request: ChatRequest) -> str:
    """A digest of a request's whole conversation (model, system prompt, tools, messages): the ids of an answer a
    client may refer back to come from it, so two conversations never share one."""
    parts = [request.model, request.system, "\x1d".join(request.tools)]
    parts += [f"{m.role}\x1f{m.text}" for m in request.messages]
    return short_id("\x1e".join(parts), 32)


Evolving = TypeVar("Evolving")


def evolved(value: Evolving, **changes: Any) -> Evolving:
    """``dataclasses.replace(value, **changes)`` at a tenth of its cost, for the engine's dataclasses that every
    request copies (a request, its reply, its decision): the fields copied as they are, then the changes (none of
    them has a ``__post_init__`` to run again); an unknown field is a ``TypeError`` as there."""
    if unknown := changes.keys() - value.__dataclass_fields__.keys():  # type: ignore[attr-defined]
        raise TypeError(f"{type(value).__name__} has no field {', '.join(sorted(unknown))}")
    new = object.__new__(type(value))
    new.__dict__.update(value.__dict__, **changes)
    return new
