"""A scenario's MCP servers (its ``mcp`` block): the tools each server offers, their scripted answers, its resources
and prompts, whether the scenario's world is closed, and the tool calls the agent must make.

Canonical JSON is snake_case; MCP's own camelCase spellings (``inputSchema``, ``isError``, ``structuredContent``,
``mimeType``, ``closedWorld``) are accepted as aliases. Pure: the engine (``harnessweb.engine.mcp``) plays it.

How a call finds its answer: the answers of the called tool are tried in the order written; the first one that
matches the call's arguments (``any``, ``exact``, ``subset``) and is not used up answers it. Each answer answers
once, except that the last matching one keeps answering when the others are used up: ordered answers, and answers
matched by arguments that answer every such call.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

# MCP's tool names (spec 2025-11-25): 1 to 128 of A-Z, a-z, 0-9, "_", "-", ".".
TOOL_NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,128}$"
SERVER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"  # a path segment: /mcp/<server>
# JSON-RPC's reserved range for implementation errors starts here; a scripted error outside it is still sent.
INTERNAL_ERROR = -32603
INVALID_PARAMS = -32602


class _Model(BaseModel):
    # As the scenario's own models (schemas._Model), which import this module: a config of its own avoids the cycle.
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="forbid",
        frozen=True,
        loc_by_alias=False,
        allow_inf_nan=False,
    )


class McpTool(_Model):
    """A tool a server lists (``tools/list``): its name, description and input schema (a JSON Schema object)."""

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    title: str | None = None
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None

    @field_validator("input_schema", "output_schema")
    @classmethod
    def _object_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None and schema.get("type") != "object":
            raise ValueError(
                'must be a JSON Schema of an object ({"type": "object", "properties": {...}}), as MCP asks'
            )
        return schema


class McpRpcError(_Model):
    """A JSON-RPC error a call is answered with instead of a result (a protocol error, not a tool's failure)."""

    code: int = INTERNAL_ERROR
    message: str = Field(min_length=1)
    data: Any = None


class McpAnswer(_Model):
    """One scripted answer of a tool: its text (or MCP content blocks, or structured content), ``is_error`` for a
    tool that failed (MCP's ``isError: true`` result), or ``error`` for a JSON-RPC error. ``arguments`` with
    ``match`` (``exact`` by default when arguments are given, else ``any``) says which calls it answers."""

    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    match: Literal["any", "exact", "subset"] | None = None
    arguments: dict[str, Any] | None = None
    text: str | None = None
    content: list[dict[str, Any]] | None = Field(None, min_length=1)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    error: McpRpcError | None = None

    @field_validator("content")
    @classmethod
    def _typed_blocks(cls, blocks: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for index, block in enumerate(blocks or ()):
            if not isinstance(block.get("type"), str):
                raise ValueError(f'block {index} has no "type" (text, image, audio, resource_link, resource)')
        return blocks

    @model_validator(mode="after")
    def _one_answer(self) -> McpAnswer:
        given = [n for n in ("text", "content", "structured_content", "error") if getattr(self, n) is not None]
        if not given:
            raise ValueError("give the answer: text, content, structured_content, or error")
        if self.error is not None and len(given) > 1:
            raise ValueError(f"error is a JSON-RPC error, not a result: give it alone (not with {given[0]})")
        if self.error is not None and self.is_error:
            raise ValueError("is_error marks a result the tool failed with; error answers with no result: give one")
        if self.text is not None and self.content is not None:
            raise ValueError("give text or content, not both")
        if self.match in ("exact", "subset") and self.arguments is None:
            raise ValueError(f"match {self.match!r} compares arguments: give arguments")
        if self.match == "any" and self.arguments is not None:
            raise ValueError("match 'any' answers whatever the arguments: leave arguments out, or match exact/subset")
        return self

    @property
    def matching(self) -> str:
        """How it matches a call's arguments: as given, else ``exact`` with arguments and ``any`` without."""
        return self.match or ("any" if self.arguments is None else "exact")


class McpResource(_Model):
    """A resource a server lists and reads (``resources/list``, ``resources/read``): text, or a base64 blob."""

    uri: str = Field(min_length=1, max_length=2000)
    name: str = Field(min_length=1)
    title: str | None = None
    description: str | None = None
    mime_type: str = "text/plain"
    text: str | None = None
    blob: str | None = Field(None, pattern=r"^[A-Za-z0-9+/]*={0,2}$")

    @model_validator(mode="after")
    def _text_or_blob(self) -> McpResource:
        if (self.text is None) == (self.blob is None):
            raise ValueError("give either text or blob (base64)")
        return self


class McpPromptArgument(_Model):
    name: str = Field(min_length=1)
    description: str | None = None
    required: bool = False


class McpPromptMessage(_Model):
    """One message of a prompt; ``{name}`` in its text is replaced by the argument of that name."""

    role: Literal["user", "assistant"] = "user"
    text: str


class McpPrompt(_Model):
    """A prompt a server lists and gets (``prompts/list``, ``prompts/get``)."""

    name: str = Field(min_length=1)
    title: str | None = None
    description: str | None = None
    arguments: list[McpPromptArgument] = Field(default_factory=list)
    messages: list[McpPromptMessage] = Field(min_length=1)


def _unique(values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} is declared twice")
        seen.add(value)


class McpServer(_Model):
    """One MCP server of the scenario, served at ``/mcp/<name>``."""

    instructions: str | None = None
    tools: list[McpTool] = Field(default_factory=list)
    answers: list[McpAnswer] = Field(default_factory=list)
    resources: list[McpResource] = Field(default_factory=list)
    prompts: list[McpPrompt] = Field(default_factory=list)

    @field_validator("answers")
    @classmethod
    def _answers_declared(cls, answers: list[McpAnswer], info: ValidationInfo) -> list[McpAnswer]:
        names = [t.name for t in info.data.get("tools") or ()]
        for index, answer in enumerate(answers):
            if "tools" in info.data and answer.tool not in names:
                declared = ", ".join(names) or "none"
                raise ValueError(f"answer {index}: {answer.tool!r} is not a tool of this server (tools: {declared})")
        return answers

    @model_validator(mode="after")
    def _names_unique(self) -> McpServer:
        _unique([t.name for t in self.tools], "tool")
        _unique([r.uri for r in self.resources], "resource")
        _unique([p.name for p in self.prompts], "prompt")
        return self

    def tool(self, name: str) -> McpTool | None:
        return next((t for t in self.tools if t.name == name), None)


class ExpectedCall(_Model):
    """A tool call the agent must make: the tool (on ``server``, or on any), carrying these arguments (each one
    given, compared as ``subset`` compares: other arguments may come too)."""

    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    server: str | None = Field(None, pattern=SERVER_NAME_PATTERN)
    arguments: dict[str, Any] = Field(default_factory=dict)


ServerName = Annotated[str, Field(pattern=SERVER_NAME_PATTERN)]


class McpConfig(_Model):
    """A scenario's ``mcp`` block. ``closed_world``: a call of a tool no server declares fails the run.
    ``expect_calls``: the calls the agent must make (``expect_order``: in that order)."""

    servers: dict[ServerName, McpServer] = Field(min_length=1)
    closed_world: bool = False
    expect_calls: list[ExpectedCall] = Field(default_factory=list)
    expect_order: bool = True

    @model_validator(mode="after")
    def _expected_tools_declared(self) -> McpConfig:
        for index, call in enumerate(self.expect_calls):
            where = {call.server: self.servers.get(call.server)} if call.server else self.servers
            if call.server and where[call.server] is None:
                known = ", ".join(self.servers)
                raise ValueError(f"expect_calls.{index}.server: no server {call.server!r} (servers: {known})")
            if not any(s is not None and s.tool(call.tool) for s in where.values()):
                raise ValueError(f"expect_calls.{index}.tool: no server declares a tool {call.tool!r}")
        return self


def arguments_match(wanted: dict[str, Any], sent: dict[str, Any], how: str) -> bool:
    """Whether a call's arguments ``sent`` match ``wanted``: ``any``; ``exact`` (equal); ``subset`` (each key
    given is sent with that value; nested objects compared the same way, lists and scalars by equality)."""
    if how == "any":
        return True
    if how == "exact":
        return wanted == sent
    return _subset(wanted, sent)


def _subset(wanted: Any, sent: Any) -> bool:
    if isinstance(wanted, dict):
        return isinstance(sent, dict) and all(k in sent and _subset(v, sent[k]) for k, v in wanted.items())
    return bool(wanted == sent)
