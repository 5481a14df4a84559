"""Where a field is in a JSON or YAML file: the line of the value a validation error's path (pydantic's ``loc``)
points at, so that a message can name the line as well as the field.

The path is followed as far as the file has it: an element the file does not hold (a union's tag such as
``response.text``, a required field that is missing) is passed over, and the deepest value found gives the line.
Pure: the standard library and PyYAML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from json.decoder import scanstring
from typing import Any

import yaml

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def line_of(text: str, loc: Sequence[Any], *, yaml_text: bool) -> int | None:
    """The 1-based line of the value at ``loc`` in ``text`` (JSON, or YAML when ``yaml_text``), or of its deepest
    ancestor the file holds; None when the text does not parse."""
    try:
        return _yaml_line(text, loc) if yaml_text else _json_line(text, loc)
    except (ValueError, IndexError, yaml.YAMLError):
        return None


def _json_line(text: str, loc: Sequence[Any]) -> int | None:
    position = _SPACE.match(text).end()
    if position >= len(text):
        return None
    for key in loc:
        child = _json_child(text, position, key)
        if child is not None:
            position = child
    return text.count("\n", 0, position) + 1


def _skip(text: str, position: int) -> int:
    return _SPACE.match(text, position).end()


def _json_child(text: str, position: int, key: Any) -> int | None:
    """Where the member ``key`` of the object (or item ``key`` of the array) starting at ``position`` starts."""
    opening = text[position]
    if opening == "{":
        position = _skip(text, position + 1)
        while text[position] == '"':
            name, position = scanstring(text, position + 1)
            position = _skip(text, _skip(text, position) + 1)  # past the colon
            if name == str(key):
                return position
            position = _skip(text, _DECODER.raw_decode(text, position)[1])
            if text[position] != ",":
                return None
            position = _skip(text, position + 1)
    elif opening == "[" and isinstance(key, int):
        position = _skip(text, position + 1)
        index = 0
        while text[position] != "]":
            if index == key:
                return position
            position = _skip(text, _DECODER.raw_decode(text, position)[1])
            if text[position] != ",":
                return None
            position, index = _skip(text, position + 1), index + 1
    return None


def _yaml_line(text: str, loc: Sequence[Any]) -> int | None:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is None:
        return None
    for key in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((value for name, value in node.value if getattr(name, "value", None) == str(key)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            child = node.value[key]
        if child is not None:
            node = child
    return node.start_mark.line + 1
