"""The deterministic tokenisation, and what a request's limits do to an answer with it.

A token is a run of letters, digits and underscores, or any other single non-space character, each with the
whitespace before it (``"Hello, world!"`` is ``Hello`` ``,`` `` world`` ``!``: four tokens). Joining the tokens of
a text gives the text back. ``usage`` counts with it (unless a scenario sets the counts, or a default usage does:
seed 000's fixed 64 / 32 / 96 on request), ``max_tokens`` cuts at it, and ``logprobs`` name its tokens.

Pure: no Django, no I/O.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from functools import lru_cache

from harnessweb.engine.exchange import Block, ChatRequest, Reply, Usage, evolved
from harnessweb.engine.schemas import DefaultUsage

_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])")
Authored = tuple[int | None, int | None, int | None]
COUNTED: Authored = (None, None, None)
# Seed 000's usage where a scenario sets none (its TypeScript harness reports it for every turn).
SEED_USAGE: Authored = (64, 32, 96)
DEFAULT_USAGE_CHOICES = ("counted", "seed")
# Tokens offered as the less likely alternatives: more than the 20 ``top_logprobs`` an API allows, so they never repeat.
_ALTERNATIVES = (
    "the", " the", ",", ".", " and", " of", " to", " a", " in", " is", " lorem", " ipsum", "\n", " it", " that",
    " for", " on", " with", " as", " was", " be", " by", ":", ";",
)  # fmt: skip


def tokens(text: str) -> list[str]:
    """The tokens of a text; trailing whitespace rides with the last one, so that they join to the text (a text of
    whitespace alone has none, as :func:`count` says)."""
    found = _TOKEN.findall(text)
    tail = text[sum(map(len, found)) :]
    if tail and found:
        found[-1] += tail
    return found


@lru_cache(maxsize=4096)  # a conversation's messages come again at every turn
def count(text: str) -> int:
    return len(_TOKEN.findall(text))


def prompt_tokens(request: ChatRequest) -> int:
    """The tokens of a request's system prompt and messages."""
    return sum(count(text) for text in (request.system, *(m.text for m in request.messages)))


def answer_tokens(blocks: tuple[Block, ...] | list[Block]) -> int:
    """The tokens of an answer: its text, reasoning and tool call arguments."""
    return sum(count(b.text if b.type != "tool_call" else b.arguments) for b in blocks)


def counted(request: ChatRequest, blocks: tuple[Block, ...], authored: Authored = (None, None, None)) -> Usage:
    """The usage of an answer: each count the scenario sets as set, the others counted (total: input + output)."""
    given_in, given_out, given_total = authored
    input_tokens = prompt_tokens(request) if given_in is None else given_in
    output_tokens = answer_tokens(blocks) if given_out is None else given_out
    total = input_tokens + output_tokens if given_total is None else given_total
    return Usage(input_tokens, output_tokens, total)


def parse_default_usage(text: str, name: str = "HARNESS_DEFAULT_USAGE") -> str:
    """A default usage setting (the server's ``HARNESS_DEFAULT_USAGE``, the plugin's ini option): ``counted`` (also
    when empty) or ``seed``; a ``ValueError`` naming the setting for anything else."""
    value = text.strip().lower() or "counted"
    if value not in DEFAULT_USAGE_CHOICES:
        raise ValueError(f"{name} must be 'counted' or 'seed', not {text!r}")
    return value


def default_counts(default: DefaultUsage | None) -> Authored:
    """The counts a default usage sets: seed 000's for ``"seed"``, an object's own, none for ``"counted"`` (or none
    given)."""
    if default is None or default == "counted":
        return COUNTED
    if default == "seed":
        return SEED_USAGE
    return (default.input_tokens, default.output_tokens, default.total_tokens)  # type: ignore[union-attr]


def over_default(authored: Authored, default: Authored) -> Authored:
    """A turn's own counts over the default's: each count the turn sets wins, the others are the default's; the
    total is the default's only when the turn sets no count (else input + output, as counted)."""
    if authored == COUNTED:
        return default
    given_in, given_out, given_total = authored
    return (default[0] if given_in is None else given_in, default[1] if given_out is None else given_out, given_total)


# ---------------------------------------------------------------------------------------------------------------
# Cutting an answer at the request's limits


def _stop_at(text: str, stops: tuple[str, ...]) -> tuple[int, str] | None:
    """Where the first stop sequence in a text begins, and which one."""
    hits = [(text.find(s), s) for s in stops if s and s in text]
    return min(hits) if hits else None


def _cut_choice(blocks: list[Block], max_tokens: int | None, stops: tuple[str, ...]) -> tuple[list[Block], str, str]:
    """One choice's blocks cut at its token budget and at the first stop sequence in its text: the blocks kept,
    the reason (``"length"``, ``"stop_sequence"`` or ``""`` when nothing was cut) and the stop sequence met."""
    budget = max_tokens
    kept: list[Block] = []
    for block in blocks:
        met = None
        if block.type == "text" and (hit := _stop_at(block.text, stops)) is not None:
            block, met = replace(block, text=block.text[: hit[0]]), hit[1]
        if budget is not None:
            pieces = tokens(block.arguments if block.type == "tool_call" else block.text)
            if len(pieces) > budget:
                cut = "".join(pieces[:budget])
                if cut:  # a block the budget ends before is not begun
                    kept.append(replace(block, **{"arguments" if block.type == "tool_call" else "text": cut}))
                return kept, "length", ""
            budget -= len(pieces)
        if block.type != "text" or block.text:
            kept.append(block)
        if met is not None:
            return kept, "stop_sequence", met
    return kept, "", ""


def limited(reply: Reply, request: ChatRequest) -> Reply:
    """The reply as the request's limits leave it: each choice cut at ``max_tokens`` (``finish: length``) and at the
    first of its ``stop`` sequences (``stop_sequence``, the sequence itself left out). A turn authored with
    ``finish_reason: length`` is a cut answer already, and is not cut again."""
    max_tokens = None if reply.finish == "length" else request.max_tokens  # authored as cut already: served whole
    if max_tokens is None and not request.stop:
        return reply
    groups: dict[int, list[Block]] = {}
    for block in reply.blocks:
        groups.setdefault(block.choice, []).append(block)
    blocks: list[Block] = []
    cuts: list[tuple[int, str, str]] = []
    for choice, group in groups.items():
        kept, reason, sequence = _cut_choice(group, max_tokens, request.stop)
        blocks += kept
        if reason:
            cuts.append((choice, reason, sequence))
    if not cuts:
        return reply
    first = next((reason for choice, reason, _ in cuts if choice == min(groups)), "")
    finish = {"length": "length", "stop_sequence": "stop"}.get(first, reply.finish)
    return replace(reply, blocks=tuple(blocks), finish=finish, cuts=tuple(cuts))  # type: ignore[arg-type]


def finished(reply: Reply, request: ChatRequest, default: Authored = COUNTED) -> Reply:
    """The reply as served: cut at the request's limits, with its usage counted where neither the scenario nor the
    ``default`` (:func:`default_counts`) sets it."""
    reply = limited(reply, request)
    usage = counted(request, reply.blocks, over_default(reply.authored_usage, default))
    return reply if usage == reply.usage else evolved(reply, usage=usage)


# ---------------------------------------------------------------------------------------------------------------
# Log-probabilities


def _logprob(token: str, position: int, salt: str = "") -> float:
    digest = hashlib.blake2s(f"{position}\x1f{salt}\x1f{token}".encode(), digest_size=4).digest()
    return -round(int.from_bytes(digest, "big") % 250_000 / 100_000, 5)  # in (-2.5, 0]


def logprobs(text: str, top: int, start: int = 0) -> list[dict[str, object]]:
    """Chat Completions' ``logprobs.content`` for a text: each token with a deterministic log-probability and its
    ``top`` most likely alternatives (the token itself first), numbered from ``start`` (a stream's offset)."""
    entries: list[dict[str, object]] = []
    for position, token in enumerate(tokens(text), start):
        own = _logprob(token, position)
        alternatives = [{"token": token, "logprob": own, "bytes": list(token.encode())}]
        others = [a for a in _ALTERNATIVES if a != token]
        offset = int.from_bytes(hashlib.blake2s(token.encode(), digest_size=2).digest(), "big")
        for k in range(max(0, top - 1)):
            alt = others[(offset + k) % len(others)]
            value = round(own - 0.75 * (k + 1) - abs(_logprob(alt, position, "alt")) / 10, 5)  # ever less likely
            alternatives.append({"token": alt, "logprob": value, "bytes": list(alt.encode())})
        entries.append({**alternatives[0], "top_logprobs": alternatives[:top]})
    return entries
