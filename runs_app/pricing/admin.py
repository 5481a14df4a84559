"""The price table in the admin: one row per model (or ``*`` prefix), its three prices, the day taken and the
source; which model ids a row prices is shown beside its name. Imported by ``runs_app/admin.py``, which registers
it."""

from __future__ import annotations

from django.contrib import admin

from runs_app.adminkit import HarnessAdmin
from runs_app.models import ModelPrice


@admin.register(ModelPrice)
class ModelPriceAdmin(HarnessAdmin):
    list_display = (
        "model",
        "input_usd_per_mtok",
        "output_usd_per_mtok",
        "cached_input",
        "priced_on",
        "source",
    )
    search_fields = ("model", "source")
    ordering = ("model",)
    readonly_fields = ("updated_at",)
    fieldsets = (
        (None, {"fields": ("model",)}),
        (
            "USD per million tokens",
            {
                "fields": ("input_usd_per_mtok", "output_usd_per_mtok", "cached_input_usd_per_mtok"),
                "description": "Cache reads without a cached-input price are priced at the input price (an upper "
                "bound). manage.py load_prices FILE loads a JSON file of rows (harnessweb/engine/prices.json).",
            },
        ),
        ("Where from", {"fields": ("priced_on", "source", "updated_at")}),
    )

    @admin.display(description="cached input USD / MTok", ordering="cached_input_usd_per_mtok")
    def cached_input(self, obj: ModelPrice) -> str:
        value = obj.cached_input_usd_per_mtok
        return str(value) if value is not None else "— (input price)"
