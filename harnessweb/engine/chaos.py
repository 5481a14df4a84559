"""Chaos by probability: a rate of rate limits, server errors, dropped streams and malformed chunks applied at random
to the requests of one run (its script's ``chaos``) or one key (the ``X-Harness-Chaos`` header).

Random but reproducible: whether request number ``n`` fails, and how, is a function of the seed and ``n`` alone (a
hash to [0, 1)), so the same seed and the same sequence of requests give the same failures on every run. Each
outcome is one of the scenario failure kinds (``CHAOS_KINDS``), so every wire encodes it as it encodes a scripted
failure. Pure: no Django, no I/O; ``Ordinals`` is a plain in-memory counter for the header's per-key sequence.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harnessweb.engine.exchange import Failure
from harnessweb.engine.playback import failure_of

HEADER = "x-harness-chaos"
HEADER_NAME = "X-Harness-Chaos"

# A chaos rate's name → the failure kind it injects (schemas.FailureStatus). The order is the order the rates are
# laid out on [0, 1): it is part of what a seed reproduces, so it never changes.
CHAOS_KINDS: dict[str, str] = {
    "rate_limit": "rate_limit",  # the provider's 429 with its retry headers
    "server_error": "server_error",  # the provider's 500
    "network_error": "network_error",  # the connection cut halfway through the answer
    "malformed": "invalid_json_in_stream",  # a chunk (or the body) whose JSON is cut in two
}
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class Chaos:
    """A seed and the rate (0..1) of each chaos kind; the rates add up to at most 1."""

    seed: int = 0
    rate_limit: float = 0.0
    server_error: float = 0.0
    network_error: float = 0.0
    malformed: float = 0.0

    def rates(self) -> tuple[tuple[str, float], ...]:
        return tuple((name, getattr(self, name)) for name in CHAOS_KINDS)

    def to_data(self) -> dict[str, Any]:
        """The JSON form (what ``from_data`` reads)."""
        return {"seed": self.seed, **dict(self.rates())}


@dataclass(frozen=True)
class Hit:
    """A request chaos fails: the failure to serve, and the seed and request number that chose it."""

    failure: Failure
    seed: int
    ordinal: int

    def event_data(self) -> dict[str, Any]:
        """What the run's ``failure_injected`` event adds: marked as chaos, with what reproduces it."""
        return {"chaos": True, "seed": self.seed, "ordinal": self.ordinal}


def from_data(data: Any, where: str = "chaos") -> Chaos:
    """A chaos configuration from its JSON form; ``ValueError`` names the field (``chaos.rate_limit: ...``)."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: must be an object with 'seed' and rates ({', '.join(CHAOS_KINDS)})")
    unknown = sorted(set(data) - {"seed", "used", *CHAOS_KINDS})
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown chaos kind; use one of seed, {', '.join(CHAOS_KINDS)}")
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"{where}.seed: must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    rates: dict[str, float] = {}
    for name in CHAOS_KINDS:
        value = data.get(name, 0)
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or not 0 <= value <= 1:
            raise ValueError(f"{where}.{name}: must be a rate from 0 to 1, got {value!r}")
        rates[name] = float(value)
    total = sum(rates.values())
    if total > 1 + 1e-9:  # (a float sum such as 0.1 + 0.2 + 0.7 may be 1.0000000000000002)
        raise ValueError(f"{where}: the rates add up to {round(total, 6)}; together they may be at most 1")
    return Chaos(seed, **rates)


def parse_header(value: str) -> Chaos:
    """The ``X-Harness-Chaos`` header, ``seed=7; rate_limit=0.2; server_error=0.1``: ``name=value`` pairs split
    by ``;`` (or ``,``); ``ValueError`` names the header and the pair that is wrong."""
    data: dict[str, Any] = {}
    for part in value.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        name, equals, raw = (s.strip() for s in part.partition("="))
        if not equals or not name or not raw:
            raise ValueError(f"{HEADER_NAME}: {part!r} is not name=value (e.g. 'seed=7; rate_limit=0.2')")
        if name != "seed" and name not in CHAOS_KINDS:
            raise ValueError(f"{HEADER_NAME}: {name!r} is not a chaos kind; use one of seed, {', '.join(CHAOS_KINDS)}")
        if name in data:
            raise ValueError(f"{HEADER_NAME}: {name} is given twice")
        try:
            data[name] = int(raw) if name == "seed" else float(raw)
        except ValueError:
            number = "a whole number" if name == "seed" else "a number from 0 to 1"
            raise ValueError(f"{HEADER_NAME}: {name} must be {number}, got {raw!r}") from None
    if not data:
        raise ValueError(f"{HEADER_NAME}: empty; give a seed and rates, e.g. 'seed=7; rate_limit=0.2'")
    try:
        return from_data(data, HEADER_NAME)
    except ValueError as exc:  # "X-Harness-Chaos.rate_limit: ..." reads better as "X-Harness-Chaos: rate_limit ..."
        where, _, message = str(exc).partition(": ")
        field = where.removeprefix(HEADER_NAME).lstrip(".")
        raise ValueError(f"{HEADER_NAME}: {field + ' ' if field else ''}{message}") from None


def draw(seed: int, ordinal: int) -> float:
    """Request ``ordinal``'s number in [0, 1) under ``seed``: the first 8 bytes of a SHA-256, the same on every
    machine and Python (``random`` and ``hash()`` promise neither)."""
    digest = hashlib.sha256(f"harness-chaos:{seed}:{ordinal}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def decide(chaos: Chaos, ordinal: int) -> Failure | None:
    """The failure chaos serves request number ``ordinal`` (0 the first), or None: the rates lie one after the other
    on [0, 1) (rate limit, server error, network error, malformed) and the request's draw falls in one of them or
    past them all. A rate of 1 fails every request; the same seed and ordinal always give the same answer."""
    at = draw(chaos.seed, ordinal)
    edge = 0.0
    for name, rate in chaos.rates():
        edge += rate
        if rate and at < edge:
            return failure_of(CHAOS_KINDS[name], f"Simulated {name.replace('_', ' ')} (chaos seed {chaos.seed})")
    return None


def hit(chaos: Chaos, ordinal: int) -> Hit | None:
    """``decide`` with what reproduces it, for the run's event."""
    failure = decide(chaos, ordinal)
    return Hit(failure, chaos.seed, ordinal) if failure is not None else None


class Ordinals:
    """Request numbers per key in this process (the header's sequence), bounded: the least recently used key is
    forgotten past ``limit``. Not shared between processes: behind several workers each counts its own."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._next: OrderedDict[str, int] = OrderedDict()

    def take(self, key: str) -> int:
        """This request's number for ``key`` (0 the first), counted."""
        ordinal = self._next.pop(key, 0)
        self._next[key] = ordinal + 1
        if len(self._next) > self.limit:
            self._next.popitem(last=False)
        return ordinal

    def clear(self) -> None:
        self._next.clear()


def header_hit(headers: Mapping[str, str], fingerprint: str, ordinals: Ordinals) -> Hit | None:
    """What the ``X-Harness-Chaos`` header (None without it) does to this request: numbered per key (its
    fingerprint, "" without one) and configuration, so a new seed or rate starts its own sequence at 0.
    ``ValueError`` names what is wrong with the header."""
    value = headers.get(HEADER)
    if value is None:
        return None
    chaos = parse_header(value)
    rates = ",".join(repr(rate) for _, rate in chaos.rates())
    return hit(chaos, ordinals.take(f"{fingerprint}\x1f{chaos.seed}\x1f{rates}"))
