"""A test's trace logs per turn (harnessweb/testing/tracelogs.py) on an in-process harness, no pytest plugin and no
Django: which file is taken for which turn, and when (the next call's first step, reading ``turn_logs``, the end)."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest

from harnessweb.engine.redaction import fingerprint
from harnessweb.testing.harness import Harness
from harnessweb.testing.tracelogs import TraceCollector, TurnLog, finish

SECRET = "sk-ant-api03-Zr8vT9mWcR2pL8sKdN5fHj7gYb4uEa6zQo1iVt0wxyzB"


class App:
    """An application as seed 001's: one LLM call per message, then its TraceLogger's file for the turn."""

    def __init__(self, harness: Harness, folder: Path) -> None:
        self.client = harness.openai_client()
        self.folder = folder
        self.sent = 0

    def send(self, text: str, footer: str = "SUCCESS") -> Path:
        self.sent += 1
        self.client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        return write_log(self.folder, f"10-00-{self.sent:02d}_req{self.sent}", f"user said {text}\n{footer}\n")


def write_log(folder: Path, name: str, content: str, day: str = "2026-11-24") -> Path:
    path = folder / day / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


@pytest.fixture
def traced(tmp_path: Path) -> Harness:
    harness = Harness()
    harness.traces = TraceCollector(tmp_path)
    return harness


def test_each_turn_gets_the_file_written_after_its_call(traced: Harness, tmp_path: Path) -> None:
    app = App(traced, tmp_path)
    first = app.send("make a grocery list")
    second = app.send("add hummus", footer="--- FAILED: the reply could not be sent ---")

    logs = traced.turn_logs

    assert logs == [
        TurnLog(1, str(first), "user said make a grocery list\nSUCCESS\n", "success"),
        TurnLog(2, str(second), "user said add hummus\n--- FAILED: the reply could not be sent ---\n", "failed"),
    ]


def test_a_turn_s_file_is_taken_when_the_next_call_begins(traced: Harness, tmp_path: Path) -> None:
    app = App(traced, tmp_path)
    first = app.send("one")
    assert traced.traces is not None and traced.traces.logs == []  # nothing collected yet

    app.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "two"}])

    assert [(log.turn_number, log.file_path) for log in traced.traces.logs] == [(1, str(first))]


def test_files_present_before_the_test_are_never_taken(tmp_path: Path) -> None:
    old = write_log(tmp_path, "09-00-00_old", "an earlier test's turn\nSUCCESS\n")
    harness = Harness()
    harness.traces = TraceCollector(tmp_path)
    app = App(harness, tmp_path)
    app.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    old.write_text("an earlier test's turn, written again\nFAILED\n")  # changed during the test: still not taken

    assert harness.turn_logs == []
    fresh = app.send("again")
    assert [log.file_path for log in harness.turn_logs] == [str(fresh)]


def test_a_turn_keeps_its_newest_file_and_names_the_others(traced: Harness, tmp_path: Path) -> None:
    app = App(traced, tmp_path)
    app.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    older = write_log(tmp_path, "10-00-01_a", "classify\nSUCCESS\n")
    newer = write_log(tmp_path, "10-00-01_0", "orchestrate\nFAILED\n")  # sorts first by name, written last
    os.utime(older, ns=(1_000_000_000_000, 1_000_000_000_000))
    os.utime(newer, ns=(2_000_000_000_000, 2_000_000_000_000))

    logs = traced.turn_logs

    assert [(log.turn_number, log.file_path, log.outcome) for log in logs] == [(1, str(newer), "failed")]
    assert traced.traces is not None and traced.traces.skipped == [str(older)]


def test_files_before_the_first_call_belong_to_no_turn(traced: Harness, tmp_path: Path) -> None:
    startup = write_log(tmp_path, "09-59-59_boot", "server started\nSUCCESS\n")
    app = App(traced, tmp_path)
    first = app.send("hi")

    assert [log.file_path for log in traced.turn_logs] == [str(first)]
    assert traced.traces is not None and traced.traces.skipped == [str(startup)]


def test_an_unfinished_log_is_read_again_until_its_footer(traced: Harness, tmp_path: Path) -> None:
    app = App(traced, tmp_path)
    path = app.send("hi", footer="tool generate_ui running")
    assert [(log.outcome, log.content.endswith("running\n")) for log in traced.turn_logs] == [("", True)]

    path.write_text(path.read_text() + "FAILED\n")

    assert [log.outcome for log in traced.turn_logs] == ["failed"]


def test_nothing_is_taken_after_the_test_s_end(traced: Harness, tmp_path: Path) -> None:
    app = App(traced, tmp_path)
    app.send("hi")
    finish(traced)  # the plugin's teardown step
    app.send("after the end")

    assert [log.turn_number for log in traced.turn_logs] == [1]


def test_hidden_files_are_skipped(traced: Harness, tmp_path: Path) -> None:
    app = App(traced, tmp_path)
    app.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    (tmp_path / ".10-00-01_r1.log.tmp").write_text("half written")

    assert traced.turn_logs == []


def test_a_missing_folder_is_waited_for(tmp_path: Path) -> None:
    harness = Harness()
    harness.traces = TraceCollector(tmp_path / "logs")  # the application creates it on its first turn
    first = App(harness, tmp_path / "logs").send("hi")

    assert [log.file_path for log in harness.turn_logs] == [str(first)]


def test_without_a_folder_there_are_no_turn_logs() -> None:
    assert Harness().turn_logs == []


def test_in_server_mode_files_go_to_the_call_begun_before_they_were_written(tmp_path: Path) -> None:
    collector = TraceCollector(tmp_path)
    collector.timed = True
    base = datetime.datetime(2026, 11, 24, 10, 0, tzinfo=datetime.UTC)
    starts = [(base + datetime.timedelta(seconds=s)).isoformat() for s in (0, 10, 20)]
    written = {}
    for name, second in (("a_boot", -5), ("b_turn1", 3), ("c_turn2", 12), ("d_turn2_later", 15), ("e_turn3", 25)):
        path = write_log(tmp_path, name, f"{name}\nSUCCESS\n")
        moment = int((base.timestamp() + second) * 1e9)
        os.utime(path, ns=(moment, moment))
        written[name] = str(path)

    logs = collector.collect(starts)

    assert [(log.turn_number, log.file_path) for log in logs] == [
        (1, written["b_turn1"]),
        (2, written["d_turn2_later"]),
        (3, written["e_turn3"]),
    ]
    assert sorted(collector.skipped) == [written["a_boot"], written["c_turn2"]]


def test_an_upload_is_redacted(tmp_path: Path) -> None:
    log = TurnLog(1, str(tmp_path / f"{SECRET}.log"), f"called with {SECRET}\nSUCCESS\n", "success")

    sent = log.as_upload()

    assert SECRET not in sent["file_path"] and SECRET not in sent["content"]
    assert f"[REDACTED:{fingerprint(SECRET)}]" in sent["content"]
    assert (sent["turn_number"], sent["outcome"]) == (1, "success")
    assert set(sent) == {"turn_number", "file_path", "content", "outcome"}


class Agent(App):
    """An application whose one user message takes several LLM calls (plan, act, answer), then writes its turn's
    trace log, as seed 001's orchestrator does."""

    def send(self, text: str, footer: str = "SUCCESS", calls: int = 3) -> Path:
        self.sent += 1
        for step in range(calls):
            self.client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"{text} {step}"}])
        return write_log(self.folder, f"10-00-{self.sent:02d}_req{self.sent}", f"user said {text}\n{footer}\n")


def test_end_turn_numbers_the_logs_by_user_turn(traced: Harness, tmp_path: Path) -> None:
    app = Agent(traced, tmp_path)
    first = app.send("make a grocery list")
    taken = traced.end_turn()
    second = app.send("add hummus", footer="FAILED")
    traced.end_turn()

    assert taken == TurnLog(1, str(first), "user said make a grocery list\nSUCCESS\n", "success")
    assert [(log.turn_number, log.file_path, log.outcome) for log in traced.turn_logs] == [
        (1, str(first), "success"),
        (2, str(second), "failed"),
    ]  # by call they would be turns 3 and 6
    assert len(traced.calls) == 6


def test_without_end_turn_turns_stay_numbered_by_call(traced: Harness, tmp_path: Path) -> None:
    app = Agent(traced, tmp_path)
    app.send("one")
    app.send("two")

    assert [log.turn_number for log in traced.turn_logs] == [3, 6]


def test_a_user_turn_keeps_its_newest_file_and_one_without_a_file_keeps_its_number(
    traced: Harness, tmp_path: Path
) -> None:
    app = Agent(traced, tmp_path)
    app.send("one")
    subagent = write_log(tmp_path, "10-00-01_sub", "a sub-agent's log\nSUCCESS\n")
    os.utime(subagent, ns=(1_000_000_000_000, 1_000_000_000_000))  # older than the turn's own
    traced.end_turn()
    app.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "no log this time"}])
    assert traced.end_turn() is None
    third = app.send("three")
    traced.end_turn()
    late = write_log(tmp_path, "10-00-09_late", "after the last turn\nSUCCESS\n")
    finish(traced)

    assert [(log.turn_number, log.file_path) for log in traced.turn_logs] == [
        (1, str(tmp_path / "2026-11-24" / "10-00-01_req1.log")),
        (3, str(third)),
    ]
    assert traced.traces is not None and traced.traces.skipped == [str(subagent), str(late)]
    assert traced.end_turn() is None  # after the test's end, nothing is taken


def test_in_server_mode_user_turns_need_no_call_times(tmp_path: Path) -> None:
    collector = TraceCollector(tmp_path)
    collector.timed = True
    first = write_log(tmp_path, "a", "turn one\nSUCCESS\n")
    assert collector.end_turn() == TurnLog(1, str(first), "turn one\nSUCCESS\n", "success")
    second = write_log(tmp_path, "b", "turn two\n")  # no footer yet: read again at later collections
    collector.end_turn()
    second.write_text("turn two\nFAILED\n")

    assert [(log.turn_number, log.file_path, log.outcome) for log in collector.collect()] == [
        (1, str(first), "success"),
        (2, str(second), "failed"),
    ]


def test_without_a_folder_end_turn_takes_nothing() -> None:
    assert Harness().end_turn() is None
