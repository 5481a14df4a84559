"""The README's vitest job, as a user copies it: its ``harness-ci.mjs`` module, taken from the README, run by node
against a live server whose judge is the server itself, keeps a seed 001 conversation (OpenAI's message shape with
a tool call), a generated page and two turns' trace logs on a run, judges it over REST and finishes the run.

Without ``node`` on the machine this module collects no test, as tests/test_clients_node.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
import warnings
from pathlib import Path
from typing import Any

import pytest

from runs_app.models import JudgeVerdict, Run
from tests.conftest import ROOT, free_port, make_token, running_server
from tests.judging import CRITERIA, judge_scenario, judging_env, verdict_json

NODE = shutil.which("node")
MODULE = re.compile(r"```js\n(// tests/e2e/harness-ci\.mjs:.*?)```", re.DOTALL)

DRIVER = """
import { finishRun, judgeRun, keepRun } from "./harness-ci.mjs";

const marker = process.argv[2];
const runId = await keepRun({
  name: "e2e grocery list",
  externalId: `ci-${marker}`,
  messages: [
    { role: "user", content: `Create a grocery list (${marker})` },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function",
      function: { name: "generate_ui", arguments: '{"items": ["eggs", "milk"]}' } }] },
    { role: "tool", tool_call_id: "call_1", content: "https://app.example.com/u/abc123" },
    { role: "assistant", content: "Here is your list: https://app.example.com/u/abc123" },
  ],
  pages: new Map([["/u/abc123", "<ul><li>eggs</li><li>milk</li></ul>"]]),
  turnLogs: [
    { turnNumber: 1, filePath: "logs/2026-11-24/10-00-00_a.log", content: "plan\\n=== SUCCESS ===" },
    { turnNumber: 2, filePath: "logs/2026-11-24/10-00-09_b.log", content: "tool error\\n=== FAILED ===" },
  ],
});
const verdict = await judgeRun(runId, JSON.parse(process.argv[3]));
await finishRun(runId, "passed");
console.log(JSON.stringify({ runId, verdict }));
"""


@pytest.fixture(scope="module")
def judged_server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Any:
    """A live server whose judge is its own fake endpoint (a scenario answering the verdict)."""
    port = free_port()
    env = judging_env(f"http://127.0.0.1:{port}/v1")
    with running_server(tmp_path_factory.mktemp("readme-ci"), env, port=port) as server:
        yield server


def module_text() -> str:
    found = MODULE.search((ROOT / "docs" / "rest-api.md").read_text())
    assert found, "the README has no harness-ci.mjs block"
    return found.group(1)


if NODE is None:
    warnings.warn("node is not installed: tests/test_readme_ci.py is not collected", stacklevel=1)
else:

    @pytest.mark.django_db(transaction=True)
    def test_it_runs_the_readmes_vitest_module_against_a_server(judged_server: Any, tmp_path: Path) -> None:
        marker = f"grocery-{uuid.uuid4().hex[:8]}"
        judge_scenario(marker, verdict_json("PASS", summary="Both items were listed."))
        (tmp_path / "harness-ci.mjs").write_text(module_text())
        (tmp_path / "driver.mjs").write_text(DRIVER)
        env = {"PATH": str(Path(NODE).parent), "HARNESS_URL": judged_server.url, "HARNESS_TOKEN": make_token("judge")}
        done = subprocess.run(
            [NODE, "driver.mjs", marker, json.dumps(CRITERIA)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, f"{done.stderr}\n{done.stdout}\n{judged_server.output()[-3000:]}"
        got = json.loads(done.stdout.strip().splitlines()[-1])

        assert (got["verdict"]["effective"], got["verdict"]["summary"]) == ("PASS", "Both items were listed.")
        run = Run.objects.get(id=got["runId"])
        assert (run.status, run.external_id) == ("passed", f"ci-{marker}")
        assert [m.role for m in run.messages.order_by("position")] == ["user", "assistant", "tool", "assistant"]
        assert run.artifacts.get().name == "/u/abc123"
        assert list(run.trace_logs.values_list("turn_number", "outcome")) == [(1, "success"), (2, "failed")]
        verdict = JudgeVerdict.objects.get(run=run)
        # The judge read the uploaded conversation, the page and the trace logs.
        assert "generate_ui" in verdict.prompt and "<li>milk</li>" in verdict.prompt and "tool error" in verdict.prompt
