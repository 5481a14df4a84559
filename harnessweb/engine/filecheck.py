"""Scenario and cassette files checked offline (``harness check``, and ``harness serve`` before it loads them): each
problem as ``FILE:LINE: message`` naming the field, through the scenario loader (``loader.py``) and the cassette
format (``cassette_format.py``), the line found by ``locate.py``.

Which a file is: a ``.yaml`` / ``.yml`` file is a scenario file; a ``.json`` file is a cassette when it is an object
with ``interactions``, else a scenario file. Inside a folder, a JSON object that is neither (no ``interactions``, no
``id``, no ``turns``: the fixtures' ``anthropic_manifest.json``) is left out and said so, as ``load_cassettes`` does;
named on its own it is checked as a scenario file.
Pure: no Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessweb.engine.cassette_format import CassetteFile
from harnessweb.engine.loader import (
    SCENARIO_SUFFIXES,
    ScenarioFileError,
    parse_text,
    scenarios_in_text,
    validation_context,
)
from harnessweb.engine.locate import line_of
from harnessweb.engine.schemas import Scenario


@dataclass
class Report:
    """What a check found: its problems (one line each), the scenarios and cassettes that passed, the files left out."""

    problems: list[str] = field(default_factory=list)
    scenarios: int = 0
    cassettes: int = 0
    files: int = 0
    left_out: list[Path] = field(default_factory=list)
    _ids: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        counts = (
            f"{_plural(self.scenarios, 'scenario')} and {_plural(self.cassettes, 'cassette')} "
            f"in {_plural(self.files, 'file')}"
        )
        left = f"; left out (neither a scenario nor a cassette): {', '.join(map(str, self.left_out))}"
        tail = left if self.left_out else ""
        if self.problems:
            passed = f"{_plural(self.scenarios, 'scenario')} and {_plural(self.cassettes, 'cassette')} without errors"
            return f"{_plural(len(self.problems), 'error')} in {_plural(self.files, 'file')} ({passed}){tail}"
        return f"{counts}: no errors{tail}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def check_paths(paths: Iterable[str | Path]) -> Report:
    """Every scenario and cassette file in ``paths`` (files, or folders searched recursively, hidden entries
    skipped) checked; a scenario id defined twice is a problem too."""
    report = Report()
    for path, named in _files(paths, report):
        report.files += 1
        _check_file(path, named, report)
    return report


def _files(paths: Iterable[str | Path], report: Report) -> list[tuple[Path, bool]]:
    """The files to check, each with whether it was named on its own (rather than found in a folder)."""
    found: list[tuple[Path, bool]] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = [
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and p.suffix.lower() in SCENARIO_SUFFIXES
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            ]
            if not files:
                report.problems.append(f"{path}: no scenario or cassette files ({', '.join(SCENARIO_SUFFIXES)}) here")
        elif not path.exists():
            report.problems.append(f"{path}: no such file or directory")
            files = []
        elif path.suffix.lower() not in SCENARIO_SUFFIXES:
            report.problems.append(f"{path}: not a scenario or cassette file (expected {', '.join(SCENARIO_SUFFIXES)})")
            files = []
        else:
            files = [path]
        for file in files:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                found.append((file, file == path))
    return found


def _check_file(path: Path, named: bool, report: Report) -> None:
    try:
        text = path.read_text(encoding="utf-8-sig")  # as the loader reads it
    except UnicodeDecodeError as exc:
        report.problems.append(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
        return
    except OSError as exc:
        report.problems.append(f"{path}: cannot read: {exc.strerror or exc}")
        return
    if not text.strip():
        report.problems.append(f"{path}:1: the file is empty")
        return
    is_yaml = path.suffix.lower() != ".json"
    try:
        data = parse_text(path, text)
    except ScenarioFileError as exc:  # the syntax error's line and column
        report.problems.append(_at_line(path, str(exc), None))
        return
    if isinstance(data, dict) and not is_yaml:
        if "interactions" in data:
            _check_cassette(path, text, data, report)
            return
        if not named and not {"id", "turns"} & data.keys():
            report.left_out.append(path)
            return
    _check_scenarios(path, text, data, is_yaml, report)


def _check_cassette(path: Path, text: str, data: dict[str, Any], report: Report) -> None:
    try:
        CassetteFile.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            where = ".".join(str(part) for part in error["loc"]) or "(top)"
            line = line_of(text, error["loc"], yaml_text=False)
            report.problems.append(_at_line(path, f"{path}: not a VCR cassette: {where}: {error['msg']}", line))
        return
    report.cassettes += 1


def _check_scenarios(path: Path, text: str, data: Any, is_yaml: bool, report: Report) -> None:
    try:
        scenarios = scenarios_in_text(path, text, path.parent)  # the loader's own checks and messages
    except ScenarioFileError as exc:
        lines = _field_lines(path, text, data, is_yaml)
        for message in str(exc).splitlines():
            report.problems.append(
                _at_line(path, message, lines.get(message, _entry_line(path, text, message, is_yaml)))
            )
        return
    as_list = isinstance(data, list)
    for index, scenario in enumerate(scenarios):
        where = f"{path}:{line_of(text, [index, 'id'] if as_list else ['id'], yaml_text=is_yaml)}"
        if scenario.id in report._ids:
            report.problems.append(f"{where}: scenario id {scenario.id!r} is defined in {report._ids[scenario.id]} too")
        else:
            report._ids[scenario.id] = where
            report.scenarios += 1


def _field_lines(path: Path, text: str, data: Any, is_yaml: bool) -> dict[str, int | None]:
    """The loader's message for each field error of the file (``schemas.format_validation_error``'s line for it),
    mapped to the line of the field."""
    as_list = isinstance(data, list)
    entries = data if as_list else [data]
    lines: dict[str, int | None] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            continue
        try:
            Scenario.model_validate(entry, context=validation_context(path.parent))
        except ValidationError as exc:
            prefix, base = (f"[{index}] ", [index]) if as_list else ("", [])
            for error in exc.errors():
                where = ".".join(str(part) for part in error["loc"]) or "(root)"
                first = str(error["msg"]).splitlines()[0] if error["msg"] else ""
                message = f"{path}: {prefix}{where}: {first}"
                lines[message] = line_of(text, [*base, *error["loc"]], yaml_text=is_yaml)
    return lines


def _entry_line(path: Path, text: str, message: str, is_yaml: bool) -> int | None:
    """A message about a whole entry (``[2] expected a scenario object``) or the whole file: its line."""
    entry = re.match(rf"{re.escape(str(path))}: \[(\d+)\] ", message)
    return line_of(text, [int(entry.group(1))] if entry else [], yaml_text=is_yaml) or 1


def _at_line(path: Path, message: str, line: int | None) -> str:
    """``FILE: line L, column C: …`` (the loader's syntax errors) and ``FILE: …`` with a known line, as
    ``FILE:L:C: …`` and ``FILE:L: …``."""
    head = f"{path}: "
    if not message.startswith(head):
        return message
    rest = message[len(head) :]
    syntax = re.match(r"line (\d+), column (\d+): ", rest)
    if syntax:
        return f"{path}:{syntax.group(1)}:{syntax.group(2)}: {rest[syntax.end() :]}"
    return f"{path}:{line}: {rest}" if line is not None else message
