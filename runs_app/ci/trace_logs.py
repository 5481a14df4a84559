"""A run's trace logs as they are stored: one uploaded TurnLog (``POST /api/runs/{id}/trace-logs``), and a folder of
trace log files collected onto a run (``manage.py collect_trace_logs RUN DIR``). Both go through the upload's own
schema (``schemas.TraceLogIn``: the path redacted, a log holding a secret refused naming the file and line), and
both take the turn's outcome from the file's footer when none is given (``harnessweb/engine/trace_outcome.py``).

A folder is read whole before anything is written: its files (at any depth, hidden ones left out) in path order,
which for seed 001's ``{date}/{HH-mm-ss}_{requestId}.log`` layout is time order, are turns ``first``, ``first + 1``,
…; then, in one transaction, a turn the run does not have yet is stored, a turn it has from the same file is
refreshed when the file changed (a log collected before it was finished) and left alone otherwise, and a turn it
has from another file stops the whole collection: collecting the same folder twice stores nothing twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from pydantic import ValidationError

from harnessweb.engine.trace_outcome import outcome_of
from runs_app.ci.schemas import TraceLogIn
from runs_app.models import Run, TraceLog


class TraceFolderError(Exception):
    """A folder that cannot become a run's trace logs; the message says which file and why."""


def store_trace_log(run: Run, item: TraceLogIn) -> TraceLog:
    """One uploaded TurnLog, its outcome given or read from its footer."""
    return TraceLog.objects.create(
        run=run,
        turn_number=item.turn_number,
        file_path=item.file_path,
        content=item.content,
        outcome=outcome_of(item.content) if item.outcome is None else item.outcome,
    )


def folder_files(folder: Path) -> list[Path]:
    """The files under ``folder`` in path order (hidden files and folders left out)."""
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [Path(root, name) for name in names if not name.startswith(".") and Path(root, name).is_file()]
    return sorted(found, key=lambda path: path.relative_to(folder).parts)


def read_log(path: Path, turn: int) -> TraceLogIn:
    """A file as the upload would take it, or the reason it cannot be (unreadable, not UTF-8 text, a secret)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceFolderError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFolderError(f"{path}: not a text file (not UTF-8 at byte {exc.start})") from None
    if "\x00" in text:
        raise TraceFolderError(f"{path}: not a text file (it holds NUL bytes)")
    try:
        return TraceLogIn.model_validate({"turn_number": turn, "file_path": str(path), "content": text})
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors()
        )
        raise TraceFolderError(f"{path}: refused ({reasons})") from None


@dataclass
class Collected:
    stored: int = 0
    refreshed: int = 0
    unchanged: int = 0


def collect_folder(run: Run, folder: Path, first: int = 1) -> Collected:
    """The files under ``folder`` as ``run``'s trace logs, turns ``first``, ``first + 1``, …: see the module's
    docstring. Raises :class:`TraceFolderError` having written nothing."""
    if not folder.is_dir():
        raise TraceFolderError(f"{folder}: no such folder")
    files = folder_files(folder)
    if not files:
        raise TraceFolderError(f"{folder}: holds no trace log files")
    items = [read_log(path.resolve(), turn) for turn, path in enumerate(files, start=first)]
    done = Collected()
    with transaction.atomic():
        held = {log.turn_number: log for log in TraceLog.objects.select_for_update().filter(run=run)}
        for item in items:
            log = held.get(item.turn_number)
            if log is None:
                store_trace_log(run, item)
                done.stored += 1
            elif log.file_path != item.file_path:
                raise TraceFolderError(
                    f"turn {item.turn_number} of run {run.id} already holds {log.file_path}, not {item.file_path}: "
                    "pass --turn to place this folder's files after the run's turns"
                )
            elif log.content != item.content:
                log.content, log.outcome = item.content, outcome_of(item.content)
                log.save(update_fields=["content", "outcome"])
                done.refreshed += 1
            else:
                done.unchanged += 1
    return done
