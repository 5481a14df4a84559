"""The pytest plugin (entry point ``pytest11``): options, the ``harness`` fixture, seed 002's ``mock_llm_calls`` and
``mock_llm_responses``, autouse, and strict mode. Installing the package is all a project does to have it.

Each test gets a :class:`Harness` of its own (run id, attempt counters, answers, history), so tests never share
state under ``pytest-xdist`` or in random order. While a test's harness is active, ``llm.get_model`` and
``llm.get_async_model`` hand out its models, and requests from clients built with their default base URLs
(``OpenAI()``, ``Anthropic()``, ``genai.Client()``) are answered by it in-process; a request to another real
provider's host fails the test, naming the host.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from harnessweb.engine.loader import ScenarioFileError, read_scenario_files
from harnessweb.engine.pricing import PriceFileError
from harnessweb.testing import guard
from harnessweb.testing.costs import prices_from
from harnessweb.testing.harness import Harness, Options, default_usage
from harnessweb.testing.judging import judged_lines
from harnessweb.testing.remote import RemoteHarness, switch
from harnessweb.testing.seed002 import MockGetModel, ResponseConfigurator, patch_llm
from harnessweb.testing.server import Server, start
from harnessweb.testing.tracelogs import TraceCollector, finish
from harnessweb.testing.upload import Uploader

UPLOADER = pytest.StashKey[Uploader]()

_BOOL = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "scenario harness")
    group.addoption("--harness-scenarios", default=None, help="Scenario files or a folder, loaded once per session")
    group.addoption("--harness-trace-dir", default=None, help="Where the app writes trace logs: one per turn, read")
    group.addoption("--harness-prices", default=None, help="harness.cost's price file (JSON; default: the shipped one)")
    group.addoption("--harness-cassettes", default=None, help="A folder of VCR cassettes use_cassette names by stem")
    group.addoption("--harness-url", default=None, help="Server mode on this harness server (or env HARNESS_URL)")
    group.addoption("--harness-token", default=None, help="A write token for --harness-url (or env HARNESS_TOKEN)")
    group.addoption(
        "--harness-upload", default=None, help="At the end, each test's calls become a run on this dashboard"
    )
    parser.addini("harness_scenarios", "Scenario files or a folder, loaded once per session", default="")
    parser.addini("harness_trace_dir", "Where the app writes trace logs: one per turn, read (tracelogs.py)", default="")
    parser.addini("harness_prices", "harness.cost's price file (JSON; default: the shipped one)", default="")
    parser.addini("harness_cassettes", "A folder of VCR cassettes use_cassette names by stem", default="")
    parser.addini("harness_strict", "Fail a test whose configured answers go unused or whose calls match nothing",
                  default="false")  # fmt: skip
    parser.addini("harness_autouse", "Give every test a harness without naming the fixture", default="false")
    parser.addini("harness_pacing", "Honour the scenarios' pacing (streams wait between chunks)", default="true")
    parser.addini("harness_unmatched", "What a call nothing answers gets: 'lorem' or 'error' (a 404)", default="lorem")
    parser.addini("harness_require_key", "Keys must arrive where their provider reads them (or HARNESS_REQUIRE_KEY)",
                  default="false")  # fmt: skip
    parser.addini("harness_default_usage", "Usage where a turn sets none: 'counted' or 'seed' (64/32/96; or "
                  "HARNESS_DEFAULT_USAGE)", default="")  # fmt: skip
    parser.addini(
        "harness_llm_default",
        "What an llm model with nothing configured answers: JSON (seed 002's default) or 'lorem'",
        default='{"success": true}',
    )


def pytest_configure(config: pytest.Config) -> None:
    url = config.getoption("harness_url") or os.environ.get("HARNESS_URL")
    token = config.getoption("harness_token") or os.environ.get("HARNESS_TOKEN")
    if url and not token:
        raise pytest.UsageError("--harness-url needs a write token: --harness-token or HARNESS_TOKEN")
    upload = config.getoption("harness_upload")
    if upload and not token:
        raise pytest.UsageError("--harness-upload needs a write token: --harness-token or HARNESS_TOKEN")
    if upload:
        config.stash[UPLOADER] = Uploader(upload, token)
        config.pluginmanager.register(UploadHooks(config.stash[UPLOADER]), "harness-upload")
    config.addinivalue_line("markers", "harness_strict: fail the test on unused answers or unmatched calls")
    config.addinivalue_line("markers", "harness_scenario(id): play this loaded scenario for every call of the test")


def _flag(config: pytest.Config, name: str) -> bool:
    value = str(config.getini(name)).strip().lower()
    if value not in _BOOL:
        raise pytest.UsageError(f"ini option {name} must be true or false, not {value!r}")
    return _BOOL[value]


def _options(config: pytest.Config) -> Options:
    unmatched = str(config.getini("harness_unmatched")).strip().lower()
    if unmatched not in ("lorem", "error"):
        raise pytest.UsageError(f"ini option harness_unmatched must be 'lorem' or 'error', not {unmatched!r}")
    raw_default = str(config.getini("harness_llm_default")).strip()
    try:
        llm_default = None if raw_default == "lorem" else json.loads(raw_default)
    except ValueError as exc:
        raise pytest.UsageError(f"ini option harness_llm_default must be JSON or 'lorem': {exc}") from None
    try:  # the ini option, else the variable the server reads too (as the process harness reads it)
        usage = default_usage(str(config.getini("harness_default_usage")))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return Options(
        default_usage=usage,
        pacing=_flag(config, "harness_pacing"),
        unmatched_error=unmatched == "error",
        llm_default=llm_default,
        strict=_flag(config, "harness_strict"),
        require_key=_flag(config, "harness_require_key")
        or _BOOL.get(os.environ.get("HARNESS_REQUIRE_KEY", "").strip().lower(), False),
    )


class Session:
    """What a test session shares: the scenarios (read once), the options, and server mode's server (started on
    first use, or the one at ``--harness-url``)."""

    def __init__(self, config: pytest.Config, tmp: Any) -> None:
        where = config.getoption("harness_scenarios") or str(config.getini("harness_scenarios")).strip()
        base = config.rootpath
        self.paths = [p if p.startswith("/") else str(base / p) for p in where.split()] if where else []
        try:
            self.scenarios = [scenario for _, scenario in read_scenario_files(self.paths)] if self.paths else []
        except ScenarioFileError as exc:
            raise pytest.UsageError(f"--harness-scenarios: {exc}") from None
        self.options = _options(config)
        cassettes = config.getoption("harness_cassettes") or str(config.getini("harness_cassettes")).strip()
        if cassettes:  # a folder that is not one stops the session, rather than every replay failing
            if not (base / cassettes).is_dir():
                raise pytest.UsageError(f"--harness-cassettes: {base / cassettes} is not a folder")
            self.options = replace(self.options, cassettes=str(base / cassettes))
        trace_dir = config.getoption("harness_trace_dir") or str(config.getini("harness_trace_dir")).strip()
        self.trace_dir = base / trace_dir if trace_dir else None  # an absolute one stays as it is
        if self.trace_dir is not None and self.trace_dir.exists() and not self.trace_dir.is_dir():
            raise pytest.UsageError(f"--harness-trace-dir: {self.trace_dir} is not a folder")
        prices = config.getoption("harness_prices") or str(config.getini("harness_prices")).strip()
        self.prices = str(base / prices) if prices else None  # read once here, so that a bad file stops the session
        try:
            prices_from(self.prices)
        except PriceFileError as exc:
            raise pytest.UsageError(f"--harness-prices: {exc}") from None
        self.url = config.getoption("harness_url") or os.environ.get("HARNESS_URL") or ""
        self.token = config.getoption("harness_token") or os.environ.get("HARNESS_TOKEN") or ""
        self._tmp = tmp
        self._server: Server | None = None

    def server(self) -> Server:
        if self._server is None:
            if self.url:
                self._server = Server(self.url.rstrip("/"), self.token)
            else:
                folder, options = self._tmp.mktemp("harness-server"), self.options
                self._server = start(folder, self.paths, pacing=options.pacing, default_usage=options.default_usage)
        return self._server

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()


@pytest.fixture(scope="session")
def harness_session(pytestconfig: pytest.Config, tmp_path_factory: Any) -> Iterator[Session]:
    session = Session(pytestconfig, tmp_path_factory)
    yield session
    session.close()


@pytest.fixture
def harness(
    request: pytest.FixtureRequest, harness_session: Session, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Harness]:
    """This test's harness: its SDK clients, answers, errors, scenarios and call history."""
    options = harness_session.options
    if request.node.get_closest_marker("harness_strict") is not None:
        options = Options(**{**vars(options), "strict": True})
    instance = Harness(harness_session.scenarios, options)
    if harness_session.trace_dir is not None:  # the files there now are never this test's
        instance.traces = TraceCollector(harness_session.trace_dir)
    instance.server_source = lambda h: switch(h, harness_session.server())
    instance.prices = harness_session.prices
    uploader = request.config.stash.get(UPLOADER, None)
    if uploader is not None:
        uploader.record(request.node.nodeid).harness = instance
    if harness_session.url:
        instance.serve()
    marker = request.node.get_closest_marker("harness_scenario")
    if marker is not None:
        instance.use_scenario(*marker.args)
    user_dir = request.getfixturevalue("tmp_path_factory").mktemp("llm-user")
    monkeypatch.setenv("LLM_USER_PATH", str(user_dir))  # never the user's own keys, aliases or logs
    patch_llm(monkeypatch, instance)
    guard.route_default_clients(monkeypatch, instance)
    instance.on_judged = lambda judged: request.node.user_properties.extend(judged.properties())
    yield instance
    if isinstance(instance, RemoteHarness):  # requests naming no run are no longer this test's
        instance.leave()
    instance.send_artifacts()  # server mode: those kept before the test's run existed
    finish(instance)  # the trace logs' last collection (server mode: onto the test's run)
    problems = [f"a request to the real provider host {host} was refused ({guard.hint(host)})" for host in
                dict.fromkeys(instance.blocked)]  # fmt: skip
    problems += instance.key_problems()  # a call whose key was not the one expected
    problems += instance.mcp_problems()  # what fails the server's run: a closed world broken, an expected call unmade
    if instance.options.strict:
        problems += instance.strict_problems()
    if problems:
        pytest.fail("harness: " + "; ".join(problems), pytrace=False)


class UploadHooks:
    """The hooks of ``--harness-upload``, registered only when it is given."""

    def __init__(self, uploader: Uploader) -> None:
        self.uploader = uploader

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.uploader.report(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.uploader.uploaded = self.uploader.upload_tests()
        if not hasattr(session.config, "workerinput"):  # the controller (or the only process) has every result
            self.uploader.upload_junit(list(self.uploader.tests.values()))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        uploader = self.uploader
        if uploader.problems:
            shown = "; ".join(uploader.problems[:3])
            line = f"harness: the upload to {uploader.url} failed ({shown}); the tests are unaffected"
            terminalreporter.write_line(line, yellow=True)
        else:
            line = f"harness: uploaded {uploader.uploaded} test run(s) and the session's JUnit to {uploader.url}"
            terminalreporter.write_line(line)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """``harness.judge``'s verdicts, one line per judged test (read from the reports' JUnit properties, so a test
    judged on an xdist worker is shown too)."""
    lines = judged_lines(report for reports in terminalreporter.stats.values() for report in reports)
    if lines:
        terminalreporter.section("harness judge")
        for line, failed in lines:
            terminalreporter.write_line(line, red=failed)


@pytest.fixture(autouse=True)
def _harness_autouse(request: pytest.FixtureRequest) -> None:
    if _flag(request.config, "harness_autouse") and "harness" not in request.fixturenames:
        request.getfixturevalue("harness")


@pytest.fixture
def mock_llm_calls(harness: Harness) -> MockGetModel:
    """Seed 002's fixture: the mocked ``llm.get_model`` with ``get_model``, ``models``, ``reset``, ``set_response``."""
    return MockGetModel(harness)


@pytest.fixture
def mock_llm_responses(mock_llm_calls: MockGetModel) -> ResponseConfigurator:
    """Seed 002's fixture: ``set(model, response)``, ``set_error(model, exception)``, ``get_model(name)``."""
    return ResponseConfigurator(mock_llm_calls.harness)
