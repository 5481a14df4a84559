"""What the client tests (test_clients_python.py, test_clients_structured.py, test_clients_node.py) share: the three
scenarios every client is asked to play (a plain answer, a stream, a tool loop), where a Python client is sent with
the tool it runs (``Harness``), and how a test reads back the run the harness recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.conftest import make_scenario, recorded_run, wait_for

TEXT = "Hello from the harness."
STREAMED = "one two three four five six seven eight nine ten"
ANSWER = "It is sunny in Paris."
WEATHER_DOC = "The weather in a city."
# Turn 1 calls get_weather (and expects the client to have sent it), the client runs it, turn 2 answers.
WEATHER_TURNS = [
    {
        "turn": 1,
        "expected_tools": ["get_weather"],
        "response": {"kind": "tool-call", "tool_calls": [{"tool_name": "get_weather", "arguments": {"city": "Paris"}}]},
    },
    {"turn": 2, "response": {"kind": "text", "assistant_text": ANSWER}},
]


@dataclass
class Harness:
    """Where a client is sent, and the tool calls the libraries made (each test its own)."""

    url: str
    key: str
    calls: list[str]

    def get_weather(self, city: str) -> str:
        self.calls.append(city)
        return json.dumps({"city": city, "sky": "clear"})


def text_scenario(name: str) -> str:
    make_scenario(f"text-{name}", [{"turn": 1, "response": {"kind": "text", "assistant_text": TEXT}}])
    return f"text-{name}"


def stream_scenario(name: str) -> str:
    make_scenario(f"stream-{name}", [{"turn": 1, "response": {"kind": "text", "assistant_text": STREAMED}}])
    return f"stream-{name}"


def tools_scenario(name: str) -> str:
    make_scenario(f"tools-{name}", WEATHER_TURNS)
    return f"tools-{name}"


def played(scenario_id: str, turns: list[int]) -> Any:
    """The one run the harness recorded for the scenario, passed, with these turns served."""
    from runs_app.models import Run

    run = wait_for(lambda: Run.objects.filter(scenario_id=scenario_id).first(), message=f"a run of {scenario_id}")
    run = recorded_run(str(run.id), status="passed", events=4 * len(turns))
    assert run.turns_served == turns
    assert Run.objects.filter(scenario_id=scenario_id).count() == 1
    return run


def paths(run: Any) -> set[str]:
    """The paths (without the query) the run's requests were sent to."""
    return {event.data["path"].split("?")[0] for event in run.events.filter(kind="request")}


def threads(run: Any) -> list[str | None]:
    """For each request of the run in order, the Anthropic message thread it asked for (create, continue or None)."""
    requests = run.events.filter(kind="request").order_by("seq")
    return [(event.data["body"].get("thread") or {}).get("type") for event in requests]


def streaming(path: str) -> str:
    """The path a client streams from: Gemini's differs, the others' is the same."""
    return path.replace(":generateContent", ":streamGenerateContent")
