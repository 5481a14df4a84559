"""One test's harness: its scenarios, configured answers and errors, attempt counters, kept answers and call
history, and the one step every call takes (:meth:`Harness.exchange` for a request on a provider's wire, in
``wire_exchange.py``; :meth:`Harness.answer` at the ``llm`` boundary). The SDK clients it hands out reach it through
an in-process transport (``transport.py``): no socket, no server, no Django settings, and the SDK parses the bytes
the server would send, because both run the same engine and encoders (``harnessweb.engine.respond``).
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from harnessweb.engine import chaos, configured, keys, respond
from harnessweb.engine.exchange import ChatRequest, Decision, Failure
from harnessweb.engine.expectations import KEY_PROBLEM
from harnessweb.engine.playback import Catalog, decide
from harnessweb.engine.schemas import FINGERPRINT_PATTERN, ExpectKey, Scenario, format_validation_error
from harnessweb.engine.tokens import parse_default_usage
from harnessweb.testing import calls as history
from harnessweb.testing import cassettes, costs, mcp_local, wire_exchange
from harnessweb.testing.clients import Clients
from harnessweb.testing.keychecks import OnWire, checked
from harnessweb.testing.tracelogs import TraceCollector, TurnLog
from harnessweb.testing.wire_exchange import failure_record

__all__ = ["BASE_URL", "Harness", "HarnessError", "Options", "default_usage", "failure_record"]

BASE_URL = "http://harness.invalid"  # in-process: never resolved, the transport answers it


@dataclass(frozen=True)
class Options:
    """What a session configures (ini options and command-line flags)."""

    pacing: bool = True
    timeout_hold_ms: int = 30_000
    unmatched_error: bool = False
    # What the ``llm`` boundary answers when nothing is configured and nothing matched: seed 002's safe default,
    # or None for the engine's lorem as on every wire.
    llm_default: Any = field(default_factory=lambda: {"success": True})
    signature_key: str = "scenario-harness-thinking-signature"
    strict: bool = False
    # Keys must arrive where their provider reads them (the server's HARNESS_REQUIRE_KEY), else its own refusal.
    require_key: bool = False
    default_usage: str = "counted"  # where answers set none (as HARNESS_DEFAULT_USAGE): or "seed", 64 / 32 / 96
    cassettes: str = ""  # the folder use_cassette and X-Harness-Cassette name cassettes in (harness_cassettes)


def default_usage(ini: str = "") -> str:
    """The usage answers get where they set none, as the plugin and the process harness read it: the ini option
    ``harness_default_usage`` when given, else ``HARNESS_DEFAULT_USAGE`` (the server's variable), else counted; a
    ``ValueError`` naming the setting it cannot read."""
    if ini.strip():
        return parse_default_usage(ini, "ini option harness_default_usage")
    return parse_default_usage(os.environ.get("HARNESS_DEFAULT_USAGE", ""))


class HarnessError(Exception):
    """A test asked the harness for something it cannot do (an unknown scenario, an exception in server mode)."""


class Harness(Clients):
    """What one test configures and what its code sent. See the README, "Use it from pytest"."""

    base_url = BASE_URL

    def __init__(self, scenarios: list[Scenario] | None = None, options: Options | None = None) -> None:
        self.options = options or Options()
        self._session_scenarios = list(scenarios or [])
        self.run_id = uuid.uuid4()
        self._calls: list[history.Call] = []
        self.answers = configured.Answers()
        self._catalog = Catalog.build(self._session_scenarios)
        self._scenario: str | None = None
        self._attempts: dict[tuple[Any, ...], int] = {}
        self._kept: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
        self._models: dict[str, Any] = {}
        self._async_models: dict[str, Any] = {}
        self.blocked: list[str] = []  # real provider hosts the code under test tried to reach
        self.trace_logs: list[str] = []
        self.traces: TraceCollector | None = None  # --harness-trace-dir's, see turn_logs
        self.artifacts: dict[str, str] = {}  # name (or URL) → HTML or text, see artifact()
        self.verdicts: list[Any] = []  # harness.judge's, each a judging.Judged; on_judged puts it in the report
        self.on_judged: Any = lambda judged: None
        # How serve() gets a server: the plugin gives the session's (harnessweb.testing.remote.serve otherwise).
        self.server_source: Any = None
        self.prices: Any = None  # cost's price table or file (costs.py): the plugin's --harness-prices, else shipped
        self.cassette: str | None = None  # use_cassette's
        self._mcp_unmet: list[str] = []  # expected MCP calls not made at a scripted end (mcp_local.unmet_call)

    # -- configuring ---------------------------------------------------------------------------------------------

    def use_cassette(self, name: str | None) -> None:
        """Answer later calls from this cassette of the session's folder (a file's stem; None stops): cassettes.py."""
        if name is not None and (problem := cassettes.check(self.options.cassettes, name)):
            raise HarnessError(problem)
        self.cassette = name

    def use_scenario(self, scenario: str | dict[str, Any] | Scenario) -> Scenario:
        """Play this scenario (an id loaded for the session, or a scenario given whole) for every call of the test."""
        if isinstance(scenario, str):
            if scenario not in self._catalog.by_id:
                known = ", ".join(sorted(self._catalog.by_id)) or "none (pass --harness-scenarios DIR)"
                raise HarnessError(f"Scenario {scenario!r} is not loaded; loaded: {known}")
            self._scenario = scenario
            return self._catalog.by_id[scenario]
        if isinstance(scenario, dict):
            from pydantic import ValidationError

            try:
                scenario = Scenario.model_validate(scenario)
            except ValidationError as exc:
                raise HarnessError(f"use_scenario: invalid scenario\n{format_validation_error(exc)}") from None
        others = [s for s in self._session_scenarios if s.id != scenario.id]
        self._catalog = Catalog.build([*others, scenario])
        self._scenario = scenario.id
        return scenario

    def set_response(
        self,
        *,
        text: str | None = None,
        json: Any = configured.Answer,  # a marker: ``json=None`` is a JSON answer too
        tool_calls: list[dict[str, Any]] | None = None,
        model: str | None = None,
        reasoning: str | None = None,
    ) -> None:
        """Answer calls (to ``model``, or to any model) with this; set several times, in that order."""
        has_json = json is not configured.Answer
        answer = configured.make_answer(model, text, json if has_json else None, has_json, tool_calls, reasoning)
        self.answers.answers.append(answer)

    def set_error(self, error: str | BaseException, times: int | str = 1, model: str | None = None) -> None:
        """Fail the next ``times`` calls (or ``"always"``): a failure kind gives the provider's own HTTP failure; an
        exception instance is raised (at the ``llm`` boundary as it is, from the transport for SDK clients)."""
        self.answers.errors.append(configured.make_error(model, error, times))

    def chaos(self, seed: int = 0, **rates: float) -> None:
        """Fail later calls at random, the same ones for the same ``seed``: rates (0..1, together at most 1) of
        ``rate_limit``, ``server_error``, ``network_error`` and ``malformed``; no rates turns it off."""
        try:
            self.answers.chaos = chaos.from_data({"seed": seed, **rates}, "harness.chaos") if rates else None
        except ValueError as exc:
            raise HarnessError(str(exc)) from None
        self.answers.chaos_used = 0

    def expect_key(self, key: str | None, place: str | None = None) -> str | None:
        """Every later call must carry this API key (or the key with this fingerprint), in ``place`` if given (a
        header's name, or ``?key``): a call with another key or none gets the validation failure and fails the test,
        naming where its key came and its fingerprint, never the key. ``None`` expects no key any more. Returns the
        fingerprint expected."""
        if key is None:
            self.answers.expect_key = None
            return None
        fingerprint = key if FINGERPRINT_PATTERN.fullmatch(key) else keys.fingerprint(key)
        from pydantic import ValidationError

        try:
            self.answers.expect_key = ExpectKey(fingerprint=fingerprint, place=place)  # type: ignore[arg-type]
        except ValidationError as exc:
            raise HarnessError(f"expect_key: invalid\n{format_validation_error(exc)}") from None
        return fingerprint

    def key_problems(self) -> list[str]:
        """The calls whose API key was not the one expected (``expect_key``, or a scenario's ``expect_key``), each
        naming where its key came and its fingerprint: the plugin fails the test on them."""
        if self.answers.expect_key is None and not any(s.expect_key for s in self._catalog.by_id.values()):
            return []
        return [f"call {i}: {c.problem}" for i, c in enumerate(self.calls) if c.problem.startswith(KEY_PROBLEM)]

    def serve(self) -> str:
        """Serve the rest of this test from the real app (for code that cannot take a client: a subprocess, a node
        script; see ``env()``); returns the server's URL."""
        if self.server_source is None:
            raise HarnessError("serve() needs a server: use the pytest plugin, or harnessweb.testing.remote.serve()")
        return self.server_source(self)

    def mcp_url(self, name: str) -> str:
        """The URL of MCP server ``name`` of the test's scenario (its ``mcp`` block), served in-process (mcp_local)."""
        if "_mcp" not in self.__dict__:  # (its calls: self._mcp[1].calls)
            self._mcp = mcp_local.serve(lambda: (self._catalog.by_id, self._scenario))
        return f"{self._mcp[0]}/mcp/{name}"

    def mcp_problems(self) -> list[str]:
        """What fails the server's run of this test's MCP servers, in its words, which the plugin fails the test for:
        each call of a tool a closed world does not declare, and each expected call (``expect_calls``) the agent had
        not made when its scenario's scripted end was played."""
        served = self.__dict__.get("_mcp")
        return (served[1].problems() if served else []) + self._mcp_unmet

    def trace_log(self, text: str) -> None:
        """Keep a trace log for this test (seed 001's TurnLog); ``--harness-upload`` sends it with the test's run."""
        self.trace_logs.append(text)

    @property
    def turn_logs(self) -> list[TurnLog]:
        """Seed 001's TurnLogs (and outcomes) from ``--harness-trace-dir``, one per turn (``tracelogs.py``)."""
        return self.traces.collect() if self.traces is not None else []

    def end_turn(self) -> TurnLog | None:
        """A user message is done (seed 001's ``collectTurnLog``): its trace log; turns count by user turn from now."""
        return self.traces.end_turn() if self.traces is not None else None

    def artifact(self, name: str, content: str | bytes) -> None:
        """Keep an artifact of this test (seed 001's generated page: its URL or name and its HTML, or any text);
        ``--harness-upload`` sends it with the test's run, and in server mode it goes to the test's run."""
        self.artifacts[name] = content.decode("utf-8") if isinstance(content, bytes) else content

    def send_artifacts(self) -> None:
        """Send the artifacts not yet on the server (server mode, at the test's end); in-process, nothing to do."""

    def judge(self, criteria: str | list[str], fail_on_fail: bool = False) -> Any:
        """Seed 001's judge on this test's conversation (``judging.py``): its verdict goes into the test's report
        and onto its run; only with ``fail_on_fail`` does a FAIL (or a judge error) fail the test."""
        from harnessweb.testing import judging

        return judging.judge(self, criteria, fail_on_fail=fail_on_fail)

    def send_verdict(self, judged: Any) -> None:
        """Server mode: the verdict onto the test's run; in-process, ``--harness-upload`` sends it at the end."""

    def env(self) -> dict[str, str]:
        """Environment for a program this test starts (a CLI, a node script): its default SDK clients reach the
        harness server (this test switches to server mode) and its calls land in this test's history."""
        self.serve()
        return self.env()  # now a RemoteHarness's

    def reset(self) -> None:
        """Forget configured answers, errors, the expected key, the scenario and cassette in use, attempt counters,
        kept answers, history (the MCP servers' calls and problems too) and the ``llm`` models handed out (seed 002's
        "Clear all models")."""
        self.answers.clear()
        self._calls.clear()
        self._models, self._async_models = {}, {}
        self._scenario = self.cassette = None
        self._catalog = Catalog.build(self._session_scenarios)
        self._attempts.clear()
        self._kept.clear()
        self._mcp_unmet.clear()
        if served := self.__dict__.get("_mcp"):  # the in-process MCP servers' calls (their URLs stay valid)
            served[1].clear()

    # -- reading the history -------------------------------------------------------------------------------------

    @property
    def calls(self) -> list[history.Call]:
        """Every call of this test, in order."""
        return self._calls

    def forget(self, calls: list[history.Call]) -> None:
        """Drop these calls from the history (a model's ``reset_history()``)."""
        gone = {id(c) for c in calls}
        self._calls[:] = [c for c in self._calls if id(c) not in gone]

    @property
    def prompt_count(self) -> int:
        return len(self.calls)

    @property
    def last_call(self) -> history.Call | None:
        return self.calls[-1] if self.calls else None

    @property
    def cost(self) -> costs.HarnessCost:
        """What this test's calls cost so far, from their usage (``usd``: None when a model has no price)."""
        return costs.harness_cost(self)

    def assert_cost_below(self, usd: Any) -> costs.HarnessCost:
        """Fail unless this test's calls cost less than ``usd`` dollars; an unpriced model fails it (costs.py)."""
        return costs.assert_cost_below(self, usd)

    def get_model(self, name: str) -> Any:
        """The harness-backed ``llm`` model of that name (the same one for the whole test), with its history."""
        model = self._models.get(name)
        if model is None:
            from harnessweb.testing.llm_models import HarnessModel

            model = self._models[name] = HarnessModel(self, name)
        return model

    def get_async_model(self, name: str) -> Any:
        model = self._async_models.get(name)
        if model is None:
            from harnessweb.testing.llm_models import HarnessAsyncModel

            model = self._async_models[name] = HarnessAsyncModel(self, name)
        return model

    @property
    def models(self) -> dict[str, Any]:
        """Every model name called or asked for in this test, each with ``prompt_count`` and ``call_history``."""
        for name in {c.model for c in self.calls} - set(self._models):
            self.get_model(name)
        return dict(self._models)

    def assert_called_with(self, **wanted: Any) -> history.Call:
        return history.assert_called_with(self.calls, **wanted)

    def assert_called_times(self, n: int, model: str | None = None) -> None:
        calls = self.calls if model is None else [c for c in self.calls if c.model == model]
        if len(calls) != n:
            scope = "" if model is None else f" to {model!r}"
            raise AssertionError(f"Expected {n} call(s){scope}, got {len(calls)}:\n{history.describe(calls)}")

    def assert_not_called(self) -> None:
        self.assert_called_times(0)

    def strict_problems(self) -> list[str]:
        """What strict mode fails a test for: configured answers never used, calls nothing configured or matched."""
        problems = [f"never used: {what}" for what in self.answers.unused()]
        problems += [
            f"unmatched call {i}: {c.protocol} {c.model!r} {c.prompt[:60]!r} (answered by {c.answered_by})"
            for i, c in enumerate(self.calls)
            if c.answered_by in ("lorem", "default")
        ]
        return problems

    # -- answering -----------------------------------------------------------------------------------------------

    def answer(
        self,
        request: ChatRequest,
        body: dict[str, Any],
        path: str,
        scenario_header: str | None = None,
        wire: OnWire | None = None,
    ) -> tuple[history.Call, Decision, Failure | None]:
        """The one step every call takes: record it, then a configured error, a configured answer, or the engine
        (a scenario, an instruction block, the lorem). Returns the call, the decision and the failure to serve (or
        None); raises a configured exception as it is, and the engine's refusals (unknown scenario, nothing
        matched under ``unmatched_error``, an invalid request). A call on a wire (``wire`` given) is then checked
        as the server checks it (``keychecks.checked``): :class:`KeyRefused` when keys must arrive and its did not,
        the validation failure when it carries another key than the one expected. A call at the ``llm`` boundary
        (no wire) while a cassette is in use is a :class:`HarnessError`: a cassette holds a wire's bytes."""
        if wire is None and self.cassette:  # a call under a cassette gets it or an error, never another answer
            raise HarnessError(
                f"use_cassette({self.cassette!r}) answers wire clients only (the SDK and HTTP clients the harness "
                "hands out): an llm model's prompt() has no wire to replay it on; call harness.use_cassette(None) "
                "first, and answer it with set_response or a scenario"
            )
        call = self._begin(request, body, path)
        if request.key_place:
            call.key = {"place": request.key_place, "fingerprint": request.key_fingerprint}
        if (hit := self.answers.take_chaos()) is not None:  # as on the server: first, and no entry is taken
            call.answered_by = "configured"
            lorem = configured.Error(None, hit.failure.status, 1)  # its decision: the answer a cut connection cuts
            decision, _ = configured.play(lorem, request, len(self._calls), self.options.signature_key)
            return call, *checked(self, call, decision, hit.failure, request, wire)
        error = self.answers.take_error(request.model)
        if error is not None and isinstance(error.error, BaseException):
            call.answered_by = "configured"
            call.error = {"type": type(error.error).__name__, "message": str(error.error)}
            raise error.error
        entry = error or self.answers.take_answer(request.model)
        if entry is not None:
            call.answered_by, call.configured = "configured", entry
            decision, failure = configured.play(entry, request, len(self._calls), self.options.signature_key)
            return call, *checked(self, call, decision, failure, request, wire)
        decision = decide(
            self._catalog,
            request,
            header_scenario=scenario_header or self._scenario,
            pacing_enabled=self.options.pacing,
            signature_key=self.options.signature_key,
            unmatched_error=self.options.unmatched_error,
            default_usage=self.options.default_usage,  # type: ignore[arg-type]
        )
        call.answered_by = decision.mode
        decision, _ = checked(self, call, decision, None, request, wire)
        failure = None
        if decision.failure is not None:  # counted per scenario, turn and provider (Decision.counter), as the server
            key = (decision.counter, request.system, request.first_user, decision.turn)
            attempt = self._attempts.get(key, 0)
            if attempt < decision.failures_before_success:
                self._attempts[key] = attempt + 1
                failure = decision.failure
        if failure is None and decision.completes_run and not decision.problem:  # as the server's steps.expects_calls
            scenario = self._catalog.by_id.get(decision.scenario_id)
            served = self.__dict__.get("_mcp")
            if problem := mcp_local.unmet_call(scenario.mcp if scenario else None, served[1] if served else None):
                call.problem = problem  # (the server's calls read it from the run's validation event)
                self._mcp_unmet.append(problem)
        return call, decision, failure

    def _begin(self, request: ChatRequest, body: dict[str, Any], path: str) -> history.Call:
        if self.traces is not None:  # what appeared since the last call is its trace log
            self.traces.call_began()
        # The record's fields are built when a test first reads them: the request and body are the harness's own.
        call = history.call_later(request, body, path, time.time())
        self._calls.append(call)
        return call

    def exchange(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[respond.Outgoing, list[tuple[bytes, bytes]], history.Call | None]:
        """A request on a provider's wire → what the server would send for it, the headers to add, and its call
        (``wire_exchange.py``)."""
        return wire_exchange.exchange(self, method, path, query, headers, body)
