"""The editor's raw tab: the same scenario data as JSON or YAML text, and the model's errors on it. Pure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harnessweb.engine import loader
from harnessweb.engine.schemas import Scenario
from harnessweb.text import pretty_json


class _RawDumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks (``|``), so a report or an answer reads as written."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_RawDumper.add_representer(str, _represent_str)


def to_raw(data: Any, fmt: str) -> str:
    """Scenario data as the raw tab's text: pretty JSON (as exported) or YAML, keys in model order."""
    if fmt == "yaml":
        # No folding of long lines: a one-line answer stays one line, as the author wrote it.
        return yaml.dump(data, Dumper=_RawDumper, sort_keys=False, allow_unicode=True, width=1_000_000)
    return pretty_json(data) + "\n"


def from_raw(text: str, fmt: str) -> Any:
    """The data in the raw tab's text; raises :class:`loader.ScenarioFileError` naming the line and column."""
    text = text.replace("\r\n", "\n")
    if not text.strip():
        raise loader.ScenarioFileError(f"raw {fmt.upper()}: the text is empty")
    # The loader's parser: the same duplicate-key refusal and line numbers as files get. The name is only a label.
    return loader.parse_text(Path(f"raw.{fmt}"), text)


def raw_errors(data: Any) -> list[str]:
    """The model's messages for raw data, one per error, each naming its field path."""
    if not isinstance(data, dict):
        return [f"expected a scenario object, found {type(data).__name__}"]
    try:
        Scenario.model_validate(data)
    except ValidationError as exc:
        return [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]
    return []
