"""The README's first screen, as a newcomer copies it (and the docs site's Getting started, which shows the same):
the two Python blocks of "Point your SDK at it" run against a server holding the shipped examples. The first
block's four calls (openai's Chat Completions and Responses, anthropic, google-genai) pass; the second block's call
fails on purpose, as the README says."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import uuid

import pytest
from django.core.management import call_command

from runs_app.models import Run
from tests.conftest import ROOT

EXAMPLES = ROOT / "scenarios_app" / "examples"
SECTION = re.compile(r"## Point your SDK at it\n(.*?)\n## ", re.DOTALL)
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def readme_blocks() -> list[str]:
    section = SECTION.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert section, "README.md has no 'Point your SDK at it' section"
    return BLOCK.findall(section.group(1))


def test_it_finds_the_first_call_and_the_failure_on_purpose_in_the_readme_and_the_docs_alike() -> None:
    blocks = readme_blocks()
    assert len(blocks) == 2
    assert "http://127.0.0.1:8000" in blocks[0]  # make run's address, replaced below by the test server's
    getting_started = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert BLOCK.findall(getting_started) == blocks  # the docs site's first page shows the same calls


@pytest.mark.django_db(transaction=True)
def test_the_readmes_first_calls_pass_and_the_next_one_fails_on_purpose(harness_server) -> None:
    call_command("load_scenarios", str(EXAMPLES), stdout=io.StringIO())
    code = "\n".join(readme_blocks()).replace("http://127.0.0.1:8000", harness_server.url)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr

    hello = json.loads((EXAMPLES / "hello.json").read_text(encoding="utf-8"))
    text = hello["turns"][0]["response"]["assistant_text"]
    lines = done.stdout.splitlines()
    assert lines[:4] == [text] * 4, done.stdout
    first_calls = Run.objects.filter(scenario_id="hello").order_by("started_at")
    assert [run.status for run in first_calls] == ["passed"] * 4

    failed = Run.objects.get(id=uuid.UUID(lines[4]))
    assert (failed.scenario_id, failed.status) == ("weather-tool-call", "failed")
    assert failed.status_reason == "System prompt missing: You are a weather assistant"
    report = json.loads(lines[5])
    assert report["status"] == "failure" and failed.status_reason in report["report_content"]
