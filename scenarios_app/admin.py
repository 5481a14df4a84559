"""Scenario admin: the JSON is edited as text and validated by the same pydantic model as the loader and the API."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pydantic
from django import forms
from django.contrib import admin
from django.http import HttpRequest

from harnessweb.engine import schemas
from harnessweb.text import pretty_json
from scenarios_app.models import Scenario


class ScenarioForm(forms.ModelForm):
    """``data`` as pretty-printed JSON; nothing is saved unless it parses and validates. The id comes from it."""

    data = forms.CharField(
        widget=forms.Textarea(
            attrs={
                "rows": 40,
                "spellcheck": "false",
                "style": "width:100%;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px",
            }
        ),
        help_text="The scenario as JSON (snake_case, or the harness's camelCase). Its id names the scenario.",
    )

    class Meta:
        model = Scenario
        fields = ("data",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["data"] = pretty_json(self.instance.data)

    def clean_data(self) -> dict[str, Any]:
        text = self.cleaned_data["data"]
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from exc
        try:
            scenario = schemas.Scenario.model_validate(raw)
        except pydantic.ValidationError as exc:
            raise forms.ValidationError(schemas.format_validation_error(exc).splitlines()) from exc
        if not self.instance._state.adding and scenario.id != self.instance.pk:
            # Changing the id would write a second scenario and leave this one behind.
            raise forms.ValidationError(
                f"id: this scenario is {self.instance.pk!r}; to make {scenario.id!r}, add a new scenario instead."
            )
        if self.instance._state.adding and Scenario.objects.filter(pk=scenario.id).exists():
            raise forms.ValidationError(f"id: a scenario {scenario.id!r} already exists; edit that one instead.")
        return scenario.canonical()


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    form = ScenarioForm
    list_display = ("id", "short_description", "turn_count", "revision", "updated_at")
    search_fields = ("id", "description")

    def get_fields(self, request: HttpRequest, obj: Scenario | None = None) -> Iterable[str]:
        if obj is None:
            return ("data",)
        return ("id", "description", "revision", "updated_at", "data")

    def get_readonly_fields(self, request: HttpRequest, obj: Scenario | None = None) -> Iterable[str]:
        return () if obj is None else ("id", "description", "revision", "updated_at")

    def save_model(self, request: HttpRequest, obj: Scenario, form: forms.ModelForm, change: bool) -> None:
        if not change:
            obj.id = form.cleaned_data["data"]["id"]
        super().save_model(request, obj, form, change)

    @admin.display(description="description")
    def short_description(self, obj: Scenario) -> str:
        return obj.description if len(obj.description) <= 100 else obj.description[:100] + "…"

    @admin.display(description="turns")
    def turn_count(self, obj: Scenario) -> int:
        return len((obj.data or {}).get("turns") or [])
