"""Activation by one environment variable (seed 002 §8.1): a Python process started with ``HARNESS_ACTIVATE`` (a
scenarios folder, or a server URL naming a run) answers its ``llm`` models and default SDK clients from the harness,
with no code of its own; and the package built as a wheel and installed elsewhere carries the ``.pth`` that does it,
its pytest plugin and its engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from runs_app.models import Run

ROOT = Path(__file__).resolve().parent.parent
PTH = (ROOT / "harnessweb-activate.pth").read_text()
CHILD = """
import httpx2, llm, openai
reply = openai.OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "greeting"}])
print(reply.choices[0].message.content)
print(llm.get_model("anthropic/claude").prompt("greeting").text())
try:
    httpx2.get("https://api.mistral.ai/v1/models")
    print("reached a real provider")
except httpx2.ConnectError as exc:
    print("refused:", exc)
"""
SCENARIO = {
    "id": "greeting",
    "match": {"first_user_contains": "greeting"},
    "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from the scenario"}}],
}


def run_child(env: dict[str, str], code: str, python: str = sys.executable, activate_by_hand: bool = True):
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL", "_ACTIVATE"))}
    prelude = PTH if activate_by_hand else ""  # the .pth line, as site.py runs it in an installed package
    done = subprocess.run(
        [python, "-c", prelude + "\n" + code], env={**clean, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_it_answers_a_process_from_a_scenarios_folder(tmp_path: Path) -> None:
    (tmp_path / "greeting.json").write_text(json.dumps(SCENARIO))
    env = {"HARNESS_ACTIVATE": str(tmp_path), "LLM_USER_PATH": str(tmp_path / "llm")}
    lines = run_child(env, CHILD)
    assert lines[:2] == ["Hello from the scenario", "Hello from the scenario"]
    assert lines[2].startswith("refused:") and "api.mistral.ai" in lines[2]


def test_it_leaves_a_process_without_the_variable_alone(tmp_path: Path) -> None:
    lines = run_child({"LLM_USER_PATH": str(tmp_path)}, "import llm\nprint(llm.get_model.__module__)")
    assert lines == ["llm"]


@pytest.mark.django_db(transaction=True)
def test_it_sends_a_process_to_a_server_run(harness_server, tmp_path: Path) -> None:
    from tests.conftest import make_scenario

    make_scenario("greeting", SCENARIO["turns"], match=SCENARIO["match"])
    run_id = uuid.uuid4()
    env = {"HARNESS_ACTIVATE": f"{harness_server.url}?run={run_id}", "LLM_USER_PATH": str(tmp_path)}
    code = CHILD.split("try:")[0]
    assert run_child(env, code) == ["Hello from the scenario", "Hello from the scenario"]
    run = Run.objects.get(id=run_id)
    assert run.events.filter(kind="request").count() == 2


def test_it_installs_from_a_wheel_with_its_plugin_and_activation(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip"]
    quiet = {"check": True, "capture_output": True, "timeout": 300}
    # Built from a copy: setuptools builds in the source folder, and a stale build/ there would go into the wheel.
    source = tmp_path / "source"
    skip = shutil.ignore_patterns(".*", "node_modules", "build", "*.egg-info", "__pycache__", "*.sqlite3*", "docs")
    shutil.copytree(ROOT, source, ignore=skip)
    subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)], **quiet)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], **quiet)
    python = str(venv / "bin" / "python")
    # The dependencies come from this project's environment (a path, so its editable install stays out); the
    # package itself only from the wheel.
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    (venv / "lib" / "python3.11" / "site-packages" / "deps.pth").write_text(deps + "\n")
    wheel = next(wheels.glob("harnessweb-*.whl"))
    subprocess.run([*pip, "--python", python, "install", "--no-deps", "-q", str(wheel)], **quiet)

    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "greeting.json").write_text(json.dumps(SCENARIO))
    env = {"HARNESS_ACTIVATE": str(tmp_path / "scenarios"), "LLM_USER_PATH": str(tmp_path / "llm")}
    code = "import harnessweb; print(harnessweb.__file__)\n" + CHILD
    lines = run_child(env, code, python=python, activate_by_hand=False)  # the installed .pth does it
    assert lines[0].startswith(str(venv))
    assert lines[1:3] == ["Hello from the scenario", "Hello from the scenario"]

    project = tmp_path / "project"
    project.mkdir()
    (project / "test_installed.py").write_text(
        "def test_it(harness):\n"
        "    harness.set_response(text='from the wheel')\n"
        "    reply = harness.openai_client().chat.completions.create(\n"
        "        model='m', messages=[{'role': 'user', 'content': 'x'}])\n"
        "    assert reply.choices[0].message.content == 'from the wheel'\n"
        "\n"
        "def test_served(harness):\n"
        "    harness.serve()  # the app itself, from the wheel: migrations, settings, the endpoint, the API\n"
        "    harness.set_response(text='served from the wheel')\n"
        "    reply = harness.openai_client().chat.completions.create(\n"
        "        model='m', messages=[{'role': 'user', 'content': 'x'}])\n"
        "    assert reply.choices[0].message.content == 'served from the wheel'\n"
        "    assert harness.last_call.answered_by == 'configured'\n"
    )
    (project / "pytest.ini").write_text("[pytest]\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "HARNESS_ACTIVATE")}
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django"],
        cwd=project, env=clean, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
