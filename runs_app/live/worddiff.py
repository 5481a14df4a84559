"""Word-level diffs of two texts, for the run-against-run page and the run page's text expectations; pure.

A diff is a list of segments ``(op, text)`` with ``op`` one of ``equal``, ``insert``, ``delete``: the templates render
them as text, ``<ins>`` and ``<del>`` (autoescaped, so hostile text stays text). Words, runs of whitespace and single
punctuation marks are the units compared, so a changed word is marked whole and spacing survives.
(Scenario history's diff, ``scenarios_app/versions.py``, compares JSON line by line: another grain for another need.)
"""

from __future__ import annotations

import difflib
import re

EQUAL, INSERT, DELETE = "equal", "insert", "delete"
Segment = tuple[str, str]

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def tokens(text: str) -> list[str]:
    """The units a diff compares: words, whitespace runs and single marks; joined they give ``text`` back."""
    return _TOKEN.findall(text)


def _append(segments: list[Segment], op: str, text: str) -> None:
    if not text:
        return
    if segments and segments[-1][0] == op:
        segments[-1] = (op, segments[-1][1] + text)
    else:
        segments.append((op, text))


def word_diff(old: str, new: str) -> list[Segment]:
    """The segments that turn ``old`` into ``new``: a replaced stretch is its deletion, then its insertion.
    Joining the equal and delete segments gives ``old``; the equal and insert ones give ``new``."""
    a, b = tokens(old), tokens(new)
    # autojunk off: in a long prompt, frequent words (and spaces) would otherwise be ignored as junk.
    opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    segments: list[Segment] = []
    deleted: list[str] = []
    inserted: list[str] = []
    for index, (op, i1, i2, j1, j2) in enumerate(opcodes):
        # A space alone between two changes joins them: "<del>sunny all week</del>", not three marks in a row.
        inside = 0 < index < len(opcodes) - 1
        if op == "equal" and not (inside and "".join(a[i1:i2]).isspace()):
            _append(segments, DELETE, "".join(deleted))
            _append(segments, INSERT, "".join(inserted))
            deleted, inserted = [], []
            _append(segments, EQUAL, "".join(a[i1:i2]))
        else:
            deleted += a[i1:i2]
            inserted += b[j1:j2]
    _append(segments, DELETE, "".join(deleted))
    _append(segments, INSERT, "".join(inserted))
    return segments


def sides(segments: list[Segment]) -> tuple[list[Segment], list[Segment]]:
    """The two columns of a side-by-side view: the old text with its deletions, the new one with its insertions."""
    return [s for s in segments if s[0] != INSERT], [s for s in segments if s[0] != DELETE]


def differs(segments: list[Segment]) -> bool:
    return any(op != EQUAL for op, _ in segments)


def closest_passage(text: str, fragment: str) -> str:
    """The stretch of ``text`` that lines up best with ``fragment`` (as many words long, give or take the changes),
    or "" when no word of it is there: what a system prompt says where the scenario expected the fragment."""
    words, wanted = tokens(text), tokens(fragment)
    matcher = difflib.SequenceMatcher(None, wanted, words, autojunk=False)
    blocks = [m for m in matcher.get_matching_blocks() if any(not t.isspace() for t in wanted[m.a : m.a + m.size])]
    if not blocks:
        return ""
    first, last = blocks[0], blocks[-1]
    start = max(0, first.b - first.a)
    end = min(len(words), last.b + last.size + (len(wanted) - last.a - last.size))
    return "".join(words[start:end]).strip()
