"""Prices the table has no row for, from genai-prices (pydantic's price list of every provider, the one pydantic-ai
and Logfire use): the default behind the admin's table (the server) and a price file (the pytest plugin), which stay
the place for a team's own prices and override it.

The list is the snapshot the installed package ships; it is never updated from the network (the harness runs
offline), so the prices move with the package's version, which the application's constraints pin.

A model is looked up as the request names it; genai-prices finds its provider from the name. A Bedrock model id
(``anthropic.claude-…-v1:0``, ``us.amazon.nova-…``) and an Azure deployment named after its model are found under
those providers. Where a price is tiered by the prompt's length (Gemini 2.5 Pro over 200k tokens), the base tier is
taken, and the row's source says so.
"""

from __future__ import annotations

from decimal import Decimal
from functools import cache
from typing import Any

from harnessweb.engine.pricing import Price

try:
    from genai_prices import Usage, calc_price
    from genai_prices import __version__ as VERSION
except ImportError:  # a core install without it: only the table's own rows price
    calc_price = None  # type: ignore[assignment]
    VERSION = ""

# Tried in turn when the name alone finds no provider.
_PROVIDERS = (None, "aws", "azure")


def _base(value: Any) -> tuple[Decimal | None, bool]:
    """A price per million tokens, and whether it was tiered."""
    if value is None:
        return None, False
    if isinstance(value, Decimal):
        return value, False
    return getattr(value, "base", None), True


@cache
def catalog_price(model: str) -> Price | None:
    """genai-prices' price of ``model`` as a row of the table (``source`` naming the list, its version, the provider
    and the model it matched), or None when the list has no such model."""
    name = model.strip()
    if calc_price is None or not name:
        return None
    for provider in _PROVIDERS:
        try:
            found = calc_price(Usage(input_tokens=0, output_tokens=0), model_ref=name, provider_id=provider)
        except LookupError:
            continue
        prices = found.model_price
        given, tiered_in = _base(getattr(prices, "input_mtok", None))
        made, tiered_out = _base(getattr(prices, "output_mtok", None))
        cached, tiered_cache = _base(getattr(prices, "cache_read_mtok", None))
        if given is None or made is None:
            return None  # priced by something other than tokens (images, audio seconds): not a token price
        tier = " (base tier)" if tiered_in or tiered_out or tiered_cache else ""
        source = f"genai-prices {VERSION}: {found.provider.name} {found.model.id}{tier}"
        return Price(model=name, input=given, output=made, cached_input=cached, source=source)
    return None
