"""Helpers of the judge's tests: the harness's own fake endpoint stands in for the judge model (a scenario matched on
the judge's system prompt and a marker in the transcript), and subject runs are played through the openai SDK."""

from __future__ import annotations

import json
import uuid
from typing import Any

import openai

from harnessweb.judging.verdicts import JUDGE_SYSTEM
from tests.conftest import LiveServer, make_scenario, recorded_run

# Matched with system_contains: only the judge's requests carry it.
JUDGE_MARK = JUDGE_SYSTEM.splitlines()[0]
CRITERIA = ["The assistant answered the question", "The assistant named the city"]


def verdict_json(overall: str = "FAIL", **fields: Any) -> str:
    second = "PASS" if overall == "PASS" else "FAIL"
    return json.dumps(
        {
            "criteria": [
                {"criterion": CRITERIA[0], "verdict": "PASS", "reason": "It gave the weather."},
                {
                    "criterion": CRITERIA[1],
                    "verdict": second,
                    "reason": "Oslo was named." if second == "PASS" else "No city was named.",
                },
            ],
            "overall": overall,
            "summary": fields.get("summary", "Judged by the harness."),
        }
    )


def judge_scenario(marker: str, answer: str = "", **turn: Any) -> str:
    """A scenario answering the judge's request for a transcript that contains ``marker``; returns its id."""
    scenario_id = f"judge-{uuid.uuid4().hex[:10]}"
    make_scenario(
        scenario_id,
        [{"turn": 1, "response": {"kind": "text", "assistant_text": answer or "unused"}, **turn}],
        match={"system_contains": JUDGE_MARK, "first_user_contains": marker},
    )
    return scenario_id


def subject_scenario(text: str = "It is sunny in Oslo.") -> str:
    """A scenario for the run under judgement, played by sending its id as the first user message."""
    scenario_id = f"subject-{uuid.uuid4().hex[:10]}"
    make_scenario(scenario_id, [{"turn": 1, "response": {"kind": "text", "assistant_text": text}}])
    return scenario_id


def play(server: LiveServer, scenario_id: str) -> Any:
    """One conversation with ``scenario_id`` through the openai SDK, as a recorded run of its own."""
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=f"sk-test-{uuid.uuid4().hex}", max_retries=0)
    response = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": scenario_id}]
    )
    return recorded_run(response.headers["X-Harness-Run"], status="passed", events=4)


def point_judge_at(settings: Any, server: LiveServer) -> None:
    settings.HARNESS_JUDGE_BASE_URL = f"{server.url}/v1"
    settings.HARNESS_JUDGE_API_KEY = f"sk-test-judge-{uuid.uuid4().hex}"
    settings.HARNESS_JUDGE_MODEL = "judge-model"
    settings.HARNESS_JUDGE_TIMEOUT_S = 20


def judging_env(judge_url: str) -> dict[str, str]:
    """A live server's settings whose judge is the fake endpoint at ``judge_url`` (its own, on its own port)."""
    judge = {"HARNESS_JUDGE_BASE_URL": judge_url, "HARNESS_JUDGE_MODEL": "judge-model"}
    return {"HARNESS_PACING": "off", "HARNESS_JUDGE_API_KEY": "sk-test-judge", **judge}
