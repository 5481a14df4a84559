"""The plugin's call history keeps no key: a key in a message, a tool's arguments or a parameter is kept as its
marker and fingerprint (harnessweb/testing/calls.py), as the server records it; the test still gets its answer."""

from __future__ import annotations

import json

import pytest

from harnessweb.engine.redaction import fingerprint
from harnessweb.testing import Harness
from runs_app.models import Run
from tests.conftest import make_token

pytest_plugins = ["pytester"]

ANTHROPIC = "sk-ant-api03-Zr8vT9mWcR2pL8sKdN5fHj7gYb4uEa6zQo1iVt0wxyzB"
AWS = "AKIAZ7Q3M5N2B8C4D6E9"


def test_the_call_history_keeps_each_key_as_its_marker(harness: Harness) -> None:
    harness.set_response(text="done")
    messages = [
        {"role": "system", "content": f"never say {ANTHROPIC}"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": json.dumps({"k": AWS})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": f"use {AWS}"},
    ]  # fmt: skip
    reply = harness.openai_client().chat.completions.create(model="m", messages=messages, user=ANTHROPIC)
    assert reply.choices[0].message.content == "done"

    (call,) = harness.calls
    kept = json.dumps([call.as_dict(), call.body])
    assert ANTHROPIC not in kept and AWS not in kept
    assert call.system == f"never say sk-ant-[REDACTED:{fingerprint(ANTHROPIC)}]"
    assert call.prompt == f"use AKIA[REDACTED:{fingerprint(AWS)}]"
    assert call.params["user"] == f"sk-ant-[REDACTED:{fingerprint(ANTHROPIC)}]"
    harness.assert_called_with(prompt=f"use AKIA[REDACTED:{fingerprint(AWS)}]")


LEAKY = f"""
def test_leaks(harness):
    harness.set_response(text="fine")
    harness.openai_client().chat.completions.create(
        model="m", messages=[{{"role": "user", "content": "key {ANTHROPIC}"}}])
    harness.trace_log("sent {ANTHROPIC} and {AWS}")
    assert False, "{AWS} was refused"
"""


@pytest.mark.django_db(transaction=True)
def test_an_uploaded_test_keeps_no_key_in_its_calls_trace_log_or_failure(pytester: pytest.Pytester, harness_server):
    pytester.makepyfile(test_leaky=LEAKY)
    token = make_token("write")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--harness-upload", harness_server.url, "--harness-token", token
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*harness: uploaded 1 test run(s)*"])
    run = Run.objects.get(source="pytest", name="test_leaky.py::test_leaks")
    stored = json.dumps(
        [run.status_reason, run.trace_logs.get().content, list(run.events.values_list("data", flat=True))]
    )
    assert ANTHROPIC not in stored and AWS not in stored
    assert f"sent sk-ant-[REDACTED:{fingerprint(ANTHROPIC)}]" in stored and "was refused" in stored
