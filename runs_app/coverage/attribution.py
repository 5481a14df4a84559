"""How a JUnit test case is attributed to a provider and a tier (its checks within the tier: :mod:`checks`).

Field by field:

- provider: the case's ``provider`` column, else its ``provider`` property, else the registered provider name that
  appears as a word in ``"classname::name"`` (``name`` alone when there is no classname). "As a word" means not
  preceded or followed by a letter or digit, case-insensitively, with ``-`` and ``_`` interchangeable (Rust test
  names cannot hold a ``-``): ``anthropic`` is found in ``provider_streaming::anthropic::simple_text`` and in
  ``checklist_anthropic_auth_key_flows_through``, ``kimi-for-coding`` in ``kimi_for_coding_simple_text``, and
  ``zai`` is not found in ``zhipuai``. When several providers appear, the leftmost wins (the longest at the same
  place), so ``provider_streaming::azure::azure_openai_simple_text`` is Azure's. A provider named by column or
  property that is not registered makes the case count for nobody.
- tier: the ``tier`` column, else the ``tier`` property (one of :data:`CASE_TIERS`, any case; ``streaming`` is
  read as conformance), else the tier whose ``TierRule`` pattern matches ``"classname::name"``
  earliest (a regular expression searched case-insensitively; ties go to the tier listed first). Earliest, because
  the classname names the test file or binary, which is what decides a tier: ``e2e_agent::provider_streaming_x``
  is e2e, ``provider_streaming::e2e_x`` is conformance. A tier without a TierRule row uses the default patterns
  below; a row with an empty list disables the fallback for that tier.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from runs_app.models import Provider

ERROR_PATHS = "error_paths"
# The tiers a test case is attributed to: the registry's four and the seed's error paths, a tier of its own (listed
# before conformance, so that a pattern both name, as the seeded rules do for provider_error_paths, means it).
CASE_TIERS: tuple[str, ...] = ("unit", "contract", ERROR_PATHS, "conformance", "e2e")

# The defaults the seed_providers migration writes into TierRule (see it for what the e2e pattern accepts); error
# paths, a tier of their own since, keep theirs here: listed first, they win the tie with the seeded conformance
# rule that names provider_error_paths too.
DEFAULT_TIER_PATTERNS: dict[str, list[str]] = {
    "unit": ["provider_unit_checklist"],
    "contract": ["provider_native_contract"],
    ERROR_PATHS: ["provider_error_paths"],
    "conformance": ["provider_streaming", "provider_error_paths"],
    "e2e": ["(?<![a-z0-9])e2e_"],
}
# The seed calls conformance "streaming" too.
TIER_ALIASES = {"streaming": "conformance", "error-paths": ERROR_PATHS}


def properties_of(raw: Any) -> dict[str, str]:
    """JUnit properties as a dict, whether stored as a mapping or as a list of name/value pairs."""
    if isinstance(raw, dict):
        return {str(k).lower(): str(v) for k, v in raw.items() if v is not None}
    result: dict[str, str] = {}
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, dict) and "name" in item:
                result[str(item["name"]).lower()] = str(item.get("value", ""))
            elif isinstance(item, list | tuple) and len(item) == 2:
                result[str(item[0]).lower()] = str(item[1])
    return result


def tier_name(value: str | None) -> str | None:
    value = (value or "").strip().lower()
    value = TIER_ALIASES.get(value, value)
    return value if value in CASE_TIERS else None


class Classifier:
    """Attributes JUnit cases to a (provider, tier) as the module docstring describes; memoised per test name."""

    def __init__(self, provider_names: Iterable[str], tier_patterns: dict[str, list[str]]):
        self.providers = {Provider.key(name): name for name in provider_names}
        # Longest first, so that at one position the alternation prefers "kimi-for-coding" to a shorter "kimi".
        alternatives = [
            "[-_]".join(re.escape(part) for part in re.split(r"[-_]", key))
            for key in sorted(self.providers, key=len, reverse=True)
        ]
        self._provider_re = (
            re.compile(r"(?<![a-z0-9])(" + "|".join(alternatives) + r")(?![a-z0-9])", re.IGNORECASE)
            if alternatives
            else None
        )
        self._tier_res: list[tuple[str, re.Pattern[str]]] = []
        for tier in CASE_TIERS:
            for pattern in tier_patterns.get(tier, []):
                try:
                    self._tier_res.append((tier, re.compile(pattern, re.IGNORECASE)))
                except re.error:
                    # A broken pattern typed in the admin must not take the whole coverage page down.
                    continue
        self._by_text: dict[str, tuple[str | None, str | None]] = {}

    def _from_text(self, text: str) -> tuple[str | None, str | None]:
        if text not in self._by_text:
            provider = None
            if self._provider_re is not None and (match := self._provider_re.search(text)):
                provider = self.providers[Provider.key(match.group(1))]
            best: tuple[int, int] | None = None
            for tier, pattern in self._tier_res:
                if match := pattern.search(text):
                    candidate = (match.start(), CASE_TIERS.index(tier))
                    best = candidate if best is None else min(best, candidate)
            self._by_text[text] = (provider, CASE_TIERS[best[1]] if best else None)
        return self._by_text[text]

    def attribute(
        self, *, name: str, classname: str, provider: str = "", tier: str = "", properties: Any = None
    ) -> tuple[str | None, str | None]:
        """The registered provider name and tier a case counts for (either may be None: it counts for no cell)."""
        props = properties_of(properties)
        text = f"{classname}::{name}" if classname else name
        named_provider = provider or props.get("provider", "")
        named_tier = tier_name(tier) or tier_name(props.get("tier"))
        if named_provider and named_tier:
            return self.providers.get(Provider.key(named_provider)), named_tier
        guessed_provider, guessed_tier = self._from_text(text)
        return (
            self.providers.get(Provider.key(named_provider)) if named_provider else guessed_provider,
            named_tier or guessed_tier,
        )
