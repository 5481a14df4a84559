"""Trace logs per turn (seed 001's "Trace Log Capture"): ``--harness-trace-dir DIR`` (ini ``harness_trace_dir``) names
the folder the application under test writes its trace logs to (seed 001's TraceLogger:
``{TRACE_LOG_DIR}/{YYYY-MM-DD}/{HH-mm-ss}_{requestId}.log``, any depth of folders is read). Each test gets a
:class:`TraceCollector`; ``harness.turn_logs`` gives seed 001's TurnLogs (turn number, file path, content) plus the
outcome read from the file's ``SUCCESS`` / ``FAILED`` footer (``harnessweb/engine/trace_outcome.py``).

When a file is taken, and for which turn. Turn N is the N-th call the harness served in the test. The application
usually writes a turn's log after its LLM call returns, so a turn's file is looked for later, at the next
*collection*: when the next call begins (in-process: the call's first step, before it is answered), whenever the
test reads ``harness.turn_logs``, and at the test's end (its teardown). At a collection,

- the files that appeared since the previous collection are the candidates (a file present when the test began is
  never taken, even if it changes later; hidden files, a name starting with ``.``, are skipped: writers that
  replace a file atomically write those first);
- in-process, every candidate belongs to the turn of the last call served so far; in server mode the calls are
  served by the server, out of this process's sight, so each candidate belongs to the last call that began before
  the file was last written (its modification time against the call's start as the run's events record it: the
  machines' clocks must agree, and a call shorter than the file system's clock tick may lose its file to the
  turn before);
- a turn keeps one log, the newest of its files (modification time, then path); the others are named in
  ``skipped``. A file taken for a turn is replaced only by a newer one for the same turn;
- files that appear before the test's first call belong to no turn and are skipped;
- a log taken without a footer (still being written) is read again at each later collection until it has one.

Turns by user turn: seed 001 collects one log per user message (``collectTurnLog(turnNumber)`` after each
``sendMessage``), and a message may take several LLM calls. A test that calls ``harness.end_turn()`` after each user
message numbers its turns by user turn from then on: at each ``end_turn`` the files that appeared since the previous
one (or since the test began) are collected, the newest is that user turn's log (numbered 1, 2, ...) and the others
are ``skipped``; files that appear after the last ``end_turn`` belong to no turn (``skipped`` at the test's end), and
the turns numbered by call are dropped. A test that never calls it keeps the turns by call above.

At the test's end the collector stops: ``--harness-upload`` sends the logs with their turn numbers and outcomes, and
in server mode they are posted to the test's run. Tests running at once (``pytest-xdist``) that share one folder
would take each other's files: give each worker a folder of its own. No Django here.
"""

from __future__ import annotations

import datetime
import os
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessweb.engine.redaction import redact_text
from harnessweb.engine.trace_outcome import outcome_of


@dataclass
class TurnLog:
    """Seed 001's TurnLog (``turnNumber``, ``filePath``, ``content``) and the outcome its footer says: ``"success"``,
    ``"failed"``, or ``""`` when it has none."""

    turn_number: int
    file_path: str
    content: str
    outcome: str = ""
    modified: int = field(default=0, repr=False, compare=False)  # st_mtime_ns when taken: a newer file replaces it

    def as_upload(self) -> dict[str, Any]:
        """What ``POST /api/runs/{id}/trace-logs`` takes, secrets redacted (else the server refuses the log)."""
        data = asdict(self)
        data.pop("modified")
        return {**data, "file_path": redact_text(self.file_path)[:1000], "content": redact_text(self.content)}


def files_under(folder: Path) -> Iterator[Path]:
    """Every regular file under ``folder``, at any depth, hidden files and folders left out."""
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith("."):
                path = Path(root, name)
                if path.is_file():
                    yield path


def read_text(path: Path) -> str:
    """A trace log's text: UTF-8, undecodable bytes replaced (a test never fails on its application's log)."""
    return path.read_bytes().decode("utf-8", errors="replace").replace("\x00", "\ufffd")


def _started(timestamp: str) -> float:
    moment = datetime.datetime.fromisoformat(timestamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


class TraceCollector:
    """One test's trace logs, collected from ``folder`` (see the module's docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.seen: set[Path] = set(self._present())  # before the test: never taken
        self.calls = 0  # in-process: calls begun so far
        self.timed = False  # server mode: turns by the calls' start times
        self.stopped = False
        self.by_turn: dict[int, TurnLog] = {}  # by call
        self.by_call_skipped: list[str] = []
        self.user_turns = 0  # harness.end_turn() calls so far: from the first, turns are user turns
        self.by_user_turn: dict[int, TurnLog] = {}
        self.user_turn_skipped: list[str] = []
        self.since_user_turn: list[tuple[int, str, Path]] = []  # new files since the last end_turn

    def _present(self) -> Iterable[Path]:
        return files_under(self.folder) if self.folder.is_dir() else ()

    @property
    def logs(self) -> list[TurnLog]:
        """The logs taken so far, in turn order (no collection): by user turn once ``end_turn`` was called."""
        taken = self.by_user_turn if self.user_turns else self.by_turn
        return [taken[turn] for turn in sorted(taken)]

    @property
    def skipped(self) -> list[str]:
        """The files taken for no turn, or replaced by a newer one of the same turn (paths)."""
        return self.user_turn_skipped if self.user_turns else self.by_call_skipped

    def call_began(self) -> None:
        """In-process, a call's first step: what appeared since belongs to the call before it."""
        if not self.timed:
            self.collect()
        self.calls += 1

    def collect(self, call_starts: list[str] | None = None) -> list[TurnLog]:
        """Take the files that appeared since the last collection; ``call_starts`` (server mode) are the ISO
        timestamps of the test's calls, in order. Returns every log taken so far."""
        if self.stopped:
            return self.logs
        for log in (*self.by_turn.values(), *self.by_user_turn.values()):
            if not log.outcome and Path(log.file_path).is_file():  # unfinished when taken: it may be done now
                log.content = read_text(Path(log.file_path))
                log.outcome = outcome_of(log.content)
        new = [(path.stat().st_mtime_ns, str(path), path) for path in self._present() if path not in self.seen]
        self.seen.update(path for *_, path in new)
        self.since_user_turn.extend(new)
        starts = sorted(_started(s) for s in call_starts) if call_starts is not None else None
        for modified, name, path in sorted(new):  # oldest first: the newest of a turn's files is the one kept
            turn = self.calls if starts is None else bisect_right(starts, modified / 1e9)
            current = self.by_turn.get(turn)
            if turn == 0 or (current is not None and (current.modified, current.file_path) > (modified, name)):
                self.by_call_skipped.append(name)
                continue
            if current is not None:
                self.by_call_skipped.append(current.file_path)
            content = read_text(path)
            self.by_turn[turn] = TurnLog(turn, name, content, outcome_of(content), modified)
        return self.logs

    def end_turn(self) -> TurnLog | None:
        """A user turn ended (seed 001's ``collectTurnLog`` after a message): the newest file since the previous
        ``end_turn`` is its log, numbered by user turn; None when no file appeared (the turn keeps its number)."""
        if self.stopped:
            return None
        self.collect()
        self.user_turns += 1
        candidates, self.since_user_turn = sorted(self.since_user_turn), []  # oldest first: the newest is the turn's
        if not candidates:
            return None
        *older, (modified, name, path) = candidates
        self.user_turn_skipped.extend(other for _, other, _ in older)
        content = read_text(path)
        log = TurnLog(self.user_turns, name, content, outcome_of(content), modified)
        self.by_user_turn[self.user_turns] = log
        return log

    def stop(self) -> list[TurnLog]:
        """The test's end: nothing more is taken (``finish`` collects first); files after the last ``end_turn``
        belong to no user turn."""
        if not self.stopped and self.user_turns:
            self.user_turn_skipped.extend(name for _, name, _ in sorted(self.since_user_turn))
            self.since_user_turn = []
        self.stopped = True
        return self.logs


def finish(harness: Any) -> None:
    """The plugin's teardown step: the last collection (``harness.turn_logs``), then the collector stops; in server
    mode the logs go to the test's run."""
    collector: TraceCollector | None = harness.traces
    if collector is None or collector.stopped:
        return
    logs = harness.turn_logs
    collector.stop()
    send = getattr(harness, "send_turn_logs", None)  # server mode (remote.py)
    if send is not None and logs:
        send(logs)
