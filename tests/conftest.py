"""Shared helpers: a real daphne server on the test database, SDK clients pointed at it, small make_* helpers for
the rows the tests need, the API's test client, the admin's staff client and page helpers, the browser."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anthropic
import openai
import pytest

from harnessweb.testing.server import wait_until_serving

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.test import Client
    from ninja.testing import TestClient

    from runs_app.models import JudgeVerdict, Run, TraceLog

# Helper modules that several test files share assert too: rewritten like test files, a failing helper shows its values.
pytest.register_assert_rewrite(
    "tests.playback_helpers", "tests.scenario_views_helpers",
    "tests.wire_anthropic_helpers", "tests.wire_openai_helpers",
)  # fmt: skip

ROOT = Path(__file__).resolve().parent.parent
# Real cassettes (see tests/fixtures/vcr/README.md), kept in the repository so a clean clone tests anywhere.
VCR_DIR = ROOT / "tests" / "fixtures" / "vcr"


def docs_text() -> str:
    """The README and every page of the documentation site (docs/), as one text: what tests check the docs against."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(path.read_text(encoding="utf-8") for path in pages)


def vcr_fixture(name: str) -> bytes:
    """A cassette of VCR_DIR as a recorder that redacts would have written it: the Gemini ones record their
    ``?key=test-key`` (refused as it stands, see tests/test_secret_uploads.py), here ``?key=[REDACTED]``."""
    return (VCR_DIR / name).read_bytes().replace(b"&key=test-key", b"&key=[REDACTED]")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_env(settings_dict: dict[str, Any]) -> dict[str, str]:
    """Environment that points a server process at the database the tests are using."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return {"SQLITE_PATH": str(settings_dict["NAME"]), "DATABASE_URL": ""}
    user = settings_dict.get("USER") or ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return {"DATABASE_URL": f"postgres://{user}@{host}:{port}/{settings_dict['NAME']}"}


class LiveServer:
    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path):
        self.url = url
        self.process = process
        self.log = log

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_server(
    tmp: Path,
    env_overrides: dict[str, str],
    server: str = "daphne",
    extra_args: Sequence[str] = (),
    port: int | None = None,
) -> LiveServer:
    from django.db import connection

    port = port or free_port()
    env = {
        **os.environ,
        **database_env(connection.settings_dict),
        "HARNESS_RECORDER_FLUSH_MS": "5",
        "DJANGO_SETTINGS_MODULE": "harnessweb.settings",
        **env_overrides,
    }
    if not env.get("DATABASE_URL"):
        env.pop("DATABASE_URL", None)
    if server == "daphne":
        cmd = [
            sys.executable,
            "-m",
            "harnessweb.serve",  # daphne, request bodies left to the app
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "harnessweb.asgi:application",
        ]
    else:
        cmd = [
            sys.executable,
            "-m",
            "uvicorn",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-access-log",
            *extra_args,  # e.g. --workers 2
            "harnessweb.asgi:application",
        ]
    log = tmp / f"{server}-{port}.log"
    process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    wait_until_serving(process, port, log, timeout=30)
    return LiveServer(f"http://127.0.0.1:{port}", process, log)


@contextmanager
def running_server(
    tmp: Path,
    env_overrides: dict[str, str],
    server: str = "daphne",
    extra_args: Sequence[str] = (),
    port: int | None = None,
) -> Iterator[LiveServer]:
    """``start_server``'s server for the ``with`` block, stopped after it (a fixture yields inside the block)."""
    started = start_server(tmp, env_overrides, server, extra_args, port)
    try:
        yield started
    finally:
        started.process.terminate()
        started.process.wait(10)


@pytest.fixture(scope="session")
def harness_server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """daphne serving the real ASGI app on the test database, pacing off and a short timeout hold."""
    env = {"HARNESS_PACING": "off", "HARNESS_TIMEOUT_HOLD_MS": "400"}
    with running_server(tmp_path_factory.mktemp("server"), env) as server:
        yield server


@pytest.fixture(scope="session")
def paced_server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """The same app with pacing on, as ``make run`` serves it."""
    with running_server(tmp_path_factory.mktemp("paced"), {"HARNESS_PACING": "on"}) as server:
        yield server


@pytest.fixture(scope="module")
def uvicorn_server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """uvicorn (``make serve-fast``) serving the same app on the test database, pacing off."""
    with running_server(tmp_path_factory.mktemp("uvicorn"), {"HARNESS_PACING": "off"}, server="uvicorn") as server:
        yield server


@pytest.fixture(params=["daphne", "uvicorn"])
def server(request: pytest.FixtureRequest) -> LiveServer:
    """Each server the product runs under, in turn: daphne (``harness_server``) and uvicorn (``uvicorn_server``)."""
    return request.getfixturevalue("harness_server" if request.param == "daphne" else "uvicorn_server")


@pytest.fixture
def api_key() -> str:
    # Each test its own key: conversations (and their attempt counters) never leak between tests.
    return f"sk-test-{uuid.uuid4().hex}"


@pytest.fixture
def oai(harness_server: LiveServer, api_key: str, transactional_db: None) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key=api_key, max_retries=2, timeout=20)


@pytest.fixture
def claude(harness_server: LiveServer, api_key: str, transactional_db: None) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=harness_server.url, api_key=api_key, max_retries=2, timeout=20)


def make_scenario(scenario_id: str = "demo", turns: list[dict[str, Any]] | None = None, **fields: Any) -> Any:
    """Store a scenario (validated by the schema) and return its schema object."""
    from harnessweb.engine.schemas import Scenario as ScenarioSchema
    from scenarios_app.models import Scenario

    if turns is None:
        turns = [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from the harness."}}]
    scenario = ScenarioSchema.model_validate({"id": scenario_id, "turns": turns, **fields})
    Scenario.upsert(scenario)
    return scenario


def make_run(**fields: Any) -> Run:
    """Store a run: scenario "demo" over openai, started now, the model's defaults for the rest (source endpoint,
    status running); any field can be given."""
    from django.utils import timezone

    from runs_app.models import Run

    return Run.objects.create(**{"scenario_id": "demo", "protocol": "openai", "started_at": timezone.now(), **fields})


def make_ci_run(**fields: Any) -> Run:
    """Store a run as the CI API opens one: source and mode "ci", no protocol, no scenario."""
    return make_run(**{"source": "ci", "mode": "ci", "protocol": "", "scenario_id": "", **fields})


def make_verdict(
    criteria: Sequence[str | tuple[str, str]] | None = None, overall: str | None = None, **fields: Any
) -> JudgeVerdict:
    """Store a judge verdict on ``run`` (a new run if not given) with one criterion per item of ``criteria``: a
    verdict ("PASS", "FAIL") or a (verdict, reason) pair; by default one passed and one failed. ``overall`` defaults
    to PASS when every criterion passed, else FAIL."""
    from runs_app.models import JudgeVerdict, VerdictCriterion

    if criteria is None:
        criteria = [("PASS", "the list was created"), ("FAIL", "milk was forgotten")]
    pairs = [(item, "") if isinstance(item, str) else item for item in criteria]
    if overall is None:
        overall = "PASS" if all(value == "PASS" for value, _ in pairs) else "FAIL"
    run = fields.pop("run", None) or make_run()
    fields = {"summary": "The assistant mostly coped.", "judge_model": "claude-judge", **fields}
    verdict = JudgeVerdict.objects.create(run=run, overall=overall, **fields)
    for position, (value, reason) in enumerate(pairs, start=1):
        VerdictCriterion.objects.create(
            verdict=verdict, position=position, criterion=f"criterion {position}", judge_verdict=value, reason=reason
        )
    return verdict


def make_trace_log(run: Run | None = None, content: str = "", **fields: Any) -> TraceLog:
    """Store a trace log for turn 1 of ``run`` (a new run if not given), a few log lines unless ``content`` is given."""
    from runs_app.models import TraceLog

    content = content or "\n".join(["START request r1", "LLM request planner", "tool generate_ui ok", "SUCCESS"])
    return TraceLog.objects.create(
        run=run or make_run(),
        turn_number=fields.pop("turn_number", 1),
        file_path=fields.pop("file_path", "/tmp/logs/2025-01-01/10-00-00_r1.log"),
        content=content,
        **fields,
    )


def make_user(username: str = "user", *, staff: bool = False) -> User:
    """Store a user (tests log them in with force_login); a ``staff`` one may open the admin, with no permission."""
    from django.contrib.auth.models import User

    return User.objects.create_user(username, password="pw", is_staff=staff)


def make_staff(username: str = "reviewer") -> User:
    """Store a superuser: every admin page and action."""
    from django.contrib.auth.models import User

    return User.objects.create_superuser(username, f"{username}@example.com", "pw")


def wait_for(predicate: Callable[[], Any], timeout: float = 5.0, message: str = "condition") -> Any:
    """Poll until predicate() is truthy (the server records in batches, a few milliseconds behind)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(0.02)


def recorded_run(run_id: str, *, status: str | None = None, events: int = 1) -> Any:
    """The run as recorded, once it has at least ``events`` events (and the given status)."""
    from runs_app.models import Run

    def ready() -> Any:
        run = Run.objects.filter(id=run_id).first()
        if run is None or run.events.count() < events or (status and run.status != status):
            return None
        return run

    return wait_for(ready, message=f"run {run_id} (status {status}, {events} events)")


# -- the REST API -----------------------------------------------------------------------------------------------------


def make_token(scope: str = "write") -> str:
    """A new API token of that scope ("read" or "write"), in clear, as a CI sends it."""
    from runs_app import tokens

    return tokens.issue(f"test-{scope}", scope)[1]


def make_client(scope: str = "write") -> TestClient:
    """Ninja's test client for the whole API (paths relative to /api), sending a new token of that scope."""
    from ninja.testing import TestClient

    from harnessweb.api import api

    return TestClient(api, headers={"Authorization": f"Bearer {make_token(scope)}"})


# -- the admin --------------------------------------------------------------------------------------------------------


@pytest.fixture
def staff(db: None) -> User:
    return make_staff()


@pytest.fixture
def staff_client(staff: User) -> Client:
    """Django's test client, logged in as ``staff``."""
    from django.test import Client

    client = Client()
    client.force_login(staff)
    return client


def change_url(obj: Any) -> str:
    """The admin change page of a row."""
    from django.urls import reverse

    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])


def changelist(model: str, **params: str) -> str:
    """The admin list of ``model`` ("app_model"), with these query parameters."""
    from django.urls import reverse

    url = reverse(f"admin:{model}_changelist")
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def listed_pks(response: Any) -> set[int]:
    """The primary keys of the rows an admin list shows."""
    return {obj.pk for obj in response.context["cl"].result_list}


def text(response: Any) -> str:
    """The body of a response, decoded."""
    return response.content.decode()


def shows_badge(body: str, label: str) -> bool:
    """Whether a verdict/state badge with this label is on the page (not just a filter link of that name)."""
    return f">{label}</span>" in body


# -- the browser ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright (no browser download).

    Module-scoped: Playwright's sync API keeps an event loop running in the main thread while it is open, which
    would stop pytest-asyncio from running the async tests of later modules.
    """
    import shutil

    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread; the ORM calls the tests make around it are
    # still plain synchronous ones.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    executable = shutil.which("chromium")
    assert executable, "chromium is not installed: `make browser` installs it (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


def log_in(browser: Any, server: LiveServer, username: str = "admin", password: str = "harness-admin-pw") -> Any:
    """A new browser page, logged in through the real log-in form as a staff user (created if needed)."""
    from django.contrib.auth.models import User

    if not User.objects.filter(username=username).exists():
        User.objects.create_superuser(username, "", password)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    return page


@pytest.fixture
def admin_page(browser: Any, harness_server: LiveServer, transactional_db: None) -> Iterator[Any]:
    page = log_in(browser, harness_server)
    yield page
    page.context.close()


def screenshot_path(name: str, tmp_path: Path) -> Path:
    """Where a browser test saves its screenshot: docs/ when refreshing them (``make screenshots``), else a temporary
    folder, so that running the tests leaves the working tree clean."""
    folder = os.environ.get("HARNESS_SCREENSHOT_DIR")
    return (Path(folder) if folder else tmp_path) / name


async def endpoint_stream(run_id: uuid.UUID, scenario: str, stream: bool = True) -> Any:
    """The endpoint's consumer in-process (``ApplicationCommunicator``), sent a chat completion of ``scenario``
    naming the run (streamed unless ``stream`` is False); its answer's status read (200)."""
    import orjson
    from channels.testing import ApplicationCommunicator

    from runs_app.endpoint.consumer import FakeEndpointConsumer

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [(b"x-harness-run", str(run_id).encode())],
        "query_string": b"",
    }
    communicator = ApplicationCommunicator(FakeEndpointConsumer.as_asgi(), scope)
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": scenario}]}
    await communicator.send_input({"type": "http.request", "body": orjson.dumps(body), "more_body": False})
    assert (await communicator.receive_output(5))["status"] == 200
    return communicator
