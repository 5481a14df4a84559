"""Provider test obligations (seed 003): the registered providers and what each owes, the tier rules that place a
JUnit case in a tier, and the waivers. Imported at the end of ``runs_app/models.py``, which registers them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

TIERS = ("unit", "contract", "conformance", "e2e")
# Seed 003's required cassette scenarios: all six for a native provider, three for an OpenAI-compatible preset.
NATIVE_SCENARIOS = (
    "simple_text",
    "tool_call_single",
    "unicode_text",
    "error_auth_401",
    "error_bad_request_400",
    "error_rate_limit_429",
)
PRESET_SCENARIOS = ("simple_text", "tool_call_single", "error_auth_401")
CASSETTES_OBLIGATION = "cassettes"
# The providers whose protocols this harness plays (harnessweb/engine/wire/): a fresh install registers these
# (migration 0015 drops seed 003's others while untouched); a team registers its own in the admin.
SERVED_PROVIDERS = ("openai", "anthropic", "gemini", "azure", "bedrock", "vertex", "cohere")


class Provider(models.Model):
    """A provider and what it owes. Registered without explicit obligations, it owes everything seed 003 asks of its
    kind (a native provider every tier and six cassette scenarios; a preset, whose tiers the shared OpenAI tests
    cover, three scenarios); an obligation it does not owe is marked not applicable with a reason."""

    class Onboarding(models.TextChoices):
        NATIVE = "native"
        OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible preset"

    name = models.CharField(max_length=100, unique=True)
    onboarding = models.CharField(max_length=20, choices=Onboarding.choices, default=Onboarding.NATIVE)
    required_tiers = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text='Subset of ["unit", "contract", "conformance", "e2e"]; left empty, what the seed asks of its kind.',
    )
    cassette_floor = models.PositiveIntegerField(default=1)
    required_scenarios = models.JSONField(
        null=True, blank=True, default=None, help_text="Cassette scenarios required; left empty, the seed's."
    )
    not_applicable = models.JSONField(
        default=dict, blank=True, help_text='Obligations it does not owe, each with its reason: {"e2e": "why"}.'
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Obligations left unset are the seed's for the provider's kind, written down (so the admin shows them)."""
        native = self.onboarding == self.Onboarding.NATIVE
        if self.required_tiers is None:
            self.required_tiers = list(TIERS) if native else []
        if self.required_scenarios is None:
            self.required_scenarios = list(NATIVE_SCENARIOS if native else PRESET_SCENARIOS)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        """Every obligation the seed asks of this kind of provider and this one does not owe needs its reason."""
        if not isinstance(self.not_applicable, dict):
            raise ValidationError({"not_applicable": 'give an object of obligation → reason, like {"e2e": "why"}'})
        reasons = self.not_applicable
        known = (*TIERS, "error_paths", CASSETTES_OBLIGATION)
        for name, reason in reasons.items():
            if name not in known:
                raise ValidationError({"not_applicable": f"{name!r} is not an obligation ({', '.join(known)})"})
            if not isinstance(reason, str) or not reason.strip():
                raise ValidationError({"not_applicable": f"give the reason {name} is not applicable"})
        if self.onboarding == self.Onboarding.NATIVE and self.required_tiers is not None:
            dropped = [t for t in TIERS if t not in self.required_tiers and t not in reasons]
            if dropped:
                message = f"a native provider owes every tier: give the reason {', '.join(dropped)} does not apply"
                raise ValidationError({"required_tiers": f"{message} (not applicable), or waive it"})
        if self.required_scenarios == [] and CASSETTES_OBLIGATION not in reasons:
            message = "seed 003 requires cassettes of every provider: name its scenarios, or give the reason"
            raise ValidationError({"required_scenarios": f"{message} cassettes do not apply (not applicable)"})

    def not_applicable_reason(self, obligation: str) -> str:
        """Why this provider does not owe an obligation, when it was marked so ("" otherwise)."""
        reasons = self.not_applicable if isinstance(self.not_applicable, dict) else {}
        reason = reasons.get(obligation)
        return reason.strip() if isinstance(reason, str) else ""

    @staticmethod
    def key(name: str) -> str:
        """A provider name as compared: lower case, ``_`` read as ``-`` (Rust test names cannot hold a ``-``)."""
        return name.strip().lower().replace("_", "-")


class TierRule(models.Model):
    """Test-name patterns (regular expressions) that place a JUnit case in a tier when its properties don't."""

    tier = models.CharField(max_length=20, unique=True)
    patterns = models.JSONField(default=list)

    def __str__(self) -> str:
        return self.tier


class Waiver(models.Model):
    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="waivers")
    obligation = models.CharField(max_length=20)  # a tier, or "cassettes"
    reason = models.TextField()
    expires_on = models.DateField()
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["provider", "obligation", "-expires_on"]

    def __str__(self) -> str:
        return f"{self.provider} {self.obligation} until {self.expires_on}"
