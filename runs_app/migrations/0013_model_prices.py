from decimal import Decimal

import django.core.validators
from django.db import migrations, models

_USD_VALIDATORS = [
    django.core.validators.MinValueValidator(Decimal("0")),
    django.core.validators.MaxValueValidator(Decimal("1000000")),
]


class Migration(migrations.Migration):
    dependencies = [("runs_app", "0012_trace_log_outcome")]

    operations = [
        migrations.CreateModel(
            name="ModelPrice",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "model",
                    models.CharField(
                        help_text="A model id (also prices its dated ids: claude-opus-4-1 prices "
                        "claude-opus-4-1-20250805), or a prefix ending in * (claude-opus-4*); the most specific row "
                        "wins.",
                        max_length=200,
                        unique=True,
                    ),
                ),
                (
                    "input_usd_per_mtok",
                    models.DecimalField(
                        decimal_places=6, max_digits=13, validators=_USD_VALIDATORS, verbose_name="input USD / MTok"
                    ),
                ),
                (
                    "output_usd_per_mtok",
                    models.DecimalField(
                        decimal_places=6, max_digits=13, validators=_USD_VALIDATORS, verbose_name="output USD / MTok"
                    ),
                ),
                (
                    "cached_input_usd_per_mtok",
                    models.DecimalField(
                        blank=True,
                        decimal_places=6,
                        help_text="Cache reads; left empty, they are priced at the input price (an upper bound).",
                        max_digits=13,
                        null=True,
                        validators=_USD_VALIDATORS,
                        verbose_name="cached input USD / MTok",
                    ),
                ),
                ("priced_on", models.DateField(help_text="The day this price was taken.")),
                ("source", models.CharField(blank=True, help_text="Where the price was taken from.", max_length=500)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={"ordering": ["model"]},
        ),
    ]
