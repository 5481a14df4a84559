"""The scenario model: one pydantic schema shared by the engine, the loaders, the API and the forms.

Canonical JSON is snake_case. The camelCase names of the TypeScript harness this format comes from are accepted
as aliases, so its fixtures import unchanged; a few of its legacy fields (``tokenUsage``, ``finishReason``,
``reasoningContent``, ``providerMetadata.anthropic.signature`` and ``.redactedData``) are folded into their
canonical places on input.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from harnessweb.engine import image_fixtures
from harnessweb.engine.mcp_schema import McpConfig
from harnessweb.engine.ratelimit import RateLimit

SLUG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
# The failure kinds a turn can script (seed 003's error paths): provider errors with their HTTP status, broken
# bodies with a 200, and the network's own (a held timeout, a cut connection, a slow first byte).
FailureStatus = Literal[
    "timeout", "invalid_response", "network_error", "rate_limit", "model_error",
    "auth_error", "permission_error", "not_found", "bad_request", "request_too_large",
    "server_error", "bad_gateway", "unavailable", "overloaded",
    "wrong_content_type", "missing_content_type", "invalid_json_in_stream", "invalid_utf8", "truncated_stream",
    "slow_first_byte",
]  # fmt: skip


# Where a request's API key can come (harnessweb.engine.keys.KEY_PLACES): a header's name, or Gemini's ``?key``.
KeyPlace = Literal["x-api-key", "authorization", "api-key", "x-goog-api-key", "?key"]
FINGERPRINT_PATTERN = re.compile(r"[0-9a-f]{12}")
PROTOCOL_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,39}")


def _fingerprint(value: str) -> str:
    if not FINGERPRINT_PATTERN.fullmatch(value):
        raise ValueError(
            "must be a key's fingerprint, 12 hexadecimal digits as the run page shows it (keys.fingerprint(key)); "
            "a scenario never holds the key itself"
        )
    return value


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        frozen=True,
        loc_by_alias=False,
        allow_inf_nan=False,  # NaN and infinities are not JSON: PostgreSQL would refuse to store them
    )


class Pacing(_Model):
    chunk_words: int = Field(5, ge=1, le=10_000)
    interval_ms: int = Field(0, ge=0, le=60_000)


class Usage(_Model):
    """Token counts a turn reports; each one left out is counted (harnessweb.engine.tokens), the total as input +
    output."""

    input_tokens: int | None = Field(None, ge=0)
    output_tokens: int | None = Field(None, ge=0)
    total_tokens: int | None = Field(None, ge=0)


# The usage a scenario's turns report where they set none: "counted" (the request and the answer, issue 10's
# default), "seed" (seed 000's fixed 64 input, 32 output, 96 total) or fixed counts (harnessweb.engine.tokens).
DefaultUsage = Literal["counted", "seed"] | Usage

ProviderMetadata = dict[str, dict[str, Any]]


class ReasoningSegment(_Model):
    """One reasoning entry. ``redacted_data`` makes it redacted thinking (Anthropic's ``redacted_thinking``: only
    its opaque data is served, and only on the Anthropic protocol); ``provider_metadata`` keeps any provider's
    metadata as authored, but for what is read into ``signature`` and ``redacted_data``."""

    text: str
    signature: str | None = None
    redacted_data: str | None = Field(None, min_length=1)
    provider_metadata: ProviderMetadata | None = None
    # The TypeScript harness tags its entries; accepted, not kept (every entry here is a reasoning entry).
    type: Literal["reasoning"] | None = Field(None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _read_provider_metadata(cls, data: Any) -> Any:
        """Read the signature and redacted data the seed keeps at ``providerMetadata.anthropic`` into their fields
        (an explicit field wins); a redacted entry needs no text."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, field in (("signature", "signature"), ("redactedData", "redacted_data")):
            if name in data:  # one spelling from here on, to compare with the metadata's value
                data[field] = data.pop(name)
        meta = data.pop("providerMetadata", data.pop("provider_metadata", None))
        if meta is not None:
            if not isinstance(meta, dict) or not all(isinstance(v, dict) for v in meta.values()):
                raise ValueError(
                    'providerMetadata must be an object of objects, like {"anthropic": {"signature": "..."}}'
                )
            anthropic = dict(meta.get("anthropic") or {})
            for name, field in (("signature", "signature"), ("redactedData", "redacted_data")):
                value = anthropic.get(name)
                if value is not None and not isinstance(value, str):
                    raise ValueError(f"providerMetadata.anthropic.{name} must be a string")
                if value and not data.get(field):
                    data[field] = value
                if name in anthropic and anthropic[name] in (data.get(field), "", None):
                    # Kept once, in its field: the canonical form does not say it twice.
                    del anthropic[name]
            meta = (
                {**meta, "anthropic": anthropic} if anthropic else {k: v for k, v in meta.items() if k != "anthropic"}
            )
            if meta:
                data["provider_metadata"] = meta
        if data.get("redacted_data") and "text" not in data:
            data["text"] = ""
        return data


def _reasoning_entries(content: Any) -> list[Any]:
    """The seed's ``reasoningContent``: one text, one entry object, or a list of either; as reasoning entries."""
    items = content if isinstance(content, list) else [content]
    return [{"text": item} if isinstance(item, str) else item for item in items]


class _Response(_Model):
    """What the response kinds share: the seed's ``reasoningContent`` read into ``reasoning``."""

    @model_validator(mode="before")
    @classmethod
    def _fold_reasoning_content(cls, data: Any) -> Any:
        """Append the seed's ``reasoningContent`` to ``reasoning``, as its provider reads both."""
        if not isinstance(data, dict) or not ({"reasoningContent", "reasoning_content"} & data.keys()):
            return data
        data = dict(data)
        content = data.pop("reasoningContent", data.pop("reasoning_content", None))
        if content is not None:
            reasoning = data.pop("reasoning", None) or []
            if not isinstance(reasoning, list):
                raise ValueError("reasoning must be a list when reasoningContent is given too")
            data["reasoning"] = [*reasoning, *_reasoning_entries(content)]
        return data


class ToolCallSpec(_Model):
    tool_name: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = Field(None, min_length=1, max_length=200)
    assistant_text: str | None = None


class TextResponse(_Response):
    kind: Literal["text"]
    assistant_text: str
    reasoning: list[ReasoningSegment] = Field(default_factory=list)
    provider_metadata: ProviderMetadata | None = None


class ToolCallResponse(_Response):
    kind: Literal["tool-call"]
    assistant_text: str | None = None
    tool_calls: list[ToolCallSpec] = Field(min_length=1)
    reasoning: list[ReasoningSegment] = Field(default_factory=list)
    provider_metadata: ProviderMetadata | None = None


class FinalReportResponse(_Response):
    kind: Literal["final-report"]
    report_content: str
    report_format: str = "markdown"
    report_content_json: Any = None
    status: Literal["success", "failure", "partial"] = "success"
    assistant_text: str | None = None
    reasoning: list[ReasoningSegment] = Field(default_factory=list)
    provider_metadata: ProviderMetadata | None = None


class StructuredResponse(_Response):
    """Structured data, stated once for every way a client asks for it (harnessweb.engine.structured): the arguments
    of the tool the request requires, its structured output, or the JSON text."""

    kind: Literal["structured"]
    data: Any
    reasoning: list[ReasoningSegment] = Field(default_factory=list)
    provider_metadata: ProviderMetadata | None = None

    @field_validator("data")
    @classmethod
    def _object_or_array(cls, value: Any) -> Any:
        if not isinstance(value, dict | list):
            raise ValueError("must be a JSON object (or an array), the answer's data")
        return value


Response = Annotated[
    TextResponse | ToolCallResponse | FinalReportResponse | StructuredResponse, Field(discriminator="kind")
]


class ExpectKey(_Model):
    """The API key a scenario's requests must carry, by its fingerprint (never the key), and optionally the place it
    must come in: any other key, or none, is a validation failure naming where the key came and its fingerprint."""

    fingerprint: str
    place: KeyPlace | None = None

    @field_validator("fingerprint")
    @classmethod
    def _is_fingerprint(cls, value: str) -> str:
        return _fingerprint(value)


class FailureScope(_Model):
    """The providers a turn's failure applies to: each list given must hold the request's value (its protocol, the
    path family that plays it; its model; its key's fingerprint). A request outside the scope is answered at once,
    so a client that falls back to another provider sees the first fail and the second succeed."""

    protocol: list[str] | None = None
    model: list[Annotated[str, Field(min_length=1)]] | None = None
    key_fingerprint: list[str] | None = None

    @field_validator("protocol")
    @classmethod
    def _protocols(cls, values: list[str] | None) -> list[str] | None:
        for value in values or ():
            if not PROTOCOL_PATTERN.fullmatch(value):
                raise ValueError(f"{value!r} is no protocol name (openai, anthropic, responses, gemini, azure, …)")
        return values

    @field_validator("key_fingerprint")
    @classmethod
    def _fingerprints(cls, values: list[str] | None) -> list[str] | None:
        return None if values is None else [_fingerprint(value) for value in values]


def _regex(value: str | None) -> str | None:
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
    return value


class TurnExpect(_Model):
    """What a turn expects of the conversation the client sent (harnessweb.engine.expectations checks each one
    given, whatever the protocol): the last user or tool message contains a text or matches a regular expression
    (``re.search``), every tool call of the previous answer has a result carrying its id, at least N messages
    precede the last one, and the system prompt includes each fragment (as the scenario's own list, for this turn)."""

    last_message_contains: str | None = Field(None, min_length=1)
    last_message_regex: str | None = Field(None, min_length=1)
    tool_calls_answered: bool = False
    min_earlier_messages: int | None = Field(None, ge=1, le=100_000)
    system_prompt_must_include: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)

    @field_validator("last_message_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return _regex(value)


class ScenarioTurn(_Model):
    turn: int = Field(ge=1)
    response: Response
    expected_tools: list[str] = Field(default_factory=list)
    allow_missing_tools: bool = False
    # The turn answers as scripted even when the request forces a tool it does not call (tool_choice).
    ignore_tool_choice: bool = False
    expected_temperature: float | None = None
    expected_top_p: float | None = None
    expected_reasoning: Literal["enabled", "disabled"] | None = None
    # Checks of the conversation the client sent for this turn; left out of the canonical JSON when it has none.
    expect: TurnExpect | None = None
    failures_before_success: Annotated[int, Field(ge=0, le=100)] | Literal["always"] = 0
    failure_status: FailureStatus = "model_error"
    # Thrown inside the client (seed 000's failureThrows), whatever the status: the AI SDK test provider throws
    # Error(failure_message), every other protocol drops the connection (as network_error). Left out unless true.
    failure_throws: bool | None = None
    # Any other HTTP status for the failure (a 409, a 418, a 507…), in the protocol's error format.
    failure_http_status: int | None = Field(None, ge=400, le=599)
    failure_message: str | None = None
    failure_retryable: bool = True
    failure_retry_after_ms: int | None = Field(None, ge=0, le=600_000)
    failure_error: dict[str, Any] | None = None
    # Only requests to these providers fail (and each counts its own attempts); None: every request to the turn.
    failure_scope: FailureScope | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    # Realtime sessions: the answer spoken (base64 PCM16, sent as it is: the harness synthesises no speech) and its
    # transcript (else the answer's text); what the user's committed audio before this turn transcribes to.
    audio: str | None = Field(None, min_length=4, pattern=r"^[A-Za-z0-9+/]+={0,2}$")
    transcript: str | None = None
    input_transcript: str | None = None
    # The PNG an images generation playing this turn answers (harnessweb.engine.image_fixtures): base64, or a path.
    image: str | None = None

    @field_validator("image", mode="before")
    @classmethod
    def _image_fixture(cls, value: Any, info: ValidationInfo) -> str | None:
        return image_fixtures.canonical(value, info.context)

    @field_validator("expect")
    @classmethod
    def _checks_something(cls, expect: TurnExpect | None) -> TurnExpect | None:
        """An ``expect`` block that checks nothing is no block: one canonical form for both."""
        return None if expect is None or expect == TurnExpect() else expect

    @field_validator("failure_throws")
    @classmethod
    def _thrown_or_left_out(cls, throws: bool | None) -> bool | None:
        """``false`` is the default said out loud: one canonical form (left out) for both."""
        return throws or None

    @model_validator(mode="before")
    @classmethod
    def _fold_seed_fields(cls, data: Any) -> Any:
        """Read the seed's tokenUsage/finishReason (kept on the response there)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        response = data.get("response")
        if isinstance(response, dict):
            response = dict(response)
            token_usage = response.pop("tokenUsage", None)
            finish_reason = response.pop("finishReason", None)
            data["response"] = response
            if token_usage is not None and "usage" not in data:
                data["usage"] = token_usage
            if finish_reason is not None and "finish_reason" not in data and "finishReason" not in data:
                data["finish_reason"] = finish_reason
        if "tokenUsage" in data and "usage" not in data:
            data["usage"] = data.pop("tokenUsage")
        return data


class Match(_Model):
    """Selection rules for prompts a test cannot control; every rule given must hold."""

    model: str | None = None
    system_contains: str | None = None
    first_user_contains: str | None = None
    first_user_regex: str | None = None
    last_user_contains: str | None = None
    last_user_regex: str | None = None
    tools_include: list[str] = Field(default_factory=list)

    @field_validator("first_user_regex", "last_user_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return _regex(value)


class EmbeddingPin(_Model):
    """A vector ``POST /v1/embeddings`` gives one input text instead of the deterministic one: authored (``vector``)
    or another text's (``same_as``: the two then match exactly, so a retrieval test can make a document win)."""

    input: str = Field(min_length=1)
    vector: list[float] | None = Field(None, min_length=1, max_length=8192)
    same_as: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _one_source(self) -> EmbeddingPin:
        if (self.vector is None) == (self.same_as is None):
            raise ValueError("give either vector or same_as")
        return self


class BatchOutcome(_Model):
    """What a batch whose lines this scenario answers comes to instead of ``completed`` (OpenAI's Batch API,
    Anthropic's Message Batches): ``failed`` (no line answered; OpenAI's ``errors`` and Anthropic's every result
    carry ``message``) or ``expired`` (the first ``answered`` lines answered, the others expired)."""

    status: Literal["failed", "expired"]
    message: str | None = Field(None, min_length=1, max_length=2000)
    answered: int = Field(0, ge=0, le=100_000)


class Scenario(_Model):
    id: str = Field(pattern=SLUG_PATTERN)
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    system_prompt_must_include: list[str] = Field(default_factory=list)
    pacing: Pacing | None = None
    match: Match | None = None
    priority: int = 0
    turns: list[ScenarioTurn] = Field(default_factory=list)
    embeddings: list[EmbeddingPin] = Field(default_factory=list)
    # A stored VCR cassette (its name, with or without .json) that answers this scenario's requests, byte for byte.
    cassette: str | None = Field(None, min_length=1, max_length=300)
    # Its requests must carry their API key where their provider reads it (else the provider's own 401); left out of
    # the canonical JSON when unset.
    require_key: bool | None = None
    # The key its requests must carry, by fingerprint (harnessweb.engine.expectations checks it).
    expect_key: ExpectKey | None = None
    # What its turns report as usage where they set none; None: the server's HARNESS_DEFAULT_USAGE (counted unless
    # set). A turn's own ``usage`` wins, count by count.
    default_usage: DefaultUsage | None = None
    # The MCP servers its agent's tools are served by (/mcp/<server>): harnessweb.engine.mcp_schema.
    mcp: McpConfig | None = None
    # What a batch its requests are in comes to (harnessweb.engine.batches.scripted_outcome); None: completed.
    batch: BatchOutcome | None = None
    # Its own rate-limit budget per key (harnessweb.engine.ratelimit), over the server's HARNESS_RATE_LIMIT.
    rate_limit: RateLimit | None = None

    @field_validator("turns")
    @classmethod
    def _unique_turns(cls, turns: list[ScenarioTurn]) -> list[ScenarioTurn]:
        seen: set[int] = set()
        for turn in turns:
            if turn.turn in seen:
                raise ValueError(f"turn {turn.turn} is defined twice")
            seen.add(turn.turn)
        return sorted(turns, key=lambda t: t.turn)

    def turn(self, number: int) -> ScenarioTurn | None:
        for turn in self.turns:
            if turn.turn == number:
                return turn
        return None

    @property
    def last_turn(self) -> int:
        return self.turns[-1].turn if self.turns else 0

    def canonical(self) -> dict[str, Any]:
        """The canonical snake_case JSON form, as stored and exported."""
        return self.model_dump(mode="json", exclude_none=True)


def format_validation_error(exc: Any, source: str = "") -> str:
    """One line per pydantic error, naming the field path (with the response kind where the union chose one):
    ``turns.0.response.text.assistant_text: Field required``."""
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(root)"
        lines.append(f"{source}{path}: {err['msg']}")
    return "\n".join(lines)
