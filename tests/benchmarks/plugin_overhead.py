"""Per-call overhead of the in-process pytest plugin, warm, each case beside a floor that does the same without it.

    .venv/bin/python tests/benchmarks/plugin_overhead.py [--calls 1000] [--rounds 3]

Every case runs one warm-up round, then ``--rounds`` rounds of ``--calls`` calls, each call timed with
``time.perf_counter_ns``; the round with the lowest median counts. Between rounds the harness is reset (and its
answers configured again), so its call history (always on) never holds more than one round.

- llm boundary: seed 002's loop, ``llm.get_model(name).prompt(...).text()``, with ``llm.get_model`` patched as the
  plugin patches it; its floor is a bare ``llm.Model`` from a dict (what llm itself costs).
- SDK rows: the official openai / anthropic clients on the harness's in-process transport; each floor is the same
  client on an ``httpx2.MockTransport`` that returns the status, headers and frames the harness sent for the same
  request (what the SDK and httpx2 cost). "harness ms" is the median minus the floor's median: the harness's share.

Server mode is not implemented yet; it is measured once it lands. Nothing is written but a temporary LLM_USER_PATH.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import anthropic
import httpx2
import llm
import openai

from harnessweb.testing.harness import Harness

LLM_MODEL = "anthropic/claude"
LLM_PROMPT = "Summarise this"
LLM_TARGET_MS = 0.1
SDK_TARGET_MS = 1.0
SHARE_TARGET_MS = 0.3
SCENARIO = {
    "id": "bench",
    "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from the scenario"}}],
}
MESSAGES = [{"role": "user", "content": "hi"}]
OPENAI = {"model": "gpt-4o", "messages": MESSAGES}
ANTHROPIC = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": MESSAGES}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


def set_text(h: Harness) -> None:
    h.set_response(text="Hello from the harness")


def set_json(h: Harness) -> None:
    h.set_response(json={"found": True}, model=LLM_MODEL)


def play_scenario(h: Harness) -> None:
    h.use_scenario(SCENARIO)


@dataclass(frozen=True)
class SdkCase:
    label: str
    sdk: str  # "openai" or "anthropic"
    request: dict[str, Any]
    configure: Callable[[Harness], None]


SDK_CASES = (
    SdkCase("openai", "openai", OPENAI, set_text),
    SdkCase("openai stream", "openai", {**OPENAI, "stream": True}, set_text),
    SdkCase("anthropic", "anthropic", ANTHROPIC, set_text),
    SdkCase("anthropic stream", "anthropic", {**ANTHROPIC, "stream": True}, set_text),
    SdkCase("openai scenario turn", "openai", OPENAI, play_scenario),
)


class FloorModel(llm.Model):
    """What llm costs without the harness: a fixed answer and usage."""

    model_id = "floor"

    def execute(self, prompt: llm.Prompt, stream: bool, response: llm.Response, conversation: Any) -> Iterator[str]:
        response.set_usage(input=1, output=1)
        yield '{"found": true}'


FLOOR_MODELS = {"floor": FloorModel()}


class Frames(httpx2.SyncByteStream):
    """The harness's frames, one chunk each, as its in-process transport yields them."""

    def __init__(self, frames: tuple[bytes, ...]) -> None:
        self.frames = frames

    def __iter__(self) -> Iterator[bytes]:
        yield from self.frames


@dataclass
class Row:
    label: str
    times_ns: list[int]
    floor: Row | None = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ns) / 1e6

    @property
    def p99_ms(self) -> float:
        ordered = sorted(self.times_ns)  # nearest rank
        return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)] / 1e6

    @property
    def share_ms(self) -> float:
        return self.median_ms - self.floor.median_ms if self.floor else math.nan


def measure(
    call: Callable[[], object], calls: int, rounds: int, prepare: Callable[[], None] = lambda: None
) -> list[int]:
    """One warm-up round, then ``rounds`` rounds of ``calls`` timed calls: the per-call times of the best round."""
    best: list[int] = []
    for round_number in range(rounds + 1):
        prepare()
        gc.collect()
        times = []
        for _ in range(calls):
            started = time.perf_counter_ns()
            call()
            times.append(time.perf_counter_ns() - started)
        if round_number and (not best or statistics.median(times) < statistics.median(best)):
            best = times
    return best


def sdk_call(client: Any, case: SdkCase) -> Callable[[], object]:
    """One call of the case on ``client``: its answer text, or (streamed) the number of chunks or events read."""
    create = client.chat.completions.create if case.sdk == "openai" else client.messages.create
    if case.request.get("stream"):
        return lambda: sum(1 for _ in create(**case.request))
    if case.sdk == "openai":
        return lambda: create(**case.request).choices[0].message.content
    return lambda: create(**case.request).content[0].text


def floor_client(h: Harness, case: SdkCase) -> Any:
    """The case's SDK client on a MockTransport answering what the harness answered the same request."""
    h.reset()
    case.configure(h)
    body = json.dumps(case.request).encode()
    out, extra, _ = h.exchange("POST", PATHS[case.sdk], "", {"content-type": "application/json"}, body)
    h.reset()
    status, headers, frames = out.encoded.status, [*out.encoded.headers, *extra], out.encoded.frames

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(status, headers=headers, stream=Frames(frames), request=request)

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    if case.sdk == "openai":
        return openai.OpenAI(api_key="x", base_url="http://floor/v1", http_client=http)
    return anthropic.Anthropic(api_key="x", base_url="http://floor", http_client=http)


def run(calls: int, rounds: int) -> list[Row]:
    h = Harness()
    clients = {"openai": h.openai_client(), "anthropic": h.anthropic_client()}

    def configured(configure: Callable[[Harness], None]) -> Callable[[], None]:
        return lambda: (h.reset(), configure(h), None)[-1]

    def harness_llm_call() -> object:
        return llm.get_model(LLM_MODEL).prompt(LLM_PROMPT).text()

    def floor_llm_call() -> object:
        response = FLOOR_MODELS["floor"].prompt(LLM_PROMPT)
        return response.text(), response.usage()

    rows = []
    original = llm.get_model
    llm.get_model = lambda name=None, *a, **k: h.get_model(name)  # as the plugin patches it
    try:
        floor = Row("llm floor (bare llm.Model)", measure(floor_llm_call, calls, rounds))
        configured(set_json)()
        if harness_llm_call() != '{"found": true}':
            raise RuntimeError(f"llm boundary answered {harness_llm_call()!r}")
        rows += [Row("llm boundary", measure(harness_llm_call, calls, rounds, configured(set_json)), floor), floor]
    finally:
        llm.get_model = original
    for case in SDK_CASES:
        on_harness, on_floor = sdk_call(clients[case.sdk], case), sdk_call(floor_client(h, case), case)
        configured(case.configure)()
        if on_harness() != on_floor():  # the floor parses the same bytes to the same answer
            raise RuntimeError(f"{case.label}: harness answered {on_harness()!r}, the floor {on_floor()!r}")
        floor = Row(f"{case.label} floor (MockTransport)", measure(on_floor, calls, rounds))
        rows += [Row(case.label, measure(on_harness, calls, rounds, configured(case.configure)), floor), floor]
    h.reset()
    return rows


def fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def report(rows: list[Row], calls: int, rounds: int) -> list[str]:
    header = f"{'case':<38} {'median ms':>10} {'p99 ms':>9} {'floor ms':>9} {'harness ms':>11}"
    lines = [header, "-" * len(header)]
    for row in rows:
        floor_ms = row.floor.median_ms if row.floor else math.nan
        lines.append(
            f"{row.label:<38} {fmt(row.median_ms):>10} {fmt(row.p99_ms):>9} {fmt(floor_ms):>9} {fmt(row.share_ms):>11}"
        )
    lines += [
        "",
        f"Per call, best of {rounds} rounds of {calls} calls (lowest median) after one warm-up round. floor ms: the "
        "floor's median; harness ms: median - floor median, the harness's own share.",
        "server mode: not implemented yet; measured once server mode lands.",
        "",
        "Targets:",
    ]
    checks = []
    for row in rows:
        if row.label == "llm boundary":
            checks.append((f"{row.label}: median", row.median_ms, LLM_TARGET_MS))
        elif row.floor is not None:
            checks.append((f"{row.label}: median", row.median_ms, SDK_TARGET_MS))
            checks.append((f"{row.label}: harness share", row.share_ms, SHARE_TARGET_MS))
    for what, value, target in checks:
        verdict = "PASS" if value < target else "MISS"
        lines.append(f"  {verdict}  {what} {value:.3f} ms (target < {target} ms)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", "-n", type=int, default=1000, help="calls per round (1000)")
    parser.add_argument("--rounds", "-r", type=int, default=3, help="measured rounds per case, best counts (3)")
    args = parser.parse_args()
    if args.calls < 1 or args.rounds < 1:
        parser.error("--calls and --rounds must be at least 1")
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in ("llm", "openai", "anthropic", "httpx2"))
    print(f"Python {sys.version.split()[0]}; {versions}")
    print("$ " + shlex.join([".venv/bin/python", "tests/benchmarks/plugin_overhead.py", *sys.argv[1:]]), flush=True)
    with tempfile.TemporaryDirectory(prefix="llm-user-") as user_dir:
        os.environ["LLM_USER_PATH"] = user_dir  # never the user's own keys, aliases or logs
        rows = run(args.calls, args.rounds)
    print("\n" + "\n".join(report(rows, args.calls, args.rounds)))


if __name__ == "__main__":
    main()
