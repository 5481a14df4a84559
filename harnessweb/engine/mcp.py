"""MCP's Streamable HTTP transport played from a scenario's ``mcp`` block (``harnessweb.engine.mcp_schema``): one
JSON-RPC message and its session's state → the answer, and the answer's bytes (JSON, or one SSE event). Pure.

The server speaks the ``initialize`` handshake (protocol revisions :data:`VERSIONS`): ``initialize`` opens a
session whose id the client then sends in ``Mcp-Session-Id``; ``notifications/initialized``, ``ping``,
``tools/list`` and ``tools/call``, ``resources/list`` / ``read`` / ``templates/list``, ``prompts/list`` / ``get``;
``server/discover`` (the newer stateless revision's probe) gets "method not found", so a client in ``auto`` mode
falls back to the handshake. A call's answer is the scenario's (see ``mcp_schema`` for how answers match); a tool
no server declares gets MCP's "Unknown tool" error, and in a closed world the call is also a problem of the run.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from harnessweb.engine import shapes
from harnessweb.engine.mcp_schema import (
    INVALID_PARAMS,
    SERVER_NAME_PATTERN,
    McpAnswer,
    McpConfig,
    McpServer,
    arguments_match,
)
from harnessweb.engine.wire.common import JSON_HEADERS, SSE_HEADERS, Encoded, dumps

PROTOCOL = "mcp"
PATH_PREFIX = "/mcp/"
PATH_PATTERN = PATH_PREFIX[:-1] + "/(?P<server>" + SERVER_NAME_PATTERN.strip("^$") + ")/?"
_PATH = re.compile(PATH_PATTERN)
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first: offered when asked another
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
SERVER_VERSION = "1.0.0"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
RESOURCE_NOT_FOUND = -32002


@dataclass
class Session:
    """One client's session with one server: its id, the scenario whose server it is, the revision agreed, and how
    many calls each answer has answered (``used``, by the answer's index)."""

    id: str
    server: str
    scenario_id: str
    version: str = VERSIONS[0]
    initialized: bool = False
    used: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """A ``tools/call`` as it went, for the run's timeline: the tool and arguments, whether a server declares it,
    the answer that answered (its index in the server's ``answers``, None when none did), the result or the
    JSON-RPC error sent, and the run's problem when the call breaks the scenario's closed world."""

    tool: str
    arguments: dict[str, Any]
    declared: bool
    answer: int | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    problem: str = ""


@dataclass(frozen=True)
class Answer:
    """What one message gets: the JSON-RPC response (None for a notification or a client's response: HTTP 202) and,
    for ``tools/call``, the call as it went."""

    message: dict[str, Any] | None
    call: Call | None = None


class Refused(Exception):
    """A request the transport refuses before any method runs: an HTTP status and a JSON-RPC error (id null)."""

    def __init__(self, status: int, message: str, code: int = INVALID_REQUEST, allow: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.allow = status, code, message, allow


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def read_message(parsed: Any) -> dict[str, Any]:
    """A parsed body as one JSON-RPC message, or :class:`Refused` (400) saying what is wrong with it."""
    if isinstance(parsed, list):
        raise Refused(400, "Invalid Request: JSON-RPC batches are not supported; send one message")
    if not isinstance(parsed, dict) or parsed.get("jsonrpc") != "2.0":
        raise Refused(400, 'Invalid Request: a JSON-RPC 2.0 message must say "jsonrpc": "2.0"')
    if "method" in parsed and not isinstance(parsed["method"], str):
        raise Refused(400, "Invalid Request: method must be a string")
    if "method" not in parsed and "id" not in parsed:
        raise Refused(400, "Invalid Request: neither a request, a notification nor a response")
    if "params" in parsed and not isinstance(parsed["params"], dict | None):
        raise Refused(400, "Invalid Request: params must be an object")
    return parsed


def needs_session(message: dict[str, Any]) -> bool:
    """Whether a message must carry a session id: every one but ``initialize`` and the newer revision's probe."""
    return message.get("method") not in ("initialize", "server/discover")


def handle(config: McpConfig, session: Session, message: dict[str, Any]) -> Answer:
    """The answer to one message of a session (``read_message``'s) with the scenario's MCP servers."""
    method = message.get("method")
    if method is None or "id" not in message:  # a client's response, or a notification: nothing to answer
        if method == "notifications/initialized":
            session.initialized = True
        return Answer(None)
    request_id = message["id"]
    params = message.get("params") or {}
    server = config.servers[session.server]
    if method == "tools/call":
        return _call(config, server, session, request_id, params)
    handler = _METHODS.get(method)
    if handler is None:
        served = "initialize" if method == "server/discover" else ", ".join(sorted(_METHODS) + ["tools/call"])
        return Answer(error(request_id, METHOD_NOT_FOUND, f"Method not found: {method} (served: {served})"))
    return Answer(handler(server, session, request_id, params))


def _initialize(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    session.version = asked if asked in VERSIONS else VERSIONS[0]
    capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
    if server.resources:
        capabilities["resources"] = {"subscribe": False, "listChanged": False}
    if server.prompts:
        capabilities["prompts"] = {"listChanged": False}
    value: dict[str, Any] = {
        "protocolVersion": session.version,
        "capabilities": capabilities,
        "serverInfo": {"name": session.server, "version": SERVER_VERSION},
    }
    if server.instructions:
        value["instructions"] = server.instructions
    return result(request_id, value)


def _listed(model: Any, *names: str) -> dict[str, Any]:
    """A declaration as MCP lists it: the fields named, in MCP's camelCase, those unset left out."""
    return {k: v for k, v in model.model_dump(by_alias=True, include=set(names)).items() if v is not None}


def _tools(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    fields = ("name", "title", "description", "input_schema", "output_schema", "annotations")
    return result(request_id, {"tools": [_listed(t, *fields) for t in server.tools]})


def _resources(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    fields = ("uri", "name", "title", "description", "mime_type")
    return result(request_id, {"resources": [_listed(r, *fields) for r in server.resources]})


def _templates(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    return result(request_id, {"resourceTemplates": []})


def _read(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    uri = params.get("uri")
    found = next((r for r in server.resources if r.uri == uri), None)
    if found is None:
        known = ", ".join(r.uri for r in server.resources) or "none"
        return error(request_id, RESOURCE_NOT_FOUND, f"Resource not found: {uri} (resources: {known})", {"uri": uri})
    return result(request_id, {"contents": [_listed(found, "uri", "mime_type", "text", "blob")]})


def _prompts(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    listed = []
    for prompt in server.prompts:
        arguments = [_listed(a, "name", "description", "required") for a in prompt.arguments]
        listed.append({**_listed(prompt, "name", "title", "description"), "arguments": arguments})
    return result(request_id, {"prompts": listed})


def _prompt(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    prompt = next((p for p in server.prompts if p.name == name), None)
    if prompt is None:
        known = ", ".join(p.name for p in server.prompts) or "none"
        return error(request_id, INVALID_PARAMS, f"Unknown prompt: {name} (prompts: {known})")
    given = params.get("arguments") or {}
    missing = [a.name for a in prompt.arguments if a.required and a.name not in given]
    if missing:
        return error(request_id, INVALID_PARAMS, f"Missing required arguments of prompt {name}: {', '.join(missing)}")
    messages = []
    for message in prompt.messages:
        text = message.text
        for argument, value in given.items():
            text = text.replace("{" + str(argument) + "}", str(value))
        messages.append({"role": message.role, "content": {"type": "text", "text": text}})
    value: dict[str, Any] = {"messages": messages}
    if prompt.description:
        value["description"] = prompt.description
    return result(request_id, value)


def _ping(server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> dict[str, Any]:
    return result(request_id, {})


_METHODS = {
    "initialize": _initialize,
    "ping": _ping,
    "tools/list": _tools,
    "resources/list": _resources,
    "resources/templates/list": _templates,
    "resources/read": _read,
    "prompts/list": _prompts,
    "prompts/get": _prompt,
    "logging/setLevel": _ping,  # accepted; the server sends no log messages
}


def pick(server: McpServer, session: Session, tool: str, arguments: dict[str, Any]) -> int | None:
    """The index of the answer a call gets (``mcp_schema``'s rule), counted as used; None when none matches."""
    matching = [
        i
        for i, a in enumerate(server.answers)
        if a.tool == tool and arguments_match(a.arguments or {}, arguments, a.matching)
    ]
    if not matching:
        return None
    chosen = next((i for i in matching if not session.used.get(i)), matching[-1])
    session.used[chosen] = session.used.get(chosen, 0) + 1
    return chosen


def tool_result(answer: McpAnswer) -> dict[str, Any]:
    """An answer as MCP's ``CallToolResult``: its content (structured content also as JSON text, as MCP advises for
    clients that read only the content), ``isError``."""
    if answer.content is not None:
        content = list(answer.content)
    elif answer.text is not None:
        content = [{"type": "text", "text": answer.text}]
    else:
        content = [{"type": "text", "text": dumps(answer.structured_content).decode()}]
    value: dict[str, Any] = {"content": content, "isError": answer.is_error}
    if answer.structured_content is not None:
        value["structuredContent"] = answer.structured_content
    return value


def _failed(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _call(config: McpConfig, server: McpServer, session: Session, request_id: Any, params: dict[str, Any]) -> Answer:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if not isinstance(name, str) or not isinstance(arguments, dict):
        message = "Invalid params: tools/call needs a tool name (string) and arguments (an object)"
        return Answer(error(request_id, INVALID_PARAMS, message))
    tool = server.tool(name)
    if tool is None:
        declared = ", ".join(t.name for t in server.tools) or "none"
        message = f"Unknown tool: {name} (tools of server {session.server}: {declared})"
        problem = ""
        if config.closed_world:
            problem = f"MCP tool '{name}' was called on server '{session.server}' but the scenario does not declare it"
            problem += f" (closed world; its tools: {declared})"
        sent = error(request_id, INVALID_PARAMS, message)
        return Answer(sent, Call(name, arguments, False, None, None, sent["error"], problem))
    invalid = shapes.problem(arguments, tool.input_schema)
    index = None if invalid else pick(server, session, name, arguments)
    if invalid:
        value = _failed(f"Invalid arguments for tool {name}: {invalid}")
    elif index is None:
        value = _failed(f"No scripted answer of tool {name} matches the arguments {dumps(arguments).decode()}")
    else:
        scripted = server.answers[index]
        if scripted.error is not None:
            sent = error(request_id, scripted.error.code, scripted.error.message, scripted.error.data)
            return Answer(sent, Call(name, arguments, True, index, None, sent["error"]))
        value = tool_result(scripted)
    return Answer(result(request_id, value), Call(name, arguments, True, index, value, None))


# -- the transport ---------------------------------------------------------------------------------------------------

# What a server offers of a scenario: given the scenario id of a session (or None for a request that opens one), the
# scenario's id and MCP block, or :class:`Refused` (404) saying why there is none.
FindScenario = Callable[[str | None], tuple[str, McpConfig]]


@dataclass(frozen=True)
class Exchanged:
    """One HTTP request's answer (``encoded``) and, for recording, the session, the message and the call."""

    encoded: Encoded
    session: Session | None = None
    message: dict[str, Any] | None = None
    call: Call | None = None


def server_of(path: str) -> str:
    """The server a path names (``/mcp/<server>``), or :class:`Refused` (404)."""
    match = _PATH.fullmatch(path)
    if match is None:
        raise Refused(404, f"Not Found: an MCP server is served at {PATH_PREFIX}<server>", METHOD_NOT_FOUND)
    return match["server"]


def exchange(
    method: str,
    server: str,
    headers: Mapping[str, str],
    body: bytes,
    sessions: MutableMapping[str, Session],
    find: FindScenario,
) -> Exchanged:
    """One HTTP request to ``/mcp/<server>`` (``headers`` lower-cased) with the server's open ``sessions`` (a new
    one is kept on ``initialize``, the named one dropped on ``DELETE``): its answer, refusals included."""
    try:
        if method == "DELETE":  # the client ends its session
            sessions.pop(_named(headers, sessions, server).id, None)
            return Exchanged(Encoded(200, (), ()))
        if method != "POST":  # no stream of the server's own: it never sends anything unasked
            raise Refused(405, f"Method Not Allowed: {method}; send messages with POST", allow="POST, DELETE")
        if headers.get("content-type", "").partition(";")[0].strip().lower() != "application/json":
            raise Refused(415, "Unsupported Media Type: Content-Type must be application/json")
        accept = headers.get("accept", "")
        if not any(kind in accept for kind in ("application/json", "text/event-stream", "*/*")):
            raise Refused(406, "Not Acceptable: the client must accept application/json or text/event-stream")
        try:
            message = read_message(orjson.loads(body))
        except orjson.JSONDecodeError as exc:
            raise Refused(400, f"Parse error: {exc}", PARSE_ERROR) from None
        if needs_session(message):
            session = _named(headers, sessions, server)
            version = headers.get(VERSION_HEADER, session.version)
            if version not in VERSIONS:  # (MCP: a version the server does not speak is a 400)
                raise Refused(
                    400, f"Bad Request: Unsupported protocol version: {version[:40]} (supported: {', '.join(VERSIONS)})"
                )
            _, config = find(session.scenario_id)
        else:
            scenario_id, config = find(None)
            session = Session(uuid.uuid4().hex, server, scenario_id)
            if message.get("method") == "initialize":
                sessions[session.id] = session
        answer = handle(config, session, message)
        kept = session.id if session.id in sessions else ""  # (the probe's session is not kept: no id to name)
        return Exchanged(encode(answer.message, accept, kept), session, message, answer.call)
    except Refused as refused:
        return Exchanged(refusal(refused.status, refused.code, refused.message, refused.allow))


def _named(headers: Mapping[str, str], sessions: Mapping[str, Session], server: str) -> Session:
    """The session ``Mcp-Session-Id`` names (400 without one, 404 for one not open on this server)."""
    session_id = headers.get(SESSION_HEADER)
    if not session_id:
        raise Refused(400, "Bad Request: Missing session ID (send the Mcp-Session-Id initialize answered with)")
    session = sessions.get(session_id)
    if session is None or session.server != server:
        raise Refused(404, f"Not Found: no session {session_id[:80]} of MCP server {server}")
    return session


# -- bytes -----------------------------------------------------------------------------------------------------------


def wants_sse(accept: str) -> bool:
    """Whether the answer goes as an SSE stream: only when the client does not take JSON (both is the rule; JSON is
    the simpler of the two for every client that does)."""
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return "text/event-stream" in kinds and not ({"application/json", "application/*", "*/*"} & kinds)


def encode(message: dict[str, Any] | None, accept: str, session_id: str = "", status: int = 200) -> Encoded:
    """A message's HTTP answer: 202 without a body for none, else JSON or one ``event: message`` SSE event; the
    session's id in ``Mcp-Session-Id``."""
    extra = ((SESSION_HEADER.encode(), session_id.encode()),) if session_id else ()
    if message is None:
        return Encoded(202, extra, ())
    body = dumps(message)
    if wants_sse(accept) and status == 200:
        return Encoded(status, SSE_HEADERS + extra, (b"event: message\ndata: " + body + b"\n\n",))
    return Encoded(status, JSON_HEADERS + extra, (body,))


def refusal(status: int, code: int, message: str, allow: str = "") -> Encoded:
    """An HTTP refusal with a JSON-RPC error of id null (an unknown session, a missing one, a method not taken)."""
    extra = ((b"allow", allow.encode()),) if allow else ()
    return Encoded(status, JSON_HEADERS + extra, (dumps(error(None, code, message)),))
