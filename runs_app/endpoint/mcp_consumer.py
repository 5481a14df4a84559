"""A scenario's MCP servers over MCP's Streamable HTTP transport (``/mcp/<server>``): read, find the scenario and the
session, ask the engine (``harnessweb.engine.mcp``), record, send. Thin.

Which scenario a session plays: the one ``X-Harness-Scenario`` names, else the only one that declares the server.
Of several, the one the model's run plays (the run ``X-Harness-Run`` or a ``harness-run-<id>`` key names, else the
session run: the scenario its model turns played, else its script's), so a session opened before the test's first
model request never takes the previous test's; with no run named, or one that plays none of them yet, a 400 whose
JSON-RPC error names the candidates and the header to send. Which run a tool call joins: the one
``X-Harness-Run`` (or a ``harness-run-<id>`` key) names, else the session run of a pytest session's server, else the
latest run of the scenario in this process still open to its conversation (the agent's model turns), else a run of
the session's own. Sessions are held in this process's memory, as the session run is (``current.py``).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from harnessweb.engine import keys, mcp
from harnessweb.engine.mcp_schema import McpConfig
from harnessweb.engine.redaction import redact_headers
from harnessweb.engine.routes import RUN_HEADER, SCENARIO_HEADER
from harnessweb.engine.schemas import Scenario
from harnessweb.engine.wire.common import Encoded, WireError
from runs_app.endpoint import current
from runs_app.endpoint.recorder import RunState, get_recorder, while_up
from runs_app.lifecycle import Replied, next_status
from runs_app.models import Run, RunScript
from scenarios_app.catalog import cached_catalog, current_catalog

MAX_SESSIONS = 10_000
_sessions: OrderedDict[str, mcp.Session] = OrderedDict()


async def send_encoded(send: Any, encoded: Encoded, run: RunState | None = None) -> None:
    headers = list(encoded.headers)
    if run is not None:
        headers.append((b"x-harness-run", str(run.id).encode()))
    await send({"type": "http.response.start", "status": encoded.status, "headers": headers})
    await send({"type": "http.response.body", "body": encoded.body})


async def mcp_endpoint(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ASGI app under ``/mcp/``: every answer is MCP's (a JSON-RPC error with the HTTP status), never a 500."""
    exchange = McpExchange(scope)
    try:
        await exchange.handle(receive, send)
    except mcp.Refused as refused:
        encoded = mcp.refusal(refused.status, refused.code, refused.message, refused.allow)
        await send_encoded(send, encoded, exchange.run)


class McpExchange:
    """One HTTP request to an MCP server."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope
        self.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        self.run: RunState | None = None
        self.started = time.perf_counter()
        self.model_run: tuple[uuid.UUID | None, str] = (None, "")  # the model's run and its scenario, when asked

    async def handle(self, receive: Any, send: Any) -> None:
        self.server = mcp.server_of(self.scope["path"])
        body = await self.read_body(receive)
        by_id = (cached_catalog() or await sync_to_async(current_catalog)()).by_id
        # A new session (no Mcp-Session-Id) may have to choose among several scenarios: by its model's run, which
        # only an async read can tell (the engine's finder is synchronous).
        fresh = SCENARIO_HEADER not in self.headers and mcp.SESSION_HEADER not in self.headers
        if fresh and len(self.declaring(by_id)) > 1:
            self.model_run = await self.played()
        done = mcp.exchange(self.scope["method"], self.server, self.headers, body, _sessions, self.finder(by_id))
        while len(_sessions) > MAX_SESSIONS:
            _sessions.popitem(last=False)
        if done.call is not None and done.session is not None:
            await self.record(done.session, done.call)
        elif done.session is not None and done.message is not None and done.message.get("method") == "initialize":
            await self.record_session(done.session, done.message)
        await send_encoded(send, done.encoded, self.run)

    async def read_body(self, receive: Any) -> bytes:
        limit = settings.HARNESS_MAX_BODY_BYTES
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise mcp.Refused(400, "Bad Request: the client hung up before the body ended")
            parts.append(message.get("body", b""))
            size += len(parts[-1])
            if size > limit:
                raise mcp.Refused(413, f"Request body is larger than the limit of {limit} bytes")
            if not message.get("more_body"):
                return b"".join(parts)

    def finder(self, by_id: dict[str, Scenario]) -> mcp.FindScenario:
        """How the engine finds a session's scenario: the one it was opened with, else the module's docstring's."""

        def find(scenario_id: str | None) -> tuple[str, McpConfig]:
            scenario = self.scenario(by_id) if scenario_id is None else by_id.get(scenario_id)
            if scenario is None or scenario.mcp is None or self.server not in scenario.mcp.servers:
                raise mcp.Refused(404, f"Not Found: scenario '{scenario_id}' no longer serves {self.server}")
            return scenario.id, scenario.mcp

        return find

    def scenario(self, by_id: dict[str, Scenario]) -> Scenario:
        named = self.headers.get(SCENARIO_HEADER)
        if named is not None:
            scenario = by_id.get(named)
            if scenario is None:
                raise mcp.Refused(404, f"Scenario '{named}' not found (from the {SCENARIO_HEADER} header)")
            if scenario.mcp is None or self.server not in scenario.mcp.servers:
                servers = ", ".join(scenario.mcp.servers) if scenario.mcp else "none"
                message = f"Scenario '{named}' declares no MCP server '{self.server}' (its servers: {servers})"
                raise mcp.Refused(404, message)
            return scenario
        declaring = self.declaring(by_id)
        if len(declaring) == 1:
            return declaring[0]
        if declaring:
            run_id, played = self.model_run
            ids = sorted(s.id for s in declaring)
            if played in ids:
                return by_id[played]
            whose = (
                f"no run is named ({RUN_HEADER}, or a harness-run-<id> key)"
                if run_id is None
                else f"run {run_id} plays {f'{played!r}' if played else 'no scenario yet'}"
            )
            message = (
                f"Several scenarios declare an MCP server '{self.server}' ({', '.join(ids)}) and {whose}: "
                f"name one in the {SCENARIO_HEADER} header"
            )
            raise mcp.Refused(400, message)
        raise mcp.Refused(404, f"No scenario declares an MCP server '{self.server}'")

    def declaring(self, by_id: dict[str, Scenario]) -> list[Scenario]:
        """The scenarios that declare this MCP server."""
        return [s for s in by_id.values() if s.mcp is not None and self.server in s.mcp.servers]

    async def played(self) -> tuple[uuid.UUID | None, str]:
        """The model's run this request names (else the session run) and the scenario it plays: the one its model
        turns played here, else its script's, else its stored row's ("" when none yet)."""
        try:
            run_id = current.run_of(keys.run_named(self.headers))
        except WireError as exc:
            raise mcp.Refused(400, exc.message, mcp.INVALID_PARAMS) from None
        if run_id is None:
            return None, ""
        state = get_recorder().by_id.get(run_id)
        if state is not None and state.scenario_id:
            return run_id, state.scenario_id
        return run_id, await while_up(_stored_scenario, run_id) or ""

    async def resolve(self, session: mcp.Session, create: bool) -> RunState | None:
        """The run the session's events join (the module's docstring says which); None when none is named and
        ``create`` is false."""
        recorder = get_recorder()
        try:
            named = current.run_of(keys.run_named(self.headers))
        except WireError as exc:
            raise mcp.Refused(400, exc.message, mcp.INVALID_PARAMS) from None
        if named is not None:
            run = await recorder.resolve(named, "", 0, mcp.PROTOCOL)
        elif not create:
            return None
        else:
            open_runs = (r for r in reversed(recorder.by_id.values()) if not r.closed and r.protocol != mcp.PROTOCOL)
            latest = next((r for r in open_runs if r.scenario_id == session.scenario_id), None)
            if latest is not None:
                return latest
            run = await recorder.resolve(None, f"{mcp.PROTOCOL}:{session.id}", 0, mcp.PROTOCOL)
        if not run.scenario_id:  # (a run the model's turns have not reached yet: they set the same scenario)
            recorder.update(run, scenario_id=session.scenario_id)
        return run

    async def record_session(self, session: mcp.Session, message: dict[str, Any]) -> None:
        """A session opened: recorded on a run only when the request names one (the agent's model may not have
        been asked anything yet, so no run of the scenario is the agent's for sure)."""
        self.run = run = await self.resolve(session, create=False)
        if run is None:
            return
        params = message.get("params") or {}
        data = {
            "server": session.server,
            "session": session.id,
            "protocol_version": session.version,
            "client": params.get("clientInfo"),
            "headers": redact_headers(self.headers),
        }
        get_recorder().event(run, "mcp_session", _turn(run), data)
        await get_recorder().durable()

    async def record(self, session: mcp.Session, call: mcp.Call) -> None:
        """A tool call and its answer on the run's timeline, after the model turn that asked for it; a call that
        breaks a closed world fails the run."""
        recorder = get_recorder()
        self.run = run = await self.resolve(session, create=True)
        assert run is not None
        turn = _turn(run)
        common = {"server": session.server, "tool": call.tool, "session": session.id}
        recorder.event(run, "mcp_call", turn, {**common, "arguments": call.arguments, "declared": call.declared})
        answered = {
            **common,
            "answer": call.answer,
            "is_error": bool(call.error) or bool((call.result or {}).get("isError")),
            "result": call.result,
            "error": call.error,
            "duration_ms": round((time.perf_counter() - self.started) * 1000, 3),
        }
        if call.problem:
            answered["problem"] = call.problem
        recorder.event(run, "mcp_result", turn, answered)
        if call.problem:
            recorder.event(run, "validation", turn, {"ok": False, "problem": call.problem})
            change = next_status(run.status, Replied(call.problem))
            if change is not None:
                recorder.update(run, status=change.status, status_reason=change.reason, finished_at=timezone.now())
        await recorder.durable()


def _turn(run: RunState) -> int | None:
    """The turn a tool call follows: the latest model turn served (None before any)."""
    return max(run.turns_served, default=None)


def _stored_scenario(run_id: uuid.UUID) -> str:
    """The scenario a run's script names, else the one its stored row played ("" for neither)."""
    scripted = RunScript.objects.filter(run_id=run_id).values_list("scenario", flat=True).first()
    return scripted or Run.objects.filter(id=run_id).values_list("scenario_id", flat=True).first() or ""
