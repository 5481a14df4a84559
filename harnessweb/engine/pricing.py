"""What LLM calls cost: a price table (USD per million input, output and cached-input tokens per model), the tokens a
response's usage reports in any protocol's names, the cost of one response and the total over many. Pure: the
dashboard (runs_app/pricing) and the pytest plugin (harnessweb/testing/costs.py) compute with the same code.

Money is ``Decimal`` throughout, never float. A model the table has no price for is *unpriced*, never free: a total
over responses some of which are unpriced is a lower bound and says so.

Which row prices a model (``PriceTable.find``), most specific first:

1. the row named exactly as the model (case-insensitive);
2. the row named as the model without a date or version suffix: ``claude-opus-4-1`` prices
   ``claude-opus-4-1-20250805`` and ``claude-opus-4-1@20250805``, ``gpt-4o`` prices ``gpt-4o-2024-08-06``, but
   never ``gpt-4o-mini`` (another model whose name merely starts the same: unpriced rather than priced wrongly);
3. a row whose name ends with ``*`` prices every model starting with what comes before it (``claude-opus-4*``);
   the longest such prefix wins;
4. the table's fallback, if it has one: genai-prices' list (:mod:`harnessweb.engine.price_catalog`), so the table's
   own rows (the admin's, a price file's) override it.

Cached input: where a protocol reports cache reads (OpenAI's ``prompt_tokens_details.cached_tokens``, the Responses
API's ``input_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens``, Gemini's
``cachedContentTokenCount``, Bedrock's ``cacheReadInputTokens``) they are priced at the row's cached-input price, and
at its input price when the row has none: every provider bills cache reads at or below the input price, so the
figure is then an upper bound, never an under-estimate, which keeps ``assert_cost_below`` sound. Cache writes
(Anthropic's ``cache_creation_input_tokens``, Bedrock's ``cacheWriteInputTokens``) count as input tokens.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

MILLION = Decimal(1_000_000)
MICRO = Decimal("0.000001")  # what the API gives: whole micro-dollars
# What may follow a row's model name in a dated model id: a date (20250805, 2024-08-06), "latest", a version
# ("-v1:0", as Bedrock's ids end), in that order, each optional but one at least.
_SUFFIX = re.compile(r"^(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|latest))?(?:-v\d+(?::\d+)?)?$")
SHIPPED = Path(__file__).with_name("prices.json")


@dataclass(frozen=True)
class Price:
    """One row of the table: USD per million tokens, the day the price was taken and where from."""

    model: str
    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    priced_on: dt.date | None = None
    source: str = ""


class PriceTable:
    """Prices by model name, and the rule that finds a model's row (see the module's docstring)."""

    def __init__(self, prices: Iterable[Price] = (), fallback: Callable[[str], Price | None] | None = None) -> None:
        """``fallback`` prices a model no row finds (:func:`harnessweb.engine.price_catalog.catalog_price`)."""
        self.fallback = fallback
        self.exact: dict[str, Price] = {}
        self.prefixes: list[tuple[str, Price]] = []
        for price in prices:
            name = price.model.strip().lower()
            if name.endswith("*"):
                self.prefixes.append((name[:-1], price))
            else:
                self.exact[name] = price
        self.prefixes.sort(key=lambda item: -len(item[0]))
        self._found: dict[str, Price | None] = {}  # a table prices thousands of responses of a few models

    def __len__(self) -> int:
        return len(self.exact) + len(self.prefixes)

    def rows(self) -> list[Price]:
        """The table's own rows (not its fallback's)."""
        return [*self.exact.values(), *(price for _, price in self.prefixes)]

    def find(self, model: str) -> Price | None:
        if model not in self._found:
            found = self._find(model)
            if found is None and self.fallback is not None:
                found = self.fallback(model)
            self._found[model] = found
        return self._found[model]

    def _find(self, model: str) -> Price | None:
        name = model.strip().lower()
        if not name:
            return None
        if name in self.exact:
            return self.exact[name]
        dated = [
            (base, p) for base, p in self.exact.items() if name.startswith(base) and _SUFFIX.match(name[len(base) :])
        ]
        if dated:
            return max(dated, key=lambda item: len(item[0]))[1]
        return next((p for prefix, p in self.prefixes if name.startswith(prefix)), None)


@dataclass(frozen=True)
class Tokens:
    """Billed tokens of one response: input not read from a cache, input read from one, output."""

    input: int = 0
    cached: int = 0
    output: int = 0

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.cached + other.cached, self.output + other.output)

    def __str__(self) -> str:
        cached = f" + {self.cached} cached" if self.cached else ""
        return f"{self.input}{cached} in, {self.output} out"


def _count(data: Mapping[str, Any], *path: str) -> int | None:
    value: Any = data
    for name in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


def tokens_of(usage: Any) -> Tokens | None:
    """The tokens a response's usage reports, in whichever protocol's names it uses; None when it reports none.

    The harness's own (``input_tokens``, ``output_tokens``), Chat Completions' (``prompt_tokens``, which includes
    the cached ones), the Responses API's (``input_tokens`` with ``input_tokens_details``), Anthropic's (cache reads
    and writes beside ``input_tokens``), Gemini's (``promptTokenCount`` including ``cachedContentTokenCount``;
    thoughts billed as output), Bedrock's (``inputTokens``) and Cohere's (``billed_units``).
    """
    if not isinstance(usage, Mapping):
        return None
    if isinstance(usage.get("billed_units"), Mapping):  # Cohere: what is billed, not what was read
        usage = usage["billed_units"]
    if (prompt := _count(usage, "prompt_tokens")) is not None:  # Chat Completions
        cached = _count(usage, "prompt_tokens_details", "cached_tokens") or 0
        return Tokens(max(prompt - cached, 0), min(cached, prompt), _count(usage, "completion_tokens") or 0)
    if (prompt := _count(usage, "promptTokenCount")) is not None:  # Gemini
        cached = _count(usage, "cachedContentTokenCount") or 0
        output = (_count(usage, "candidatesTokenCount") or 0) + (_count(usage, "thoughtsTokenCount") or 0)
        return Tokens(max(prompt - cached, 0), min(cached, prompt), output)
    if (given := _count(usage, "inputTokens")) is not None:  # Bedrock's Converse: cache reads beside the input
        written = _count(usage, "cacheWriteInputTokens") or 0
        return Tokens(given + written, _count(usage, "cacheReadInputTokens") or 0, _count(usage, "outputTokens") or 0)
    given = _count(usage, "input_tokens")
    output = _count(usage, "output_tokens")
    if given is None and output is None:
        return None
    given, output = given or 0, output or 0
    if (cached := _count(usage, "input_tokens_details", "cached_tokens")) is not None:  # Responses: included
        return Tokens(max(given - cached, 0), min(cached, given), output)
    written = _count(usage, "cache_creation_input_tokens") or 0  # Anthropic: reads and writes beside the input
    return Tokens(given + written, _count(usage, "cache_read_input_tokens") or 0, output)


@dataclass(frozen=True)
class Cost:
    """One response's cost: ``usd`` None when it cannot be known (no price for its model, or no usage reported)."""

    model: str
    tokens: Tokens | None
    usd: Decimal | None
    price: Price | None = None

    @property
    def why_unknown(self) -> str:
        if self.usd is not None:
            return ""
        if self.tokens is None:
            return "no usage reported"
        return f"no price for {self.model or 'an unnamed model'}"

    @property
    def cached_at_input_price(self) -> bool:
        return bool(self.tokens and self.tokens.cached and self.price and self.price.cached_input is None)


def served(response: Mapping[str, Any]) -> bool:
    """Whether a recorded response was an answer a provider bills for: not a failure (injected, or an HTTP error)."""
    status = response.get("status")
    failed = isinstance(status, int) and not isinstance(status, bool) and status >= 400
    return not (failed or response.get("failure") or response.get("dropped"))


def cost_of(model: str, usage: Any, table: PriceTable) -> Cost:
    """What one response cost, from its model's price and its usage."""
    tokens = tokens_of(usage)
    price = table.find(model)
    usd = None if tokens is None else _priced(model, tokens, table)
    return Cost(model, tokens, usd, price)


@dataclass
class Total:
    """The cost of many responses: the sum of those priced, and how many were not (and why)."""

    usd: Decimal = Decimal(0)
    priced: int = 0
    unpriced: int = 0
    unpriced_models: set[str] = field(default_factory=set)
    unpriced_no_usage: int = 0

    def add(self, cost: Cost) -> None:
        if cost.usd is not None:
            self.usd += cost.usd
            self.priced += 1
            return
        self.unpriced += 1
        if cost.tokens is None:
            self.unpriced_no_usage += 1
        else:
            self.unpriced_models.add(cost.model or "an unnamed model")

    def __iadd__(self, other: Total) -> Total:
        self.usd += other.usd
        self.priced += other.priced
        self.unpriced += other.unpriced
        self.unpriced_models |= other.unpriced_models
        self.unpriced_no_usage += other.unpriced_no_usage
        return self

    @property
    def responses(self) -> int:
        return self.priced + self.unpriced

    @property
    def known(self) -> bool:
        """Whether the figure is the cost, not a lower bound of it."""
        return self.unpriced == 0

    @property
    def api_usd(self) -> Decimal | None:
        """The figure the API gives: whole micro-dollars; None when responses were served but none priced."""
        if self.priced == 0 and self.unpriced:
            return None
        return self.usd.quantize(MICRO, rounding=ROUND_HALF_UP)

    def __str__(self) -> str:
        return describe(self)


class Tally:
    """Many responses' tokens summed per model, priced once per model (``total``): the same figure as adding each
    response's cost, as the sums are exact, for a fraction of the arithmetic over thousands of responses."""

    def __init__(self) -> None:
        self.by_model: dict[str, tuple[Tokens, int]] = {}
        self.no_usage = 0

    def add(self, model: str, usage: Any, times: int = 1) -> None:
        """``times`` responses of ``model`` that each reported ``usage``."""
        tokens = tokens_of(usage)
        if tokens is None:
            self.no_usage += times
            return
        summed, count = self.by_model.get(model, (Tokens(), 0))
        many = Tokens(tokens.input * times, tokens.cached * times, tokens.output * times)
        self.by_model[model] = (summed + many, count + times)

    def total(self, table: PriceTable) -> Total:
        total = Total(unpriced=self.no_usage, unpriced_no_usage=self.no_usage)
        for model, (tokens, count) in self.by_model.items():
            cost = _priced(model, tokens, table)
            if cost is None:
                total.unpriced += count
                total.unpriced_models.add(model or "an unnamed model")
            else:
                total.usd += cost
                total.priced += count
        return total


def _priced(model: str, tokens: Tokens, table: PriceTable) -> Decimal | None:
    price = table.find(model)
    if price is None:
        return None
    cached_rate = price.input if price.cached_input is None else price.cached_input
    return (tokens.input * price.input + tokens.cached * cached_rate + tokens.output * price.output) / MILLION


def total_of(costs: Iterable[Cost]) -> Total:
    total = Total()
    for cost in costs:
        total.add(cost)
    return total


def format_usd(usd: Decimal) -> str:
    """A dollar figure for people: cents from a dollar up, up to four decimals below ($0.12, $0.0375), rounded half
    up, and "< $0.0001" for the tiniest non-zero cost (never "$0.0000", which would read as free)."""
    if usd == 0:
        return "$0.00"
    if usd >= 1:
        return f"${usd.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,}"
    if usd < Decimal("0.0001"):
        return "< $0.0001"
    text = f"{usd.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)}".rstrip("0")
    return "$" + text + "0" * max(0, 2 - len(text.partition(".")[2]))


def why_unpriced(total: Total) -> str:
    """Why some responses are unpriced: the models without a price, responses that reported no usage."""
    reasons = [f"no price for {name}" for name in sorted(total.unpriced_models)]
    if total.unpriced_no_usage:
        reasons.append(f"{total.unpriced_no_usage} reported no usage")
    return "; ".join(reasons)


def describe(total: Total) -> str:
    """The total as a page says it: "$0.12", or "≥ $0.12, 2 responses unpriced (no price for x)", or "no price for
    x" when nothing could be priced; never "$0" for what is merely unknown."""
    if total.known:
        return format_usd(total.usd)
    plural = "response" if total.unpriced == 1 else "responses"
    if total.priced == 0:
        return why_unpriced(total)
    return f"≥ {format_usd(total.usd)}, {total.unpriced} {plural} unpriced ({why_unpriced(total)})"


def describe_cost(cost: Cost) -> str:
    """One response's cost as a page says it: the figure, or why it is unknown."""
    if cost.usd is None:
        return cost.why_unknown
    note = " (cached tokens at the input price: no cached price)" if cost.cached_at_input_price else ""
    return format_usd(cost.usd) + note


# -- the price file ---------------------------------------------------------------------------------------------------


class PriceFileError(ValueError):
    """A price file that cannot be read, naming the line and the field."""


FIELDS = {"model", "input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok", "priced_on", "source"}
REQUIRED = ("model", "input_usd_per_mtok", "output_usd_per_mtok", "priced_on")
MAX_USD_PER_MTOK = Decimal(1_000_000)


def _row_starts(text: str) -> list[int]:
    """Where each element of the file's top-level array starts (a character offset), for error lines."""
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    starts = []
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            return starts
        starts.append(position)
        _, position = decoder.raw_decode(text, position)


def _usd(value: Any, where: str, name: str, *, optional: bool = False) -> Decimal | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise PriceFileError(f"{where}, field '{name}': must be a number of USD per million tokens, not {value!r}")
    try:
        usd = Decimal(str(value).strip())
    except InvalidOperation:
        raise PriceFileError(f"{where}, field '{name}': {value!r} is not a number") from None
    if not usd.is_finite() or usd < 0 or usd > MAX_USD_PER_MTOK:
        raise PriceFileError(f"{where}, field '{name}': must be between 0 and {MAX_USD_PER_MTOK}, not {value!r}")
    if usd.as_tuple().exponent < -6:  # type: ignore[operator]
        raise PriceFileError(f"{where}, field '{name}': at most 6 decimal places, not {value!r}")
    return usd


def check_model_name(name: Any) -> str:
    """A row's model name, or ValueError saying what is wrong with it."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("must be a non-empty model name")
    name = name.strip()
    if len(name) > 200:
        raise ValueError("at most 200 characters")
    if "*" in name[:-1] or name == "*":
        raise ValueError("'*' may only end a name, after a prefix (e.g. 'claude-opus-4*')")
    return name


def price_from_row(row: Any, where: str) -> Price:
    """One row of a price file, or PriceFileError naming ``where`` (the row and its line) and the field."""
    if not isinstance(row, dict):
        raise PriceFileError(f"{where}: must be an object with {', '.join(REQUIRED)}")
    unknown = sorted(set(row) - FIELDS)
    if unknown:
        raise PriceFileError(f"{where}, field '{unknown[0]}': unknown field (known: {', '.join(sorted(FIELDS))})")
    for name in REQUIRED:
        if row.get(name) is None:
            raise PriceFileError(f"{where}, field '{name}': required")
    try:
        model = check_model_name(row["model"])
    except ValueError as exc:
        raise PriceFileError(f"{where}, field 'model': {exc}") from None
    try:
        priced_on = dt.date.fromisoformat(str(row["priced_on"]))
    except ValueError:
        raise PriceFileError(f"{where}, field 'priced_on': {row['priced_on']!r} is not a date (YYYY-MM-DD)") from None
    source = row.get("source") or ""
    if not isinstance(source, str) or len(source) > 500:
        raise PriceFileError(f"{where}, field 'source': must be a text of at most 500 characters")
    return Price(
        model=model,
        input=_usd(row["input_usd_per_mtok"], where, "input_usd_per_mtok"),  # type: ignore[arg-type]
        output=_usd(row["output_usd_per_mtok"], where, "output_usd_per_mtok"),  # type: ignore[arg-type]
        cached_input=_usd(row.get("cached_input_usd_per_mtok"), where, "cached_input_usd_per_mtok", optional=True),
        priced_on=priced_on,
        source=source,
    )


def parse_prices(text: str, name: str = "the price file") -> list[Price]:
    """A price file's rows: a JSON array of ``{model, input_usd_per_mtok, output_usd_per_mtok,
    cached_input_usd_per_mtok?, priced_on, source?}``. Every row is checked before any is returned; an error names the
    file, the row's line and the field. Numbers are read as decimals (``15.10`` stays 15.10)."""
    try:
        rows = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise PriceFileError(f"{name}, line {exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(rows, list):
        raise PriceFileError(f"{name}, line 1: must be a JSON array of price rows")
    starts = _row_starts(text)
    prices, seen = [], {}
    for index, row in enumerate(rows):
        line = text.count("\n", 0, starts[index]) + 1
        where = f"{name}, line {line} (row {index + 1})"
        price = price_from_row(row, where)
        key = price.model.lower()
        if key in seen:
            raise PriceFileError(f"{where}, field 'model': {price.model!r} is priced twice (also line {seen[key]})")
        seen[key] = line
        prices.append(price)
    return prices


def read_prices(path: str | Path | None = None) -> PriceTable:
    """The table of a price file (the shipped one when no path is given); PriceFileError when it cannot be read."""
    path = Path(path) if path else SHIPPED
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PriceFileError(f"{path}: cannot be read ({exc})") from None
    return PriceTable(parse_prices(text, str(path)))
