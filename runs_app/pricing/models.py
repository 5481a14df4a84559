"""The price table: USD per million input, output and cached-input tokens per model, with the day each price was
taken and where from. Imported at the end of ``runs_app/models.py``, which registers it. Which row prices a model
(exact name, a dated id's base name, a ``*`` prefix) is :class:`harnessweb.engine.pricing.PriceTable`'s rule."""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from harnessweb.engine.pricing import MAX_USD_PER_MTOK, Price, check_model_name

_USD = {
    "max_digits": 13,
    "decimal_places": 6,
    "validators": [MinValueValidator(Decimal(0)), MaxValueValidator(MAX_USD_PER_MTOK)],
}


class ModelPrice(models.Model):
    model = models.CharField(
        max_length=200,
        unique=True,
        help_text="A model id (also prices its dated ids: claude-opus-4-1 prices claude-opus-4-1-20250805), or a "
        "prefix ending in * (claude-opus-4*); the most specific row wins.",
    )
    input_usd_per_mtok = models.DecimalField("input USD / MTok", **_USD)
    output_usd_per_mtok = models.DecimalField("output USD / MTok", **_USD)
    cached_input_usd_per_mtok = models.DecimalField(
        "cached input USD / MTok",
        null=True,
        blank=True,
        help_text="Cache reads; left empty, they are priced at the input price (an upper bound).",
        **_USD,
    )
    priced_on = models.DateField(help_text="The day this price was taken.")
    source = models.CharField(max_length=500, blank=True, help_text="Where the price was taken from.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model"]

    def __str__(self) -> str:
        return self.model

    def clean(self) -> None:
        try:
            self.model = check_model_name(self.model)
        except ValueError as exc:
            raise ValidationError({"model": str(exc)}) from None
        twin = ModelPrice.objects.filter(model__iexact=self.model).exclude(pk=self.pk)
        if twin.exists():
            raise ValidationError({"model": f"{twin.first()} is priced already (names are matched ignoring case)."})

    def as_price(self) -> Price:
        return Price(
            model=self.model,
            input=self.input_usd_per_mtok,
            output=self.output_usd_per_mtok,
            cached_input=self.cached_input_usd_per_mtok,
            priced_on=self.priced_on,
            source=self.source,
        )
