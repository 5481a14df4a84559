"""A test's MCP servers in-process (``harness.mcp_url("name")``): one small HTTP server on 127.0.0.1, on a thread of
its own, started on first use and shared by the session's tests, each test's servers under a path of its own
(``/<token>/mcp/<name>``). Any MCP client reaches it by URL (the official SDK, the OpenAI Agents SDK), because
they open their own connections. It answers as the server's endpoint does (``harnessweb.engine.mcp.exchange``),
with the test's scenario: the one ``use_scenario`` chose, else the only one that declares the server. No Django.

What fails the server's run fails the test (the plugin, at its teardown): a call that breaks a closed world
(:meth:`Served.problems`) and, at the scenario's scripted end, an expected call not made (:func:`unmet_call`), each
in the server's words; in server mode, what failed the run (:func:`run_problems`).
"""

from __future__ import annotations

import secrets
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harnessweb.engine import mcp
from harnessweb.engine.expectations import mcp_call_expectations
from harnessweb.engine.mcp_schema import McpConfig
from harnessweb.engine.routes import SCENARIO_HEADER
from harnessweb.engine.schemas import Scenario

# What a test's harness offers: its scenarios by id, and the one it plays (None: none chosen).
Scenarios = Callable[[], tuple[dict[str, Scenario], str | None]]
MAX_BODY_BYTES = 5 * 1024 * 1024


@dataclass
class Served:
    """One test's MCP servers: its scenarios, its open sessions, and the calls made (each server's name and call)."""

    scenarios: Scenarios
    sessions: dict[str, mcp.Session] = field(default_factory=dict)
    calls: list[tuple[str, mcp.Call]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The calls a scripted end already checked: on the server that run is closed, later calls join the next one.
    checked: int = 0

    def problems(self) -> list[str]:
        """The calls that broke the scenario's closed world, each in the server's words (``mcp.Call.problem``)."""
        with self.lock:
            return [call.problem for _, call in self.calls if call.problem]

    def clear(self) -> None:
        """Forget the calls made (``harness.reset()``); open sessions stay open, on the scenarios they opened with."""
        with self.lock:
            self.calls.clear()
            self.checked = 0

    def unchecked(self) -> list[tuple[str, str, dict[str, Any]]]:
        """The calls made since the previous scripted end (server, tool, arguments), now counted as checked."""
        with self.lock:
            calls, self.checked = self.calls[self.checked :], len(self.calls)
        return [(server, call.tool, call.arguments) for server, call in calls]

    def find(self, server: str, named: str | None) -> mcp.FindScenario:
        def found(scenario_id: str | None) -> tuple[str, McpConfig]:
            by_id, playing = self.scenarios()
            wanted = scenario_id or named or playing
            if wanted is not None:
                scenario = by_id.get(wanted)
                if scenario is None:  # (a session opened before harness.reset(), which forgets use_scenario's)
                    raise mcp.Refused(404, f"Scenario '{wanted}' is not the test's: use_scenario it")
                if scenario.mcp is None or server not in scenario.mcp.servers:
                    raise mcp.Refused(404, f"Scenario '{wanted}' declares no MCP server '{server}'")
                return scenario.id, scenario.mcp
            declaring = [s for s in by_id.values() if s.mcp is not None and server in s.mcp.servers]
            if len(declaring) != 1:
                ids = ", ".join(sorted(s.id for s in declaring)) or "none"
                raise mcp.Refused(404, f"Scenarios declaring an MCP server '{server}': {ids}; use_scenario one")
            assert declaring[0].mcp is not None
            return declaring[0].id, declaring[0].mcp

        return found


def unmet_call(config: McpConfig | None, served: Served | None) -> str:
    """At the scripted end of a scenario that expects MCP calls (``mcp.expect_calls``), the first expected call the
    agent has not made since the previous scripted end ("" when all were, or none are expected), in the server's words
    (``runs_app/endpoint/steps.py``'s ``unmet_call``). A test that never asked for the servers made no call."""
    if config is None or not config.expect_calls:
        return ""
    calls = served.unchecked() if served is not None else []
    return next((row.problem for row in mcp_call_expectations(config, calls) if not row.ok), "")


def run_problems(events: list[dict[str, Any]], config: McpConfig | None) -> list[str]:
    """What failed a server's run in its MCP servers, from the run's events in order (``GET /api/runs/{id}``, server
    mode): each closed world broken (an ``mcp_result``'s ``problem``) and each expected call unmade at a scripted end
    (a ``validation`` problem that ``config``'s ``expect_calls`` give for the calls made before it). The words are
    the ones the in-process servers fail a test with."""
    problems: list[str] = []
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for event in events:
        kind, data = event.get("kind"), event.get("data") or {}
        if kind == "mcp_call":
            calls.append((str(data.get("server", "")), str(data.get("tool", "")), data.get("arguments") or {}))
        elif kind == "mcp_result" and data.get("problem"):
            problems.append(str(data["problem"]))
        elif kind == "validation" and data.get("problem") and config is not None and config.expect_calls:
            unmet = {row.problem for row in mcp_call_expectations(config, calls) if not row.ok}
            problems += [str(data["problem"])] if data["problem"] in unmet else []
    return problems


_served: weakref.WeakValueDictionary[str, Served] = weakref.WeakValueDictionary()
_server: ThreadingHTTPServer | None = None
_starting = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # a test's output is not an access log
        return

    def _answer(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        length = int(headers.get("content-length") or 0)
        token, _, rest = self.path.lstrip("/").partition("/")
        served = _served.get(token)
        if served is None:
            encoded = mcp.refusal(404, mcp.METHOD_NOT_FOUND, f"Not Found: no test serves {self.path}")
        elif length > MAX_BODY_BYTES:
            encoded = mcp.refusal(413, mcp.INVALID_REQUEST, f"Request body is larger than {MAX_BODY_BYTES} bytes")
        else:
            body = self.rfile.read(length)
            length = 0
            try:
                server = mcp.server_of("/" + rest.partition("?")[0])
            except mcp.Refused as refused:
                encoded = mcp.refusal(refused.status, refused.code, refused.message)
            else:
                find = served.find(server, headers.get(SCENARIO_HEADER))
                with served.lock:
                    done = mcp.exchange(self.command, server, headers, body, served.sessions, find)
                    if done.call is not None:
                        served.calls.append((server, done.call))
                encoded = done.encoded
        if length:
            self.rfile.read(length)
        self.send_response(encoded.status)
        for name, value in encoded.headers:
            self.send_header(name.decode(), value.decode())
        self.send_header("Content-Length", str(len(encoded.body)))
        self.end_headers()
        self.wfile.write(encoded.body)

    do_POST = do_GET = do_DELETE = do_PUT = do_PATCH = _answer


def serve(scenarios: Scenarios) -> tuple[str, Served]:
    """The base URL of a test's MCP servers (``<base>/mcp/<name>``) and what they keep; the server starts on first
    use. The caller holds the :class:`Served`: once it is gone, its URLs answer 404."""
    global _server
    with _starting:
        if _server is None:
            _server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            _server.daemon_threads = True
            threading.Thread(target=_server.serve_forever, name="harness-mcp", daemon=True).start()
    token = secrets.token_hex(8)
    served = Served(scenarios)
    _served[token] = served
    host, port = _server.server_address[:2]
    return f"http://{host}:{port}/{token}", served
