"""``{% load pricing %}``: ``{{ verdict|judge_cost }}``, the judge's own cost beside a verdict (run page, review
queue), from its token counts and the price table (:func:`runs_app.pricing.costs.verdict_cost_text`)."""

from __future__ import annotations

from django import template

from runs_app.models import JudgeVerdict
from runs_app.pricing.costs import verdict_cost_text

register = template.Library()


@register.filter
def judge_cost(verdict: JudgeVerdict) -> str:
    return verdict_cost_text(verdict)
