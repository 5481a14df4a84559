"""The plugin's server mode: the same tests against the real app, started by the plugin (``harness.serve()``) or
given (``--harness-url``): configured answers and failure kinds as the run's script, scenarios, the history read
back from the run's events the moment each response ends, a subprocess answered through ``harness.env()``, and a
wrong assertion failing with the closest call; also under ``-n 2``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_scenario, make_token

pytest_plugins = ["pytester"]

SCENARIO = {"id": "greeting", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello, server"}}]}

TESTS = """
import os
import subprocess
import sys

import anthropic
import openai
import pytest


def ask(client, text="hi", **kw):
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}], **kw)


@pytest.fixture
def served(harness):
    if not os.environ.get("SERVER_GIVEN"):
        harness.serve()
    assert harness.base_url.startswith("http://127.0.0.1:")
    return harness


def test_answers_and_history(served):
    served.set_response(text="first")
    served.set_response(text="second")
    client = served.openai_client()
    assert [ask(client, f"q{i}", temperature=0.5).choices[0].message.content for i in range(3)] == [
        "first", "second", "second"]
    call = served.last_call
    assert (call.protocol, call.prompt, call.temperature, call.answered_by) == ("openai", "q2", 0.5, "configured")
    assert call.response["text"] == "second" and call.duration_ms is not None
    served.assert_called_with(prompt_contains="q1")
    served.assert_called_times(3, model="gpt-4o")


def test_failure_kinds_then_recovery(served):
    served.set_error("rate_limit", times=1)
    served.set_response(text="after the retry")
    message = served.anthropic_client().messages.create(
        model="claude-sonnet-4-6", max_tokens=20, messages=[{"role": "user", "content": "x"}])
    assert message.content[0].text == "after the retry"
    assert [c.error and c.error["kind"] for c in served.calls] == ["rate_limit", None]


def test_scenarios_by_id_and_whole(served):
    served.use_scenario("greeting")
    assert ask(served.openai_client()).choices[0].message.content == "Hello, server"
    served.use_scenario({"id": "inline-server", "turns": [
        {"turn": 1, "response": {"kind": "text", "assistant_text": "inline on the server"}}]})
    assert ask(served.openai_client()).choices[0].message.content == "inline on the server"


def test_a_subprocess_lands_in_the_history(harness):
    harness.set_response(text="to the subprocess")
    code = ("import openai; print(openai.OpenAI().chat.completions.create("
            "model='m', messages=[{'role': 'user', 'content': 'from a child'}]).choices[0].message.content)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **harness.env()},
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "to the subprocess", out.stderr
    assert harness.last_call.prompt == "from a child"


def test_default_clients_reach_the_server(served):
    served.set_response(text="default client, server mode")
    assert ask(openai.OpenAI()).choices[0].message.content == "default client, server mode"
    assert served.last_call.prompt == "hi"


def test_exceptions_stay_in_process(served):
    with pytest.raises(Exception, match="cannot cross the wire"):
        served.set_error(ValueError("API key invalid"))


def test_reset_forgets_the_history(served):
    ask(served.openai_client())
    served.reset()
    assert served.prompt_count == 0


def test_fails_wrong_assert_called_with(served):
    ask(served.openai_client(), "summarise the report", temperature=0.2)
    served.assert_called_with(prompt_contains="summarise", temperature=0.9)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_server_mode=TESTS)
    pytester.mkdir("scenarios")
    (pytester.path / "scenarios" / "greeting.json").write_text(json.dumps(SCENARIO))
    pytester.makeini("[pytest]\nharness_scenarios = scenarios\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def check(result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines(["*No call matches prompt_contains='summarise', temperature=0.9*"])
    result.stdout.fnmatch_lines(["*- temperature: wanted 0.9, sent 0.2*"])


def test_it_runs_a_project_on_a_server_it_starts(project: pytest.Pytester) -> None:
    check(project.runpytest_subprocess("-p", "no:cacheprovider"))


def test_it_runs_it_under_xdist_in_random_order(project: pytest.Pytester) -> None:
    check(project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--random-order"))


@pytest.mark.django_db(transaction=True)
def test_it_runs_it_on_a_given_server(project: pytest.Pytester, harness_server, monkeypatch) -> None:
    make_scenario("greeting", SCENARIO["turns"])  # a given server has its own scenarios
    monkeypatch.setenv("SERVER_GIVEN", "1")
    result = project.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-url", harness_server.url, "--harness-token", make_token("write")
    )
    check(result)


def test_it_asks_for_a_token_with_a_given_server(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "--harness-url", "http://127.0.0.1:9")
    result.stderr.fnmatch_lines(["*--harness-url needs a write token*"])
    assert result.ret != 0


OWN_KEYS = '''
import os
import subprocess

import httpx
import openai

NODE = """
const {OpenAI} = require(process.env.NODE_OPENAI);
new OpenAI({baseURL: process.argv[1] + "/v1", apiKey: "sk-node-own-key", maxRetries: 0}).chat.completions
  .create({model: "gpt-4o", messages: [{role: "user", content: "from node"}]})
  .then((r) => console.log(r.choices[0].message.content));
"""


def ask(url, text):
    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-app-own-key", max_retries=0)
    return client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": text}])


def test_a_client_with_its_own_key_is_the_test_s(harness):
    url = harness.serve()
    harness.set_response(text="configured for the test")
    assert ask(url, "own key").choices[0].message.content == "configured for the test"
    assert [(c.prompt, c.answered_by) for c in harness.calls] == [("own key", "configured")]
    with open("first.txt", "w") as f:
        f.write(f"{url} {harness.run_id}")


def test_a_node_script_given_only_the_url_is_the_test_s(harness):
    url, first = open("first.txt").read().split()
    ask(url, "between tests")  # no test is being served: a run of its own
    harness.serve()
    harness.set_response(text="to node")
    out = subprocess.run(["node", "-e", NODE, url], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "to node", out.stderr
    assert [c.prompt for c in harness.calls] == ["from node"]
    token = {"Authorization": f"Bearer {harness.server.token}"}
    events = httpx.get(f"{url}/api/runs/{first}", headers=token).json()["events"]
    assert [e["data"]["body"]["messages"][0]["content"] for e in events if e["kind"] == "request"] == ["own key"]
'''


def test_on_its_own_server_a_request_naming_no_run_is_the_test_s(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A client built with the server's URL and a key of its own (in the test, and in a node script given only
    # the URL) lands in the test running now, with its configured answers; between tests, in no test's run.
    pytester.makepyfile(test_own_keys=OWN_KEYS)
    monkeypatch.setenv("NODE_OPENAI", str(Path(__file__).parent / "clients" / "node_modules" / "openai"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
