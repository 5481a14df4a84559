"""The map in docs/architecture.md, held: imports go one way (pure → Django → pages), scenarios_app never imports
runs_app, only URLconfs import views, no module imports itself back, and each module is one small room."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harnessweb", "runs_app", "scenarios_app")
# No Django: the core (harnessweb.engine and harnessweb.judging, below), the editor's form mapping, the resilience
# analysis, cassettes read as streams and converted into scenarios.
PURE = (
    "harnessweb.text",
    "scenarios_app.editor.fields",
    "scenarios_app.editor.mapping",
    "scenarios_app.editor.binding",
    "scenarios_app.editor.kept",
    "scenarios_app.editor.raw",
    "runs_app.live.resilience",
    "runs_app.overview.figures",  # the overview's figures and its chart's geometry, from rows
    "runs_app.live.waterfall",  # a run's timing as geometry, from its events
    "runs_app.live.worddiff",
    "runs_app.ci.recordings",
    "runs_app.ci.messages",  # an uploaded conversation normalised to one shape
)
# Pure modules may lean on these third-party libraries, none of which reaches a database or a network
# (genai_prices: its price lookup reads the snapshot it ships; its updater, which fetches, is never started).
PURE_LIBRARIES = {"orjson", "pydantic", "yaml", "jsonschema", "genai_prices"}
# The server's stack, which neither pure modules nor the plugin import.
DJANGO_STACK = {"django", "channels", "ninja", "daphne", "asgiref"}
MAX_LINES = 460


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                found[module_name(path)] = path
    return found


MODULES = project_modules()


def modules_of(package: str) -> list[str]:
    return sorted(name for name in MODULES if name == package or name.startswith(package + "."))


# Every module of the core (the engine, the protocols, the route table, scenario files; the judge's prompt, parsing,
# transcript and call) is pure too.
PURE += (*modules_of("harnessweb.engine"), *modules_of("harnessweb.judging"))


def imports_of(name: str) -> set[str]:
    """Every module ``name`` imports (at any depth of its code), as full dotted names."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            found.add(base)
            # ``from package import module`` imports that module.
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)
    return found


def project_imports(name: str) -> set[str]:
    return {imported for imported in imports_of(name) if imported in MODULES}


def test_it_finds_the_modules_it_checks() -> None:
    assert {"harnessweb.engine.playback", "runs_app.endpoint.consumer", "harnessweb.apikit"} <= set(MODULES)
    assert set(PURE) <= set(MODULES)


def test_it_keeps_scenarios_app_from_importing_runs_app() -> None:
    offenders = {
        name: sorted(i for i in imports_of(name) if i.split(".")[0] == "runs_app")
        for name in MODULES
        if name.startswith("scenarios_app")
    }
    assert {name: found for name, found in offenders.items() if found} == {}


@pytest.mark.parametrize("name", PURE)
def test_it_keeps_the_engine_and_the_encoders_pure(name: str) -> None:
    for imported in imports_of(name):
        top = imported.split(".")[0]
        if imported in PACKAGES:
            continue  # ``from harnessweb.engine import loader``: the package's __init__ is a docstring
        if top in PACKAGES:
            assert imported in PURE, f"{name} imports {imported}, which is not pure"
        else:
            assert top not in DJANGO_STACK, f"{name} imports {imported}"
            assert top in PURE_LIBRARIES or top in _stdlib(), f"{name} imports {imported}"


@pytest.mark.parametrize("name", modules_of("harnessweb.testing"))
def test_it_keeps_the_plugin_free_of_django(name: str) -> None:
    # The plugin runs inside another project's test suite, which may be a Django project with its own settings.
    for imported in imports_of(name):
        top = imported.split(".")[0]
        assert top not in DJANGO_STACK, f"{name} imports {imported}"
        if top in PACKAGES and imported not in PACKAGES:
            assert imported in PURE or imported.startswith("harnessweb.testing"), f"{name} imports {imported}"


# What the core install ships (the engine, the judge's pure modules, the pytest plugin) runs where the server's
# packages are not installed: imported into a fresh interpreter, none of them may bring in Django or a Django app.
SERVER_STACK = DJANGO_STACK | {"runs_app", "scenarios_app"}
CORE = {
    "the plugin's entry point": ["harnessweb.testing.plugin"],
    **{package: modules_of(package) for package in ("harnessweb.testing", "harnessweb.engine", "harnessweb.judging")},
}
# Imports each module named in turn and prints which of the server's modules each one brought in ("" for any there
# before the first import); the static checks above miss what an import does at run time.
IMPORT_EACH = """
import importlib, json, sys
stack = set(sys.argv[1].split(","))
loaded = lambda: {m for m in sys.modules if m.split(".")[0] in stack}
before, found = set(), {}
for name in ["", *sys.argv[2:]]:
    if name:
        importlib.import_module(name)
    now = loaded()
    if now - before:
        found[name] = sorted(now - before)
    before = now
print(json.dumps(found))
"""


@pytest.mark.parametrize("core", sorted(CORE))
def test_it_keeps_the_core_install_free_of_the_server(core: str) -> None:
    assert len(CORE[core]) >= 1
    command = [sys.executable, "-c", IMPORT_EACH, ",".join(sorted(SERVER_STACK)), *CORE[core]]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


def test_it_keeps_the_server_from_importing_the_plugin() -> None:
    offenders = [
        (name, imported)
        for name in MODULES
        if not name.startswith("harnessweb.testing")
        for imported in project_imports(name)
        if imported.startswith("harnessweb.testing")
    ]
    assert offenders == []


def _stdlib() -> frozenset[str]:
    import sys

    return frozenset(sys.stdlib_module_names) | {"__future__"}


def test_it_imports_views_only_from_urlconfs() -> None:
    offenders = [
        (name, imported)
        for name in MODULES
        for imported in project_imports(name)
        if imported.rsplit(".", 1)[-1] == "views" and name.rsplit(".", 1)[-1] != "urls"
    ]
    assert offenders == []


def test_it_has_no_import_cycle() -> None:
    graph = {name: project_imports(name) - {name} for name in MODULES}
    # A package's __init__ importing its own submodules is how Python packages work, not a cycle between rooms.
    for name in graph:
        if MODULES[name].name == "__init__.py":
            graph[name] = {i for i in graph[name] if not i.startswith(name + ".")}
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_says_what_it_owns_and_stays_one_room(name: str) -> None:
    source = MODULES[name].read_text()
    assert ast.get_docstring(ast.parse(source)), f"{name} has no docstring saying what it owns"
    assert len(source.splitlines()) <= MAX_LINES, f"{name} has grown past {MAX_LINES} lines: split it"


def test_every_protocol_answers_the_consumer_s_calls_the_same_way() -> None:
    from harnessweb.engine import routes, wire
    from harnessweb.engine.exchange import Failure

    assert {"openai", "anthropic", "completions"} <= set(wire.BY_NAME)
    assert routes.play_wire("/v1/responses") is wire.BY_NAME["responses"]
    assert routes.play_wire("/v1beta/models/gemini-2.5-flash:streamGenerateContent") is wire.BY_NAME["gemini"]
    assert routes.play_wire("/openai/v1/responses") is wire.BY_NAME["responses"]
    assert routes.play_wire("/openai/deployments/d/chat/completions") is wire.BY_NAME["azure"]
    failure = Failure(status="rate_limit", message="slow down", retryable=True, retry_after_ms=1500)
    for module in wire.WIRES:
        assert module.LABEL and isinstance(module.REQUEST_ID_HEADER, bytes)
        assert module.encode_error(404, "missing", param="model", request_id="req_1").status == 404
        assert module.encode_failure(failure, "req_1").status == 429
        assert module.encode_models(["a", "b"]).status == 200
        assert module.malformed(True).status == 200
