"""What "Judge these runs" asks, shared by its page and the Run admin's action: the criteria form, the runs a
request names, and the form page's context."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django import forms
from django.db.models import QuerySet

from harnessweb.judging.verdicts import criteria_lines
from runs_app.judging.judge import configured
from runs_app.judging.models import CriteriaSet
from runs_app.live.presenters import filter_runs, run_filters
from runs_app.models import Run

JUDGE_FORM = "runs_app/judge_form.html"
DEFAULT_LIMIT = 50  # runs judged from the runs list's filters, newest first
MAX_RUNS = 500
SHOWN_RUNS = 10


class JudgeForm(forms.Form):
    criteria = forms.CharField(
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": "One criterion per line"}),
        help_text="One criterion per line. Typed criteria win over a saved set.",
    )
    criteria_set = forms.ModelChoiceField(CriteriaSet.objects.all(), required=False, empty_label="(none)")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not criteria_lines(data.get("criteria") or "") and data.get("criteria_set") is None:
            raise forms.ValidationError("Type at least one criterion, or choose a saved criteria set.")
        return data


class Selection:
    """The runs a request names: ``run`` ids (all of them), else the runs list's filters (the newest ``limit``)."""

    def __init__(self, params: Any):
        self.errors: list[str] = []
        self.run_ids = [value.strip() for value in params.getlist("run") if value.strip()]
        self.filters = run_filters(params)
        self.limit = DEFAULT_LIMIT
        raw_limit = params.get("limit", "").strip()
        if raw_limit:
            if raw_limit.isdigit() and 1 <= int(raw_limit) <= MAX_RUNS:
                self.limit = int(raw_limit)
            else:
                self.errors.append(f"limit must be a whole number from 1 to {MAX_RUNS}, not {raw_limit!r}.")
        if len(self.run_ids) > MAX_RUNS:
            self.errors.append(f"{len(self.run_ids)} runs named: at most {MAX_RUNS} are judged at once.")
        for value in self.run_ids:
            try:
                uuid.UUID(value)
            except ValueError:
                self.errors.append(f"{value!r} is not a run id (a UUID).")

    @classmethod
    def of_runs(cls, run_ids: list[str]) -> Selection:
        return cls(_Params({"run": run_ids}))

    def matching(self) -> QuerySet[Run]:
        if self.errors:
            return Run.objects.none()
        if self.run_ids:
            return Run.objects.filter(pk__in=self.run_ids).order_by("-started_at", "-id")
        return filter_runs(self.filters)

    def runs(self) -> list[Run]:
        runs = self.matching()
        return list(runs if self.run_ids else runs[: self.limit])

    def hidden(self) -> list[tuple[str, str]]:
        """The selection as hidden form fields, so the POST judges what the GET showed."""
        if self.run_ids:
            return [("run", value) for value in self.run_ids]
        return [*self.filters.items(), ("limit", str(self.limit))]


class _Params:
    """The two QueryDict methods Selection reads, over a plain mapping of lists."""

    def __init__(self, data: Mapping[str, list[str]]):
        self.data = data

    def getlist(self, name: str) -> list[str]:
        return list(self.data.get(name, []))

    def get(self, name: str, default: str = "") -> str:
        values = self.data.get(name)
        return values[-1] if values else default


def form_context(selection: Selection, form: JudgeForm) -> dict[str, Any]:
    """Context of ``runs_app/judge_form.html``."""
    runs = selection.runs()
    return {
        "form": form,
        "selection": selection,
        "runs": runs[:SHOWN_RUNS],
        "count": len(runs),
        "matching": selection.matching().count(),
        "more": max(0, len(runs) - SHOWN_RUNS),
        "judge": configured(),
        "has_criteria_sets": CriteriaSet.objects.exists(),
    }
