"""The MCP engine (``harnessweb.engine.mcp``), byte for byte: a JSON-RPC message and a session → the answer."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from harnessweb.engine import mcp
from harnessweb.engine.mcp_schema import McpConfig

CONFIG = McpConfig.model_validate(
    {
        "servers": {
            "tools": {
                "tools": [
                    {
                        "name": "add",
                        "description": "Adds.",
                        "inputSchema": {
                            "type": "object",
                            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                            "required": ["a", "b"],
                        },
                    },
                    {"name": "now"},
                ],
                "answers": [
                    {"tool": "add", "arguments": {"a": 1, "b": 2}, "text": "3"},
                    {"tool": "add", "match": "subset", "arguments": {"a": 10}, "structuredContent": {"sum": 99}},
                    {"tool": "now", "text": "09:00"},
                    {"tool": "now", "isError": True, "text": "clock stopped"},
                    {"tool": "now", "error": {"code": -32001, "message": "clock unreachable", "data": {"x": 1}}},
                ],
            }
        },
        "closed_world": True,
    }
)


def session() -> mcp.Session:
    return mcp.Session("s1", "tools", "demo")


def ask(s: mcp.Session, method: str, params: dict[str, Any] | None = None, request_id: Any = 7) -> mcp.Answer:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return mcp.handle(CONFIG, s, mcp.read_message(message))


def body(answer: mcp.Answer) -> bytes:
    return mcp.encode(answer.message, "application/json, text/event-stream", "s1").body


def test_initialize_agrees_on_the_version_asked_and_names_the_server() -> None:
    s = session()
    answer = ask(s, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {}}, 0)

    assert body(answer) == (
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":'
        b'{"listChanged":false}},"serverInfo":{"name":"tools","version":"1.0.0"}}}'
    )
    assert s.version == "2025-03-26"


def test_initialize_offers_the_newest_version_when_asked_one_it_does_not_speak() -> None:
    answer = ask(session(), "initialize", {"protocolVersion": "2026-07-28"})

    assert answer.message is not None and answer.message["result"]["protocolVersion"] == "2025-11-25"


def test_tools_list_lists_each_tool_in_mcp_s_spelling() -> None:
    assert body(ask(session(), "tools/list")) == (
        b'{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"add","description":"Adds.","inputSchema":'
        b'{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}},'
        b'{"name":"now","description":"","inputSchema":{"type":"object","properties":{}}}]}}'
    )


def test_a_call_gets_the_answer_its_arguments_match_exactly() -> None:
    answer = ask(session(), "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})

    assert body(answer) == b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}'
    assert answer.call == mcp.Call("add", {"a": 1, "b": 2}, True, 0, answer.message["result"], None)  # type: ignore[index]


def test_a_subset_answer_takes_extra_arguments_and_serves_structured_content_as_text_too() -> None:
    answer = ask(session(), "tools/call", {"name": "add", "arguments": {"a": 10, "b": 5}})

    assert body(answer) == (
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\\"sum\\":99}"}],"isError":false,'
        b'"structuredContent":{"sum":99}}}'
    )


def test_ordered_answers_answer_once_each_then_the_last_one_holds_and_a_scripted_error_is_a_json_rpc_error() -> None:
    s = session()
    answers = [ask(s, "tools/call", {"name": "now"}) for _ in range(4)]

    assert [a.call.answer for a in answers] == [2, 3, 4, 4]  # type: ignore[union-attr]
    assert answers[1].message["result"] == {  # type: ignore[index]
        "content": [{"type": "text", "text": "clock stopped"}],
        "isError": True,
    }
    assert body(answers[2]) == (
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"clock unreachable","data":{"x":1}}}'
    )


def test_arguments_the_input_schema_refuses_are_a_tool_error_naming_the_field() -> None:
    answer = ask(session(), "tools/call", {"name": "add", "arguments": {"a": "one", "b": 2}})

    assert answer.message["result"]["isError"] is True  # type: ignore[index]
    assert answer.message["result"]["content"][0]["text"] == (  # type: ignore[index]
        "Invalid arguments for tool add: at $.a: 'one' is not of type 'integer'"
    )
    assert answer.call is not None and answer.call.answer is None


def test_a_call_no_answer_matches_is_a_tool_error_quoting_the_arguments() -> None:
    answer = ask(session(), "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})

    assert answer.message["result"]["content"][0]["text"] == (  # type: ignore[index]
        'No scripted answer of tool add matches the arguments {"a":2,"b":2}'
    )


def test_an_undeclared_tool_is_unknown_and_in_a_closed_world_a_problem_naming_it() -> None:
    answer = ask(session(), "tools/call", {"name": "rm", "arguments": {"path": "/"}})

    assert body(answer) == (
        b'{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":'
        b'"Unknown tool: rm (tools of server tools: add, now)"}}'
    )
    assert answer.call is not None and answer.call.problem == (
        "MCP tool 'rm' was called on server 'tools' but the scenario does not declare it (closed world; its tools: "
        "add, now)"
    )


def test_an_open_world_answers_an_undeclared_tool_without_a_problem() -> None:
    config = CONFIG.model_copy(update={"closed_world": False})
    answer = mcp.handle(
        config, session(), {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm"}}
    )

    assert answer.call is not None and answer.call.problem == "" and answer.message["error"]["code"] == -32602  # type: ignore[index]


def test_an_unknown_method_and_the_newer_revision_s_probe_are_not_found() -> None:
    assert ask(session(), "sampling/createMessage").message["error"]["code"] == mcp.METHOD_NOT_FOUND  # type: ignore[index]
    probe = ask(session(), "server/discover").message
    assert probe["error"] == {"code": -32601, "message": "Method not found: server/discover (served: initialize)"}  # type: ignore[index]


def test_notifications_get_no_answer_and_initialized_marks_the_session() -> None:
    s = session()
    answer = mcp.handle(CONFIG, s, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    assert answer == mcp.Answer(None) and s.initialized
    encoded = mcp.encode(None, "application/json", "s1")
    assert (encoded.status, encoded.headers, encoded.body) == (202, ((b"mcp-session-id", b"s1"),), b"")


def test_a_client_that_takes_only_sse_gets_one_message_event() -> None:
    encoded = mcp.encode(ask(session(), "ping").message, "text/event-stream", "s1")

    assert encoded.body == b'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n'
    assert (b"content-type", b"text/event-stream; charset=utf-8") in encoded.headers


@pytest.mark.parametrize(
    ("parsed", "message"),
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], "batches are not supported"),
        ({"id": 1, "method": "ping"}, '"jsonrpc": "2.0"'),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, "method must be a string"),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, "params must be an object"),
        ({"jsonrpc": "2.0"}, "neither a request"),
    ],
)
def test_a_malformed_message_is_refused_saying_why(parsed: Any, message: str) -> None:
    with pytest.raises(mcp.Refused) as refused:
        mcp.read_message(parsed)

    assert (
        refused.value.status == 400 and refused.value.code == mcp.INVALID_REQUEST and message in refused.value.message
    )


def test_a_refusal_is_a_json_rpc_error_of_id_null() -> None:
    encoded = mcp.refusal(405, mcp.INVALID_REQUEST, "Method Not Allowed: GET", allow="POST, DELETE")

    assert encoded.status == 405 and (b"allow", b"POST, DELETE") in encoded.headers
    assert encoded.body == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Method Not Allowed: GET"}}'


def found(scenario_id: str | None) -> tuple[str, McpConfig]:
    return "demo", CONFIG


JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def test_an_exchange_opens_a_session_on_initialize_and_answers_it_by_its_id() -> None:
    sessions: dict[str, mcp.Session] = {}
    opened = mcp.exchange("POST", "tools", JSON, b'{"jsonrpc":"2.0","id":1,"method":"initialize"}', sessions, found)
    (session_id,) = sessions
    listed = mcp.exchange(
        "POST",
        "tools",
        {**JSON, "mcp-session-id": session_id},
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}',
        sessions,
        found,
    )
    ended = mcp.exchange("DELETE", "tools", {"mcp-session-id": session_id}, b"", sessions, found)

    assert opened.encoded.status == 200 and (b"mcp-session-id", session_id.encode()) in opened.encoded.headers
    assert listed.encoded.body == b'{"jsonrpc":"2.0","id":2,"result":{}}'
    assert ended.encoded.status == 200 and sessions == {}


@pytest.mark.parametrize(
    ("method", "headers", "body", "status", "message"),
    [
        ("GET", JSON, b"", 405, "Method Not Allowed: GET; send messages with POST"),
        ("POST", {"accept": "application/json"}, b"{}", 415, "Unsupported Media Type"),
        ("POST", {"content-type": "application/json", "accept": "text/html"}, b"{}", 406, "Not Acceptable"),
        ("POST", JSON, b"{", 400, "Parse error"),
        ("POST", JSON, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 400, "Bad Request: Missing session ID"),
        ("POST", {**JSON, "mcp-session-id": "gone"}, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', 404, "no session"),
        ("DELETE", {"mcp-session-id": "gone"}, b"", 404, "Not Found: no session gone of MCP server tools"),
        (
            "POST",
            {**JSON, "mcp-session-id": "s1", "mcp-protocol-version": "1999-01-01"},
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
            400,
            "Unsupported protocol version: 1999-01-01",
        ),
    ],
)
def test_an_exchange_refuses_with_the_status_and_a_json_rpc_error(
    method: str, headers: dict[str, str], body: bytes, status: int, message: str
) -> None:
    done = mcp.exchange(method, "tools", headers, body, {"s1": session()}, found)

    assert done.encoded.status == status and done.session is None
    assert message in orjson.loads(done.encoded.body)["error"]["message"]


def test_a_path_names_its_server_or_is_not_found() -> None:
    assert mcp.server_of("/mcp/weather") == "weather" and mcp.server_of("/mcp/weather/") == "weather"
    with pytest.raises(mcp.Refused) as refused:
        mcp.server_of("/mcp/")
    assert refused.value.status == 404


def test_the_newer_revision_s_probe_opens_no_session() -> None:
    sessions: dict[str, mcp.Session] = {}
    done = mcp.exchange("POST", "tools", JSON, b'{"jsonrpc":"2.0","id":0,"method":"server/discover"}', sessions, found)

    assert sessions == {} and done.encoded.headers == ((b"content-type", b"application/json"),)
    assert orjson.loads(done.encoded.body)["error"]["code"] == mcp.METHOD_NOT_FOUND
