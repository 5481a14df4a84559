"""instructor's default modes against the server: Mode.TOOLS (a forced tool), Mode.JSON_SCHEMA (a structured output)
and Anthropic's tool mode each get an answer their pydantic model validates, with no scenario (the lorem mode
honours what the request demands). instructor cannot live beside the project's openai (it pins an older jiter), so
tests/clients/instructor/check.py runs in .venv/instructor, which `make test` installs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from runs_app.models import RunEvent
from tests.conftest import make_scenario

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "instructor" / "bin" / "python"
SCRIPT = ROOT / "tests" / "clients" / "instructor" / "check.py"
STRUCTURED = ROOT / "tests" / "clients" / "instructor" / "structured.py"


def run_check(url: str, *args: str, script: Path = SCRIPT) -> list[dict]:
    assert PYTHON.exists(), "instructor's virtualenv is missing: run `make clients`"
    done = subprocess.run([str(PYTHON), str(script), url, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_it_answers_instructors_default_modes_with_valid_models(harness_server, transactional_db) -> None:
    first = run_check(harness_server.url)
    assert [line["mode"] for line in first] == ["tool_call", "json_schema_mode", "anthropic_tools"]
    for line in first:
        weather = line["weather"]
        assert isinstance(weather["city"], str) and -60 <= weather["celsius"] <= 60 and weather["conditions"]
    assert run_check(harness_server.url) == first  # deterministic
    bodies = [e.data["body"] for e in RunEvent.objects.filter(kind="request")]
    assert any(b.get("tool_choice", {}).get("function", {}).get("name") == "Weather" for b in bodies)
    assert any(b.get("response_format", {}).get("type") == "json_schema" for b in bodies)
    assert any(b.get("tool_choice", {}).get("name") == "Weather" for b in bodies)  # Anthropic's forced tool


def test_a_structured_scenario_turn_answers_instructors_tool_modes(harness_server, transactional_db) -> None:
    alice = {"name": "Alice", "age": 30, "languages": ["en", "nb"]}
    make_scenario("instructor-person", [{"turn": 1, "response": {"kind": "structured", "data": alice}}])
    lines = run_check(harness_server.url, "instructor-person", script=STRUCTURED)
    assert lines == [{"mode": "tool_call", "person": alice}, {"mode": "anthropic_tools", "person": alice}]
