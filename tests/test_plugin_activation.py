"""Activation by one environment variable (seed 002 §8.1): a Python process started with ``HARNESS_ACTIVATE`` (a
scenarios folder, or a server URL naming a run) answers its ``llm`` models and default SDK clients from the harness,
with no code of its own, in every install: this project's own virtualenv (``make setup``'s editable install), an
editable install elsewhere, and the package built as a wheel and installed elsewhere, which carries the ``.pth``
that does it, its pytest plugin and its engine."""

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


def run_child(env: dict[str, str], code: str, python: str = sys.executable):
    """``code`` in a new interpreter (this project's own virtualenv unless ``python`` is given), activated by
    nothing but its install and ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL", "_ACTIVATE"))}
    done = subprocess.run([python, "-c", code], env={**clean, **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_it_answers_a_process_of_the_projects_own_virtualenv(tmp_path: Path) -> None:
    # make setup's editable install, followed as the README says: the variable alone activates it
    assert Path(sys.prefix).resolve() == (ROOT / ".venv").resolve(), f"not the project's .venv: {sys.prefix}"
    (tmp_path / "greeting.json").write_text(json.dumps(SCENARIO))
    env = {"HARNESS_ACTIVATE": str(tmp_path), "LLM_USER_PATH": str(tmp_path / "llm")}
    lines = run_child(env, CHILD)
    assert lines[:2] == ["Hello from the scenario", "Hello from the scenario"]
    assert lines[2].startswith("refused:") and "api.mistral.ai" in lines[2]


def test_activating_twice_patches_once(tmp_path: Path) -> None:
    env = {"HARNESS_ACTIVATE": str(tmp_path), "LLM_USER_PATH": str(tmp_path / "llm")}
    code = (
        "import httpx2, llm\n"
        "from harnessweb.testing import activation\n"
        "patched = (llm.get_model, httpx2.HTTPTransport.handle_request)\n"
        "activation.activate()\n"
        "print(patched == (llm.get_model, httpx2.HTTPTransport.handle_request))\n"
    )
    assert run_child(env, code) == ["True"]


def test_the_process_harness_reads_the_default_usage_as_the_plugin_does(tmp_path: Path) -> None:
    (tmp_path / "greeting.json").write_text(json.dumps(SCENARIO))
    env = {"HARNESS_ACTIVATE": str(tmp_path), "LLM_USER_PATH": str(tmp_path / "llm"), "HARNESS_DEFAULT_USAGE": "seed"}
    code = (
        "import openai\n"
        "usage = openai.OpenAI().chat.completions.create(\n"
        "    model='gpt-4o', messages=[{'role': 'user', 'content': 'greeting'}]).usage\n"
        "print(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)\n"
    )
    assert run_child(env, code) == ["64 32 96"]  # seed 000's, as HARNESS_DEFAULT_USAGE=seed asks


def test_the_process_harness_names_a_default_usage_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harnessweb.testing import activation

    (tmp_path / "greeting.json").write_text(json.dumps(SCENARIO))
    monkeypatch.setattr(activation, "_process", None)
    monkeypatch.setenv("HARNESS_ACTIVATE", str(tmp_path))
    monkeypatch.setenv("HARNESS_DEFAULT_USAGE", "fixed")
    with pytest.raises(ValueError, match="HARNESS_DEFAULT_USAGE must be 'counted' or 'seed', not 'fixed'"):
        activation.process_harness()
    monkeypatch.setenv("HARNESS_DEFAULT_USAGE", "Seed")
    assert activation.process_harness().options.default_usage == "seed"


def source_copy(tmp_path: Path) -> Path:
    """The checkout copied (setuptools builds in the source folder, and a stale build/ there would be packaged)."""
    source = tmp_path / "source"
    skip = shutil.ignore_patterns(".*", "node_modules", "build", "*.egg-info", "__pycache__", "*.sqlite3*", "docs")
    shutil.copytree(ROOT, source, ignore=skip)
    return source


def bare_venv(tmp_path: Path) -> str:
    """A new virtualenv whose dependencies come from this project's environment (a path, so its editable install
    stays out); its python."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "deps.pth").write_text(deps + "\n")
    return str(venv / "bin" / "python")


def test_it_answers_a_process_of_an_editable_install_elsewhere(tmp_path: Path) -> None:
    source, python = source_copy(tmp_path), bare_venv(tmp_path)
    pip = [sys.executable, "-m", "pip", "--python", python]
    subprocess.run([*pip, "install", "--no-deps", "-q", "-e", str(source)], check=True, capture_output=True)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "greeting.json").write_text(json.dumps(SCENARIO))
    env = {"HARNESS_ACTIVATE": str(tmp_path / "scenarios"), "LLM_USER_PATH": str(tmp_path / "llm")}
    code = "import harnessweb; print(harnessweb.__file__)\n" + CHILD
    lines = run_child(env, code, python=python)
    assert lines[0] == str(source / "harnessweb" / "__init__.py")  # the checkout itself: an editable install
    assert lines[1:3] == ["Hello from the scenario", "Hello from the scenario"]


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
    source = source_copy(tmp_path)
    subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)], **quiet)
    python = bare_venv(tmp_path)  # the package itself only from the wheel
    wheel = next(wheels.glob("harnessweb-*.whl"))
    subprocess.run([*pip, "--python", python, "install", "--no-deps", "-q", str(wheel)], **quiet)

    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "greeting.json").write_text(json.dumps(SCENARIO))
    env = {"HARNESS_ACTIVATE": str(tmp_path / "scenarios"), "LLM_USER_PATH": str(tmp_path / "llm")}
    code = "import harnessweb; print(harnessweb.__file__)\n" + CHILD
    lines = run_child(env, code, python=python)  # the installed .pth does it
    assert lines[0].startswith(str(tmp_path / "venv"))
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
