"""Reading scenario files (JSON or YAML) and writing their canonical JSON form.

No database here: :func:`read_scenario_files` turns paths into validated scenarios or raises one
:class:`ScenarioFileError` whose message names the file (and the field path or line), so a command can read
everything first and write only when every file is good.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harnessweb.engine import image_fixtures
from harnessweb.engine.schemas import Scenario, format_validation_error
from harnessweb.text import pretty_json

SCENARIO_SUFFIXES = (".json", ".yaml", ".yml")


class ScenarioFileError(Exception):
    """A scenario file is missing, unreadable, malformed or invalid; the message says which file and where."""


class _DuplicateKeyError(ValueError):
    pass


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads silently keeps the last of two equal keys; in a hand-written scenario that hides a mistake.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(f"duplicate key {key!r}")
        result[key] = value
    return result


class _StrictSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys instead of silently keeping the last one."""


def _construct_strict_mapping(loader: _StrictSafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # keys merged in with ``<<: *anchor`` may be overridden: that is what merging is for
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # an unhashable key: construct_mapping below reports it properly
            continue
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
            )
    return loader.construct_mapping(node, deep=deep)


_StrictSafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_strict_mapping)


def parse_text(path: Path, text: str) -> Any:
    """A scenario file's data (JSON or YAML by the name's suffix, duplicate keys refused); syntax errors become a
    ScenarioFileError with the line (and column) number."""
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text, object_pairs_hook=_reject_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise ScenarioFileError(f"{path}: line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}") from exc
        except _DuplicateKeyError as exc:
            raise ScenarioFileError(f"{path}: invalid JSON: {exc}") from exc
    try:
        return yaml.load(text, Loader=_StrictSafeLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = exc.problem or "syntax error"
        if exc.context:
            problem += f" ({exc.context})"
        raise ScenarioFileError(f"{path}: {where}invalid YAML: {problem}") from exc
    except yaml.YAMLError as exc:
        raise ScenarioFileError(f"{path}: invalid YAML: {exc}") from exc


def _scenarios_in(path: Path, data: Any, folder: Path | None = None) -> list[Scenario]:
    """Validate one file's data: a scenario object or a non-empty list of them; paths in it (an image fixture's)
    are relative to ``folder`` (None: the data gives no paths, as an upload's cannot)."""
    if data is None:
        raise ScenarioFileError(f"{path}: the file holds no scenario (only comments or null)")
    if isinstance(data, dict):
        entries, prefixes = [data], [""]
    elif isinstance(data, list):
        if not data:
            raise ScenarioFileError(f"{path}: the list holds no scenarios")
        entries, prefixes = data, [f"[{index}] " for index in range(len(data))]
    else:
        raise ScenarioFileError(f"{path}: expected a scenario object or a list of them, found {type(data).__name__}")
    scenarios = []
    problems = []
    for entry, prefix in zip(entries, prefixes, strict=True):
        if not isinstance(entry, dict):
            problems.append(f"{path}: {prefix}expected a scenario object, found {type(entry).__name__}")
            continue
        try:
            scenarios.append(Scenario.model_validate(entry, context=validation_context(folder)))
        except ValidationError as exc:
            problems.append(format_validation_error(exc, source=f"{path}: {prefix}"))
    if problems:
        # Every problem in the file at once: fixing them one run at a time is tedious.
        raise ScenarioFileError("\n".join(problems))
    return scenarios


def read_scenario_file(path: Path) -> list[Scenario]:
    """The scenarios in one JSON or YAML file (one object or a list of them). Raises ScenarioFileError."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: tolerate a byte order mark from Windows editors
    except UnicodeDecodeError as exc:
        raise ScenarioFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise ScenarioFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if not text.strip():
        raise ScenarioFileError(f"{path}: the file is empty")
    return scenarios_in_text(path, text, path.parent)


def scenarios_in_text(path: Path, text: str, folder: Path | None = None) -> list[Scenario]:
    """The scenarios in the text of a file named ``path`` (it need not exist), the paths they give relative to
    ``folder`` (None: they may give none). Raises ScenarioFileError."""
    return _scenarios_in(path, parse_text(path, text), folder)


def validation_context(folder: Path | None) -> dict[str, Any] | None:
    """What a scenario's validation reads besides its data: the folder its file paths are relative to."""
    return {image_fixtures.CONTEXT_DIR: folder} if folder is not None else None


def _is_hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def collect_scenario_paths(paths: Iterable[str | Path]) -> list[Path]:
    """The scenario files named by ``paths``: files as given, folders searched recursively in sorted order.

    Hidden files and folders inside a folder (editor backups, ``.git``) are skipped; a file given explicitly must
    have a scenario suffix. A path given twice (or a file inside a folder also given) is read once.
    """
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ScenarioFileError(f"{path}: no such file or directory")
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and p.suffix.lower() in SCENARIO_SUFFIXES and not _is_hidden(p, path)
            )
            if not files:
                raise ScenarioFileError(f"{path}: no scenario files ({', '.join(SCENARIO_SUFFIXES)}) in this folder")
        elif path.suffix.lower() in SCENARIO_SUFFIXES:
            files = [path]
        else:
            raise ScenarioFileError(f"{path}: not a scenario file (expected {', '.join(SCENARIO_SUFFIXES)})")
        for file in files:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                found.append(file)
    return found


def read_scenario_files(paths: Iterable[str | Path]) -> list[tuple[Path, Scenario]]:
    """Read and validate every scenario in ``paths`` (files or folders), in a deterministic order.

    Raises :class:`ScenarioFileError` on the first bad file, on a missing path, and when two scenarios share an
    id (naming both files), so that a caller can refuse to write anything.
    """
    result: list[tuple[Path, Scenario]] = []
    origin: dict[str, Path] = {}
    for path in collect_scenario_paths(paths):
        for scenario in read_scenario_file(path):
            if scenario.id in origin:
                first = origin[scenario.id]
                where = f"twice in {path}" if first.resolve() == path.resolve() else f"in {first} and in {path}"
                raise ScenarioFileError(f"{path}: scenario id {scenario.id!r} is defined {where}")
            origin[scenario.id] = path
            result.append((path, scenario))
    return result


def dump_scenario(scenario: Scenario) -> str:
    """The canonical file form: pretty JSON (2-space indent, keys in model order) with a trailing newline."""
    # ensure_ascii=False keeps authored non-ASCII text readable; files are written as UTF-8.
    return pretty_json(scenario.canonical()) + "\n"
