"""The ``harness`` command line as a test runner in any language meets it, in real subprocesses (``python -m
harnessweb``). ``serve`` prints one JSON line once it answers (an SDK call plays a loaded scenario, the token opens
the API), stops on SIGTERM removing its fresh database, keeps its token hashed, refuses a taken port and a bad file
with a message and no traceback, and without Django says which extra to install; ``check`` names file, line and field
offline; the plugin's server mode starts its server through it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from harnessweb.engine.locate import line_of
from harnessweb.testing.server import read_announcement, start
from tests.conftest import VCR_DIR

GREETING = """\
id: greeting
turns:
  - turn: 1
    response:
      kind: text
      assistant_text: Hello from harness serve
"""
CASSETTE = "openai_simple_text.json"


def harness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "harnessweb", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def tmp_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a server started here: its temporary folders under tmp_path/tmp, no shared database."""
    (tmp_path / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return {**env, "TMPDIR": str(tmp_path / "tmp")}


@pytest.fixture
def scenarios(tmp_path: Path) -> Path:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "greeting.yaml").write_text(GREETING)
    return folder


class Served:
    def __init__(self, process: subprocess.Popen[bytes], line: dict[str, Any], log: Path) -> None:
        self.process, self.line, self.log = process, line, log
        self.url, self.token = line["url"], line["token"]

    def api(self, path: str, token: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token or self.token}"} if token != "" else {}
        return httpx.get(f"{self.url}/api{path}", headers=headers, timeout=20)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(30)


@pytest.fixture
def serve(tmp_path: Path, tmp_env: dict[str, str]) -> Iterator[Any]:
    started: list[Served] = []

    def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Served:
        log = tmp_path / f"serve-{len(started)}.log"
        command = [sys.executable, "-m", "harnessweb", "serve", *args]
        with log.open("wb") as stderr:
            process = subprocess.Popen(command, env=env or tmp_env, cwd=cwd, stdout=subprocess.PIPE, stderr=stderr)
        served = Served(process, read_announcement(process, log), log)
        started.append(served)
        return served

    yield run
    for served in started:
        if served.process.poll() is None:
            served.process.kill()
            served.process.wait()
        served.process.stdout.close()


def test_serve_fresh_prints_one_json_line_answers_from_its_scenarios_and_cleans_up_on_sigterm(
    serve: Any, scenarios: Path, tmp_path: Path
) -> None:
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    shutil.copy(VCR_DIR / CASSETTE, cassettes / CASSETTE)
    token_file = tmp_path / "token"

    served = serve(
        "--fresh", "--port", "0", "--scenarios", str(scenarios), "--cassettes", str(cassettes),
        "--token-file", str(token_file), "--pacing", "off",
    )  # fmt: skip

    assert sorted(served.line) == ["pid", "token", "url"]
    assert served.line["pid"] == served.process.pid
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", served.url) and not served.url.endswith(":0")
    client = openai.OpenAI(
        base_url=f"{served.url}/v1", api_key="sk-any", default_headers={"X-Harness-Scenario": "greeting"}
    )
    answer = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "Hello from harness serve"
    assert [s["id"] for s in served.api("/scenarios").json()["items"]] == ["greeting"]
    assert [c["name"] for c in served.api("/cassettes").json()["items"]] == [CASSETTE]
    assert served.api("/scenarios", token="").status_code == 401
    assert token_file.read_text() == served.token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    (fresh,) = (tmp_path / "tmp").glob("harness-serve-*")
    assert (fresh / "harness.sqlite3").exists()

    assert served.stop() == 0
    assert not fresh.exists()
    assert served.process.stdout.read() == b""  # the JSON line was all stdout held
    assert "Traceback" not in served.log.read_text()


def test_serve_without_fresh_migrates_the_settings_database_and_keeps_the_token_hashed(
    serve: Any, tmp_path: Path, tmp_env: dict[str, str]
) -> None:
    database = tmp_path / "kept.sqlite3"
    served = serve("--port", "0", env={**tmp_env, "SQLITE_PATH": str(database)})
    openai.OpenAI(base_url=f"{served.url}/v1", api_key="sk-any").chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "recorded"}]
    )

    assert served.stop() == 0

    assert database.exists() and not list((tmp_path / "tmp").glob("harness-serve-*"))
    with sqlite3.connect(database) as db:
        digests = [row[0] for row in db.execute("SELECT digest FROM runs_app_apitoken")]
        runs = db.execute("SELECT COUNT(*) FROM runs_app_run").fetchone()[0]
    assert digests == [hashlib.sha256(served.token.encode()).hexdigest()]
    assert served.token.encode() not in database.read_bytes()
    assert runs == 1  # the call's run, written before the server stopped


def test_serve_without_fresh_or_a_database_setting_keeps_db_sqlite3_in_the_folder_it_starts_in(
    serve: Any, tmp_path: Path, tmp_env: dict[str, str]
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    env = {k: v for k, v in tmp_env.items() if k not in ("SQLITE_PATH", "DATABASE_URL")}
    served = serve("--port", "0", env=env, cwd=folder)
    assert served.api("/scenarios", served.token).status_code == 200
    assert served.stop() == 0
    assert (folder / "db.sqlite3").exists()  # never the settings' default beside the package


def test_serve_plays_the_scenario_files_it_is_given_over_a_stored_version_that_differs(
    serve: Any, scenarios: Path, tmp_path: Path, tmp_env: dict[str, str]
) -> None:
    env = {**tmp_env, "SQLITE_PATH": str(tmp_path / "kept.sqlite3")}
    greeting = scenarios / "greeting.yaml"

    def answer() -> str:
        served = serve("--port", "0", "--scenarios", str(scenarios), env=env)
        client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="sk-any")
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "greeting"}])
        assert served.stop() == 0
        return reply.choices[0].message.content

    first = answer()
    greeting.write_text(GREETING.replace(first, "Changed on disk."))
    assert answer() == "Changed on disk."


def test_serve_refuses_a_taken_port_saying_so(scenarios: Path, tmp_env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = harness("serve", "--fresh", "--port", str(port), "--scenarios", str(scenarios), env=tmp_env)

    assert done.returncode == 1
    assert f"harness serve: cannot listen on 127.0.0.1:{port}: the port is taken" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_serve_refuses_a_bad_scenario_naming_file_line_and_field(tmp_path: Path, tmp_env: dict[str, str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(GREETING.replace("assistant_text", "assistant_txt"))

    done = harness("serve", "--fresh", "--port", "0", "--scenarios", str(bad), env=tmp_env)

    assert done.returncode == 1
    assert f"{bad}:6: turns.0.response.text.assistant_txt: Extra inputs are not permitted" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not list((tmp_path / "tmp").iterdir())  # nothing made: no fresh database


def test_serve_stops_at_a_cassette_the_server_cannot_keep_and_removes_its_fresh_database(
    tmp_path: Path, tmp_env: dict[str, str]
) -> None:
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    shutil.copy(VCR_DIR / CASSETTE, cassettes / "unnamed.json")  # a good cassette whose name says no provider

    done = harness("serve", "--fresh", "--port", "0", "--cassettes", str(cassettes), env=tmp_env)

    assert done.returncode == 1
    assert "unnamed.json" in done.stderr and "Cannot tell provider and scenario from the name" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not list((tmp_path / "tmp").iterdir())  # the fresh database made for it is gone


BLOCKED = """
import runpy, sys
for name in ("django", "channels", "daphne", "ninja"):
    sys.modules[name] = None  # as on a core install: importing them fails
sys.argv = ["harness", *sys.argv[1:]]
try:
    runpy.run_module("harnessweb", run_name="__main__")
finally:
    print("django imported" if sys.modules.get("django") else "no django", file=sys.stderr)
"""


def test_without_the_server_packages_serve_names_the_extra_and_check_still_works(
    scenarios: Path, tmp_env: dict[str, str]
) -> None:
    def blocked(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", BLOCKED, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env=tmp_env)

    served = blocked("serve", "--fresh", "--port", "0")
    assert served.returncode == 2
    assert 'harness serve: the server needs pip install "harnessweb[server]" (django is not installed)' in served.stderr
    assert "Traceback" not in served.stderr

    checked = blocked("check", str(scenarios))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout == "harness check: 1 scenario and 0 cassettes in 1 file: no errors\n"
    assert checked.stderr.strip() == "no django"


def test_check_passes_good_scenarios_and_cassettes_with_a_one_line_summary(scenarios: Path, tmp_path: Path) -> None:
    (scenarios / "other.json").write_text(json.dumps({"id": "other", "turns": GREETING_TURNS}))
    shutil.copy(VCR_DIR / CASSETTE, scenarios / CASSETTE)

    done = harness("check", str(scenarios))

    assert (done.returncode, done.stdout) == (0, "harness check: 2 scenarios and 1 cassette in 3 files: no errors\n")


GREETING_TURNS = [{"turn": 1, "response": {"kind": "text", "assistant_text": "hi"}}]
BAD_CASSETTE = """\
{
  "version": "1.0",
  "interactions": [
    {
      "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions"},
      "response": {
        "status": 999,
        "body_chunks": ["{}"]
      }
    }
  ]
}
"""


def test_check_names_file_line_and_field_of_each_error(tmp_path: Path) -> None:
    (tmp_path / "a_fields.yaml").write_text(GREETING + "  - turn: 2\n    response:\n      kind: text\n")
    (tmp_path / "b_tag.json").write_text(
        '{\n  "id": "b",\n  "turns": [\n    {"turn": 1,\n     "response": {}}\n  ]\n}\n'
    )
    (tmp_path / "c_syntax.json").write_text('{\n  "id": "c",\n  "turns": [\n')
    (tmp_path / "d_syntax.yaml").write_text("id: d\nturns: [\n  - x\n")
    (tmp_path / "e_cassette.json").write_text(BAD_CASSETTE)
    (tmp_path / "f_list.yaml").write_text("- id: f\n  turns:\n    - turn: one\n- 3\n")

    done = harness("check", str(tmp_path))

    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{tmp_path}/a_fields.yaml:9: turns.1.response.text.assistant_text: Field required",
        f"{tmp_path}/b_tag.json:5: turns.0.response: Unable to extract tag using discriminator 'kind'",
        f"{tmp_path}/c_syntax.json:4:1: invalid JSON: Expecting value",
        f"{tmp_path}/d_syntax.yaml:3:3: invalid YAML: expected the node content, but found '-' (while parsing a flow "
        "node)",
        f"{tmp_path}/e_cassette.json:7: not a VCR cassette: interactions.0.response.status: Input should be less than "
        "or equal to 599",
        f"{tmp_path}/f_list.yaml:3: [0] turns.0.turn: Input should be a valid integer, unable to parse string as an "
        "integer",
        f"{tmp_path}/f_list.yaml:3: [0] turns.0.response: Field required",
        f"{tmp_path}/f_list.yaml:4: [1] expected a scenario object, found int",
        "harness check: 8 errors in 6 files (0 scenarios and 0 cassettes without errors)",
    ]


def test_check_refuses_a_scenario_id_defined_twice_naming_both_places(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(GREETING)
    (tmp_path / "two.json").write_text(json.dumps({"turns": GREETING_TURNS, "id": "greeting"}, indent=2))

    done = harness("check", str(tmp_path / "one.yaml"), str(tmp_path / "two.json"))

    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == (
        f"{tmp_path}/two.json:11: scenario id 'greeting' is defined in {tmp_path}/one.yaml:1 too"
    )


def test_check_reads_the_shared_cassette_fixtures_leaving_out_their_manifest() -> None:
    done = harness("check", str(VCR_DIR))

    cassettes = len([p for p in VCR_DIR.glob("*.json") if "interactions" in json.loads(p.read_text())])
    assert done.returncode == 0, done.stdout
    assert done.stdout == (
        f"harness check: 0 scenarios and {cassettes} cassettes in {cassettes + 1} files: no errors; left out "
        f"(neither a scenario nor a cassette): {VCR_DIR}/anthropic_manifest.json\n"
    )


@pytest.mark.parametrize("yaml_text", [False, True])
def test_line_of_follows_a_path_through_strings_that_look_like_syntax(yaml_text: bool) -> None:
    value = {"a": '}{"[,', "b": [{"x": 1}, {"y": "]\n"}], "c": {"d": [1, 2, {"e": None}]}}
    text = json.dumps(value, indent=1)
    if yaml_text:
        import yaml

        text = yaml.safe_dump(value, sort_keys=False)
    lines = text.splitlines()

    assert lines[line_of(text, ["b", 1, "y"], yaml_text=yaml_text) - 1].strip().startswith(('"y"', "y:", "- y:"))
    assert "e" in lines[line_of(text, ["c", "d", 2, "e"], yaml_text=yaml_text) - 1]
    # An element the file does not hold (a union's tag, a missing field) is passed over.
    assert line_of(text, ["c", "tag", "d", "missing"], yaml_text=yaml_text) == line_of(
        text, ["c", "d"], yaml_text=yaml_text
    )


def test_the_plugin_s_server_mode_starts_its_server_through_harness_serve(scenarios: Path, tmp_path: Path) -> None:
    server = start(tmp_path, [str(scenarios)], pacing=False, default_usage="seed")
    try:
        headers = {"Authorization": f"Bearer {server.token}"}
        run_id = "5f0c6a1e-3b59-4d5e-9a63-0c2f4f1b7d10"
        taken = httpx.put(f"{server.url}/api/current-run", json={"run_id": run_id}, headers=headers, timeout=20)
        answer = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-own").chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"X-Harness-Scenario": "greeting"},
        )
        run = httpx.get(f"{server.url}/api/runs/{run_id}", headers=headers, timeout=20)
    finally:
        server.stop()

    assert taken.status_code == 200  # HARNESS_SESSION_SERVER reached the server
    assert answer.choices[0].message.content == "Hello from harness serve"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (64, 32)  # default_usage reached it
    assert run.status_code == 200  # a request naming no run joined the session's run
    assert server.process.returncode == 0
    assert "harness serve: serving on" in (tmp_path / "server.log").read_text()
