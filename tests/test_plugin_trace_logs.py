"""``--harness-trace-dir DIR`` (ini ``harness_trace_dir``) in a throwaway project: each turn's trace log (seed 001's
``{date}/{time}_{requestId}.log``, SUCCESS / FAILED footer) as ``harness.turn_logs``, in-process and in server mode
(a subprocess's calls, the logs then on the test's run), and uploaded by ``--harness-upload`` with their turn
numbers and outcomes."""

from __future__ import annotations

import pytest

from runs_app.models import Run, TraceLog
from tests.conftest import make_token

pytest_plugins = ["pytester"]

APP = '''
import time
from pathlib import Path

LOGS = Path("logs")


def write_log(turn, footer):
    """What seed 001's TraceLogger writes after the turn's LLM call returned."""
    folder = LOGS / "2026-11-24"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"10-00-{turn:02d}_req{turn}.log"
    path.write_text(f"START req{turn}\\nLLM request planner\\n{footer}\\n")
    return path


def send(client, text, turn, footer="SUCCESS"):
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    return write_log(turn, footer)
'''

IN_PROCESS = """
from app import send, write_log


def test_two_turns(harness):
    client = harness.openai_client()
    first = send(client, "make a grocery list", 1)
    second = send(client, "add hummus", 2, footer="=== FAILED: the reply was not sent ===")
    logs = harness.turn_logs
    assert [(log.turn_number, log.file_path, log.outcome) for log in logs] == [
        (1, str(first.resolve()), "success"), (2, str(second.resolve()), "failed")]
    assert logs[0].content == "START req1\\nLLM request planner\\nSUCCESS\\n"


def test_a_later_test_never_takes_an_earlier_one_s_files(harness):
    send(harness.openai_client(), "hello", 3, footer="no footer yet")
    assert [(log.turn_number, log.file_path.endswith("req3.log"), log.outcome) for log in harness.turn_logs] == [
        (1, True, "")]
"""


@pytest.mark.django_db(transaction=True)
def test_it_gives_each_turn_its_log_and_uploads_them(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(app=APP, test_traced=IN_PROCESS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--harness-trace-dir", "logs",
        "--harness-upload", harness_server.url, "--harness-token", make_token("write"),
    )  # fmt: skip

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*harness: uploaded 2 test run(s)*"])
    run = Run.objects.get(name="test_traced.py::test_two_turns")
    logs = list(run.trace_logs.order_by("turn_number").values_list("turn_number", "file_path", "outcome", "content"))
    folder = pytester.path / "logs" / "2026-11-24"
    assert logs == [
        (1, str(folder / "10-00-01_req1.log"), "success", "START req1\nLLM request planner\nSUCCESS\n"),
        (2, str(folder / "10-00-02_req2.log"), "failed", "START req2\nLLM request planner\n"
         "=== FAILED: the reply was not sent ===\n"),
    ]  # fmt: skip
    later = Run.objects.get(name="test_traced.py::test_a_later_test_never_takes_an_earlier_one_s_files")
    assert list(later.trace_logs.values_list("turn_number", "outcome")) == [(1, "")]


def test_the_ini_option_names_the_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(app=APP, test_traced=IN_PROCESS)
    pytester.makeini("[pytest]\nharness_trace_dir = logs\n")

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")

    result.assert_outcomes(passed=2)


def test_a_trace_dir_that_is_a_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(harness):\n    pass\n")
    (pytester.path / "logs").write_text("not a folder")

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--harness-trace-dir", "logs")

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*UsageError: --harness-trace-dir: */logs is not a folder*"])


SERVER_MODE = '''
import subprocess
import sys

PROGRAM = """
import time
import openai
from app import send
client = openai.OpenAI()
send(client, "make a grocery list", 1)
time.sleep(0.05)
send(client, "add hummus", 2, footer="FAILED")
"""


def test_a_subprocess_s_turns(harness):
    env = {**harness.env(), "PYTHONPATH": "."}
    subprocess.run([sys.executable, "-c", PROGRAM], env=env, check=True)
    assert len(harness.calls) == 2
    assert [(log.turn_number, log.file_path.endswith(f"req{log.turn_number}.log"), log.outcome)
            for log in harness.turn_logs] == [(1, True, "success"), (2, True, "failed")]
    with open("run_id.txt", "w") as f:
        f.write(str(harness.run_id))
'''


@pytest.mark.django_db(transaction=True)
def test_in_server_mode_turns_follow_the_calls_and_land_on_the_run(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(app=APP, test_served=SERVER_MODE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-trace-dir", "logs",
        "--harness-url", harness_server.url, "--harness-token", make_token("write"),
    )  # fmt: skip

    result.assert_outcomes(passed=1)
    run_id = (pytester.path / "run_id.txt").read_text()
    stored = TraceLog.objects.filter(run_id=run_id).order_by("turn_number")
    assert [(log.turn_number, log.outcome, log.content.splitlines()[0]) for log in stored] == [
        (1, "success", "START req1"),
        (2, "failed", "START req2"),
    ]


AGENT = '''
from app import write_log


def send_message(client, text, turn, footer="SUCCESS"):
    """One user message: plan, act and answer (three LLM calls), then the turn's trace log."""
    for step in ("plan", "act", "answer"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"{step}: {text}"}])
    return write_log(turn, footer)
'''

BY_USER_TURN = """
import subprocess
import sys

from agent import send_message

PROGRAM = "import openai, sys; from agent import send_message as s; s(openai.OpenAI(), sys.argv[1], int(sys.argv[2]))"


def test_user_turns(harness):
    client = harness.openai_client()
    send_message(client, "make a grocery list", 1)
    assert harness.end_turn().turn_number == 1
    send_message(client, "add hummus", 2, footer="FAILED")
    harness.end_turn()
    assert len(harness.calls) == 6
    assert [(log.turn_number, log.file_path.endswith(f"req{n}.log"), log.outcome)
            for n, log in enumerate(harness.turn_logs, 1)] == [(1, True, "success"), (2, True, "failed")]


def test_user_turns_in_server_mode(harness):
    env = {**harness.env(), "PYTHONPATH": "."}
    for turn, text in ((3, "plan a trip"), (4, "book it")):
        subprocess.run([sys.executable, "-c", PROGRAM, text, str(turn)], env=env, check=True)
        harness.end_turn()
    assert len(harness.calls) == 6
    assert [(log.turn_number, log.file_path[-8:]) for log in harness.turn_logs] == [(1, "req3.log"), (2, "req4.log")]
    with open("run_id.txt", "w") as f:
        f.write(str(harness.run_id))
"""


@pytest.mark.django_db(transaction=True)
def test_end_turn_numbers_the_logs_by_user_turn_and_uploads_them(pytester: pytest.Pytester, harness_server) -> None:
    # Seed 001's collectTurnLog after each message: two messages of three LLM calls each are turns 1 and 2 (by
    # call they were 3 and 6), in the test and uploaded.
    pytester.makepyfile(app=APP, agent=AGENT, test_user_turns=BY_USER_TURN)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-trace-dir", "logs", "-k", "not server_mode",
        "--harness-upload", harness_server.url, "--harness-token", make_token("write"),
    )  # fmt: skip

    result.assert_outcomes(passed=1, deselected=1)
    uploaded = Run.objects.get(name="test_user_turns.py::test_user_turns")
    assert list(uploaded.trace_logs.order_by("turn_number").values_list("turn_number", "outcome")) == [
        (1, "success"),
        (2, "failed"),
    ]


@pytest.mark.django_db(transaction=True)
def test_in_server_mode_user_turns_land_on_the_run(pytester: pytest.Pytester, harness_server) -> None:
    pytester.makepyfile(app=APP, agent=AGENT, test_user_turns=BY_USER_TURN)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-trace-dir", "logs", "-k", "server_mode",
        "--harness-url", harness_server.url, "--harness-token", make_token("write"),
    )  # fmt: skip

    result.assert_outcomes(passed=1, deselected=1)
    run_id = (pytester.path / "run_id.txt").read_text()
    stored = TraceLog.objects.filter(run_id=run_id).order_by("turn_number")
    assert [(log.turn_number, log.content.splitlines()[0]) for log in stored] == [(1, "START req3"), (2, "START req4")]
