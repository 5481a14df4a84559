"""A form state paired with its errors for the templates (:func:`bind`), and the structure edits of the form
(:func:`apply_op`: add, remove, move and duplicate turns, tool calls and reasoning segments). Pure.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from scenarios_app.editor.fields import (
    ALL,
    MATCH_FIELDS,
    PACING_FIELDS,
    REASONING_FIELDS,
    TOOL_CALL_FIELDS,
    TOP_FIELDS,
    TURN_FLAGS,
    TURN_TEXT_FIELDS,
    USAGE_FIELDS,
    Errors,
    FormState,
    walk_fields,
)
from scenarios_app.editor.kept import kept_names
from scenarios_app.editor.mapping import blank_reasoning, blank_tool_call, new_turn_data, turn_to_state


@dataclass(frozen=True)
class BoundField:
    """One form field (or error slot) as a template renders it: its name, its value, its errors."""

    name: str
    value: Any
    errors: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"f-{self.name}"

    @property
    def error_id(self) -> str:
        return f"err-{self.name}"


def bind(state: FormState, errors: Errors | None = None) -> dict[str, Any]:
    """The state as a tree of :class:`BoundField` for the templates (which cannot look up a computed key).

    Keys mirror the state; group slots are ``errors`` (the form), ``pacing_slot``, ``match_slot``, ``turns_slot``,
    and per turn ``card``, ``usage_slot``, ``tool_calls_slot``, ``reasoning_slot`` and per item ``slot``.
    ``all`` lists every field and slot (for the out-of-band error swaps); ``kept_names``, of the form and of each
    turn, the fields kept as stored without an input (for the form to say so).
    """
    errors = errors or {}
    fields = {name: BoundField(name, value, tuple(errors.get(name, ()))) for name, value in walk_fields(state)}

    def group(prefix: str, names: tuple[str, ...]) -> dict[str, BoundField]:
        return {f: fields[f"{prefix}-{f}"] for f in names}

    turns = []
    for i, turn in enumerate(state["turns"]):
        p = f"turns-{i}"
        bound_turn: dict[str, Any] = {
            "index": i,
            "position": i + 1,
            "card": fields[p],
            "kept_names": kept_names(turn["kept"]),
            **group(p, (*TURN_TEXT_FIELDS, *TURN_FLAGS)),
            "usage": group(f"{p}-usage", USAGE_FIELDS),
            "usage_slot": fields[f"{p}-usage"],
            "tool_calls_slot": fields[f"{p}-tool_calls"],
            "reasoning_slot": fields[f"{p}-reasoning"],
            "tool_calls": [
                {"index": j, "slot": fields[f"{p}-tool_calls-{j}"], **group(f"{p}-tool_calls-{j}", TOOL_CALL_FIELDS)}
                for j in range(len(turn["tool_calls"]))
            ],
            "reasoning": [
                {"index": j, "slot": fields[f"{p}-reasoning-{j}"], **group(f"{p}-reasoning-{j}", REASONING_FIELDS)}
                for j in range(len(turn["reasoning"]))
            ],
        }
        turns.append(bound_turn)
    return {
        "errors": fields[ALL],
        **{name: fields[name] for name in TOP_FIELDS},
        "pacing_enabled": fields["pacing_enabled"],
        "pacing_slot": fields["pacing"],
        "pacing": group("pacing", PACING_FIELDS),
        "match_enabled": fields["match_enabled"],
        "match_slot": fields["match"],
        "match": group("match", MATCH_FIELDS),
        "turns_slot": fields["turns"],
        "kept_names": kept_names(state["kept"]),
        "turns": turns,
        "all": list(fields.values()),
        "error_count": sum(len(messages) for messages in errors.values()),
    }


OPS = (
    "add_turn",
    "remove_turn",
    "move_up",
    "move_down",
    "duplicate_turn",
    "add_tool_call",
    "remove_tool_call",
    "add_reasoning",
    "remove_reasoning",
)


def _renumber(turns: list[dict[str, Any]]) -> None:
    # The turn is the Nth answer of the conversation: after a structural change the cards' order says which.
    for position, turn in enumerate(turns, start=1):
        turn["turn"] = str(position)


def apply_op(state: FormState, op: str, turn: int | None = None, item: int | None = None) -> FormState:
    """A new state with one structural edit applied; indices out of range leave the state as it was.

    Adding, removing, moving or duplicating a turn renumbers the turns 1..N in card order.
    """
    if op not in OPS:
        raise ValueError(f"unknown editor operation {op!r}")
    state = copy.deepcopy(state)
    turns: list[dict[str, Any]] = state["turns"]
    if op == "add_turn":
        turns.append(turn_to_state(new_turn_data(len(turns) + 1)))
        _renumber(turns)
        return state
    if turn is None or not 0 <= turn < len(turns):
        return state
    card = turns[turn]
    if op == "remove_turn":
        del turns[turn]
    elif op == "move_up" and turn > 0:
        turns[turn - 1], turns[turn] = turns[turn], turns[turn - 1]
    elif op == "move_down" and turn < len(turns) - 1:
        turns[turn + 1], turns[turn] = turns[turn], turns[turn + 1]
    elif op == "duplicate_turn":
        turns.insert(turn + 1, copy.deepcopy(card))
    elif op == "add_tool_call":
        card["tool_calls"].append(blank_tool_call())
    elif op == "add_reasoning":
        card["reasoning"].append(blank_reasoning())
    elif op in ("remove_tool_call", "remove_reasoning"):
        items = card["tool_calls" if op == "remove_tool_call" else "reasoning"]
        if item is not None and 0 <= item < len(items):
            del items[item]
    if op in ("remove_turn", "move_up", "move_down", "duplicate_turn"):
        _renumber(turns)
    return state
