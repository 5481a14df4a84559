"""What a test's LLM calls cost: ``harness.cost`` and ``harness.assert_cost_below(usd)``, from the usage each call's
response reported (its call history, in-process or from the server's run) and a price table
(:mod:`harnessweb.engine.pricing`).

The plugin has no database: its prices come from a file, the shipped ``harnessweb/engine/prices.json`` unless
``--harness-prices FILE`` or the ini option ``harness_prices`` names another, over genai-prices' list for the models
the file does not name (:mod:`harnessweb.engine.price_catalog`). Server mode reads the same file, not
the dashboard's table: what a test asserts must not change because someone edited a price on a shared server, and a
session's own server starts with an empty table.

A call whose model has no price (or whose response reported no usage) has an unknown cost, never $0: ``cost.usd``
is then None, and ``assert_cost_below`` fails, since "below" cannot be claimed. A failed call costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

from harnessweb.engine.price_catalog import catalog_price
from harnessweb.engine.pricing import (
    SHIPPED,
    Cost,
    PriceTable,
    Total,
    cost_of,
    describe,
    describe_cost,
    format_usd,
    read_prices,
    served,
)
from harnessweb.testing.calls import Call


@lru_cache(maxsize=8)
def _read(path: str, mtime: float) -> PriceTable:
    return PriceTable(read_prices(path).rows(), fallback=catalog_price)


def prices_from(path: str | Path | None) -> PriceTable:
    """The table of a price file (the shipped one for None), read once while the file is unchanged; PriceFileError
    (naming the line and field) when it cannot be read."""
    where = Path(path) if path else SHIPPED
    try:
        mtime = where.stat().st_mtime
    except OSError:
        mtime = -1.0  # read_prices says why it cannot be read
    return _read(str(where), mtime)


@dataclass
class CallCost:
    index: int
    call: Call
    cost: Cost | None  # None: a failed call, which costs nothing

    def line(self) -> str:
        if self.cost is None:
            kind = (self.call.error or {}).get("kind") or "error"
            return f"call {self.index} {self.call.model or '?'}: failed ({kind}), $0"
        tokens = f"{self.cost.tokens} → " if self.cost.tokens is not None else ""
        return f"call {self.index} {self.call.model or '?'}: {tokens}{describe_cost(self.cost)}"


@dataclass
class HarnessCost:
    """A test's cost: ``usd`` (a Decimal, or None when some call's cost is unknown), ``at_least`` (the sum of the
    priced calls), ``unpriced`` (those calls' lines) and one line per call (``lines``)."""

    calls: list[CallCost] = field(default_factory=list)
    total: Total = field(default_factory=Total)
    source: str = ""

    @property
    def usd(self) -> Decimal | None:
        return self.total.usd if self.total.known else None

    @property
    def at_least(self) -> Decimal:
        return self.total.usd

    @property
    def unpriced(self) -> list[str]:
        return [c.line() for c in self.calls if c.cost is not None and c.cost.usd is None]

    @property
    def lines(self) -> list[str]:
        return [c.line() for c in self.calls]

    def __str__(self) -> str:
        return describe(self.total) if self.total.responses else "$0.00 (no call was answered)"


def _table(harness: Any) -> tuple[PriceTable, str]:
    prices = getattr(harness, "prices", None)
    if isinstance(prices, PriceTable):
        return prices, getattr(harness, "prices_source", "") or "the harness's price table"
    return prices_from(prices), str(prices or SHIPPED)


def harness_cost(harness: Any) -> HarnessCost:
    """The cost of the calls in the harness's history."""
    table, source = _table(harness)
    result = HarnessCost(source=source)
    for index, call in enumerate(harness.calls):
        response = call.response if isinstance(call.response, dict) else None
        if call.error is not None or (response is not None and not served(response)):
            result.calls.append(CallCost(index, call, None))
            continue
        cost = cost_of(call.model, (response or {}).get("usage"), table)
        result.calls.append(CallCost(index, call, cost))
        result.total.add(cost)
    return result


def as_usd(value: Any) -> Decimal:
    """A budget in dollars (a number or a numeric string) as a Decimal; floats through their shortest repr."""
    try:
        usd = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise ValueError(f"assert_cost_below: {value!r} is not an amount of dollars") from None
    if not usd.is_finite() or usd < 0:
        raise ValueError(f"assert_cost_below: {value!r} is not an amount of dollars")
    return usd


def assert_cost_below(harness: Any, usd: Any) -> HarnessCost:
    """Fail unless the test's calls cost strictly less than ``usd``; the message lists each call's cost. A call of
    an unpriced model (or without usage) fails it too: its cost is unknown, so "below" cannot be claimed."""
    limit = as_usd(usd)
    cost = harness_cost(harness)
    calls = "\n".join(f"  {line}" for line in cost.lines) or "  (no calls)"
    where = f"prices from {cost.source}"
    if not cost.total.known:
        raise AssertionError(
            f"Cannot tell whether this test cost below {format_usd(limit)}: {describe(cost.total)}. Add the model to "
            f"the price file (--harness-prices or the ini option harness_prices; {where}).\n{calls}"
        )
    if cost.total.usd >= limit:
        raise AssertionError(
            f"This test cost {format_usd(cost.total.usd)} ({cost.total.usd} USD), not below {format_usd(limit)} "
            f"({where}):\n{calls}"
        )
    return cost
