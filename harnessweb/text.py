"""Small text helpers every page shares: counted nouns and JSON pretty-printed for people."""

from __future__ import annotations

import json
from typing import Any


def plural(count: int, noun: str) -> str:
    """``1 message``, ``2 messages``: a count with its noun (regular plurals only)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def pretty_json(value: Any, *, sort_keys: bool = False) -> str:
    """JSON indented by two, non-ASCII kept as is, anything else shown by its ``str``; keys in the order given
    unless ``sort_keys`` (a request body reads best as it was sent, a stored record with its keys sorted)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=sort_keys, default=str)
