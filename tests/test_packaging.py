"""The package from outside the repository, as a team installs it: the wheel built from a copy of the sources, then
on Python 3.11, 3.12 and 3.13 a virtualenv holding a team's project with its own older pins, the core wheel installed
beside them (nothing the team pinned moves, no Django comes with it) and the team's own pytest suite run there with
the plugin in-process (an openai SDK call a scenario answers, the ``llm`` boundary); then the ``server`` extra in a
Python 3.13 virtualenv, where ``harness serve --fresh --port 0`` answers an SDK call.

Everything runs in temporary folders with the repository off the path, so only the wheel's files can answer. pip
keeps its usual cache (``~/.cache/pip``), so a run after the first downloads nothing.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("3.11", "3.12", "3.13")
# What an sdist of the project holds (MANIFEST.in): the wheel is built from these alone, never from a stale build/.
SOURCES = (
    "pyproject.toml",
    "MANIFEST.in",
    "README.md",
    "harnessweb-activate.pth",
    "build_backend",
    "harnessweb",
    "runs_app",
    "scenarios_app",
    "templates",  # the dashboard's pages, which the build backend puts into the wheel
    "static",
)
# The team's own pins: older than the versions constraints.txt holds, and our lower bounds (pyproject.toml), so the
# bounds are the versions tested here. httpx is not ours at all: the plugin answers it in-process where it is there.
TEAM_PINS = {"pydantic": "2.11.0", "PyYAML": "6.0.2", "httpx": "0.27.2", "orjson": "3.10.7", "jsonschema": "4.23.0"}
SERVER_PACKAGES = ("django", "channels", "daphne", "ninja", "psycopg")
INSTALL_TIMEOUT_S = 600
SERVE_TIMEOUT_S = 120  # harness serve gives up after 60 s itself

TEAM_SCENARIO = {
    "id": "team-greeting",
    "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello, team: a scenario answered."}}],
}

TEAM_TESTS = """
import httpx
import llm
import openai
import pydantic
import pytest
import yaml


def test_the_teams_own_versions_are_the_ones_imported():
    assert (pydantic.VERSION, yaml.__version__, httpx.__version__) == ({pydantic!r}, {pyyaml!r}, {httpx!r})


@pytest.mark.harness_scenario("team-greeting")
def test_an_openai_sdk_call_is_answered_by_a_scenario(harness):
    client = openai.OpenAI(api_key="sk-team")  # the team's own client, on the provider's default URL
    reply = client.chat.completions.create(model="gpt-4o", messages=[{{"role": "user", "content": "hello"}}])
    assert reply.choices[0].message.content == "Hello, team: a scenario answered."
    assert [call.prompt for call in harness.calls] == ["hello"]


def test_the_llm_boundary(harness, mock_llm_responses):
    mock_llm_responses.set("gpt-4o-mini", {{"summary": "short"}})
    assert llm.get_model("gpt-4o-mini").prompt("summarise this").json() == {{"summary": "short"}}
    assert [call.prompt for call in harness.calls] == ["summarise this"]
"""


def python_for(version: str) -> str:
    """``pythonX.Y`` when it runs, else pyenv's installed X.Y (as the Makefile's ``core_python`` finds it)."""
    name = f"python{version}"
    if shutil.which(name) and subprocess.run([name, "-c", ""], capture_output=True).returncode == 0:
        return name
    prefix = (
        subprocess.run(["pyenv", "prefix", version], capture_output=True, text=True) if shutil.which("pyenv") else None
    )
    candidate = Path(prefix.stdout.strip()) / "bin" / name if prefix and prefix.returncode == 0 else None
    assert candidate and candidate.exists(), f"Python {version} is not installed (neither {name} nor pyenv's {version})"
    return str(candidate)


def outside_env(tmp: Path) -> dict[str, str]:
    """A team's shell: no variable of this project's (settings, activation, a harness URL), its own llm folder."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HARNESS_", "DJANGO_", "PYTHON"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    return {**env, "LLM_USER_PATH": str(tmp / "llm-user"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = INSTALL_TIMEOUT_S) -> str:
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, (
        f"{' '.join(args)} failed ({out.returncode}):\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
    )
    return out.stdout


def make_venv(version: str, where: Path, env: dict[str, str]) -> Path:
    run([python_for(version), "-m", "venv", str(where)], where.parent, env)
    return where / "bin" / "python"


def frozen(python: Path, env: dict[str, str]) -> set[str]:
    return set(run([str(python), "-m", "pip", "freeze", "--all"], python.parent, env).split())


def name_of(line: str) -> str:
    return line.split("==")[0].lower().replace("_", "-")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The core wheel, built by the project's own backend from a copy of what an sdist holds."""
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    env = outside_env(dist)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(source)], dist, env)
    (built,) = dist.glob("harnessweb-*.whl")
    return built


@pytest.mark.parametrize("version", VERSIONS)
def test_a_teams_virtualenv_keeps_its_pins_and_runs_its_suite_with_the_plugin(
    wheel: Path, tmp_path: Path, version: str
) -> None:
    env = outside_env(tmp_path)
    python = make_venv(version, tmp_path / "venv", env)
    team = tmp_path / "team"
    team.mkdir()
    (team / "requirements.txt").write_text("".join(f"{name}=={pin}\n" for name, pin in TEAM_PINS.items()) + "pytest\n")
    run([str(python), "-m", "pip", "install", "--quiet", "-r", "requirements.txt"], team, env)
    before = frozen(python, env)

    run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], team, env)
    after = frozen(python, env)
    assert {f"{name}=={pin}" for name, pin in TEAM_PINS.items()} <= before
    moved = sorted(before - after)
    assert not moved, f"installing the core changed the team's packages: {moved}"
    run([str(python), "-m", "pip", "check"], team, env)  # every requirement met, the team's and ours
    server_side = sorted(line for line in after if name_of(line) in SERVER_PACKAGES)
    assert not server_side, f"the core pulled in the server's packages: {server_side}"
    probe = "import importlib.util, harnessweb; print(importlib.util.find_spec('django') is None, harnessweb.__file__)"
    no_django, location = run([str(python), "-c", probe], team, env).split()
    assert no_django == "True"
    assert location.startswith(str(tmp_path / "venv")), location  # the wheel's files, not the checkout's

    (team / "scenarios").mkdir()
    (team / "scenarios" / "greeting.json").write_text(json.dumps(TEAM_SCENARIO))
    (team / "pytest.ini").write_text("[pytest]\nharness_scenarios = scenarios\n")
    pins = {"pydantic": TEAM_PINS["pydantic"], "pyyaml": TEAM_PINS["PyYAML"], "httpx": TEAM_PINS["httpx"]}
    (team / "test_team.py").write_text(TEAM_TESTS.format(**pins))
    out = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=team,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    assert "3 passed" in out.stdout, out.stdout[-3000:]


@pytest.fixture
def served(wheel: Path, tmp_path: Path) -> Iterator[dict[str, object]]:
    """``harness serve --fresh --port 0`` from the wheel with its server extra (the application's exact versions,
    constraints.txt) in a Python 3.13 virtualenv, with a scenario folder; its JSON line, stopped after the test."""
    env = outside_env(tmp_path)
    python = make_venv("3.13", tmp_path / "venv", env)
    run(
        [str(python), "-m", "pip", "install", "--quiet", "-c", str(ROOT / "constraints.txt"), f"{wheel}[server]"],
        tmp_path,
        env,
    )
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "greeting.json").write_text(json.dumps(TEAM_SCENARIO))
    harness = tmp_path / "venv" / "bin" / "harness"
    args = [str(harness), "serve", "--fresh", "--port", "0", "--scenarios", str(scenarios), "--pacing", "off"]
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], SERVE_TIMEOUT_S)
        line = process.stdout.readline() if ready else ""
        log_text = (tmp_path / "serve.log").read_text()
        assert line, f"harness serve printed nothing in {SERVE_TIMEOUT_S} s (exit {process.poll()}):\n{log_text}"
        yield json.loads(line)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()


def test_the_server_extra_serves_an_sdk_call_from_one_command(served: dict[str, object], tmp_path: Path) -> None:
    assert set(served) == {"url", "token", "pid"}
    client = openai.OpenAI(base_url=f"{served['url']}/v1", api_key="sk-team", max_retries=0, timeout=20)
    reply = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "hello"}],
        extra_headers={"X-Harness-Scenario": "team-greeting"},
    )
    assert reply.choices[0].message.content == "Hello, team: a scenario answered."
    # The wheel carries the dashboard's templates and static files (build_backend/harness_backend.py): its pages draw.
    page = httpx.get(f"{served['url']}/login/", timeout=20)
    assert page.status_code == 200 and "<form" in page.text, page.text[:500]
    stylesheet = re.search(r'href="(/static/[^"]+\.css)"', page.text)
    assert stylesheet, page.text[:500]
    assert httpx.get(f"{served['url']}{stylesheet.group(1)}", timeout=20).status_code == 200
    # The server extra brings uvloop, which make run's daphne runs on (harnessweb/serve.py says so at start).
    assert "daphne on uvloop" in (tmp_path / "serve.log").read_text()
