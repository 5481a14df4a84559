"""What runs cost, from their responses' usage and the price table (the arithmetic is
:mod:`harnessweb.engine.pricing`'s): per response (the run page, from the events it has read), per run (the runs
list and the API: one query for a page of runs), per test (the runs of one test name), per CI run (the runs of one
pytest session, build or commit) and per period (the overview).

Only the response events of the runs asked for are read, and of them only their usage and status and the model and
path of the request before each (JSON keys extracted by the database): never a whole event, never another kind.
Nothing is stored at recording time, so the recording path is untouched and a price changed in the admin reprices
every run at once.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import unquote, urlencode

from django.db.models import Case, Count, OuterRef, QuerySet, Subquery, TextField, Value, When
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, NullIf
from django.urls import reverse
from ninja.pagination import LimitOffsetPagination

from harnessweb.apikit import Page
from harnessweb.engine.price_catalog import catalog_price
from harnessweb.engine.pricing import (
    Cost,
    PriceTable,
    Tally,
    Total,
    cost_of,
    describe,
    describe_cost,
    format_usd,
    served,
    why_unpriced,
)
from runs_app.models import ModelPrice, Run, RunEvent

# The model a path names: Gemini's and Vertex AI's ``/models/{m}:…``, Bedrock's ``/model/{id}/…``, Azure's
# ``/openai/deployments/{d}/…`` (the deployment as the model, as the wire reads it).
_MODEL_IN_PATH = re.compile(r"/(?:models|model|deployments)/([^/:]+)")
# The plugin's upload names a session's runs ``pytest-<session>-<test digest>`` and its JUnit run ``pytest-<session>``.
_SESSION = re.compile(r"^pytest-([0-9a-f]{12})(?:-|$)")


def price_table() -> PriceTable:
    """The admin's prices, over genai-prices' list for every model they do not name."""
    return PriceTable((row.as_price() for row in ModelPrice.objects.all()), fallback=catalog_price)


def model_of(body_model: Any, path: Any) -> str:
    """The model a request asked for: its body's ``model``, else the one its path names."""
    if isinstance(body_model, str) and body_model.strip():
        return body_model.strip()
    found = _MODEL_IN_PATH.search(path) if isinstance(path, str) else None
    return unquote(found.group(1)) if found else ""


def _priced_rows(events: QuerySet[RunEvent], *more: str) -> QuerySet[Any]:
    """The responses among ``events`` grouped by the model asked for, the usage reported, what says whether they
    were served and the ``more`` fields asked for, with their count: a suite's scripted answers repeat, so thousands
    of responses are a few groups, summed by the database. One query: a response recorded with its model (the
    endpoint and the calls upload record it) is grouped by it; for one recorded without, the model and path of the
    request before it come from correlated subqueries on the ``(run, seq)`` index, which COALESCE and CASE
    evaluate only for those."""
    asked = RunEvent.objects.filter(run_id=OuterRef("run_id"), kind="request", seq__lt=OuterRef("seq")).order_by("-seq")
    text = TextField()
    return (
        events.filter(kind="response")
        .annotate(recorded_model=NullIf(KT("data__model"), Value(""), output_field=text))
        .annotate(
            asked_model=Coalesce(
                "recorded_model", Subquery(asked.values(value=KT("data__body__model"))[:1]), output_field=text
            ),
            asked_path=Case(
                When(recorded_model__isnull=False, then=Value("")),
                default=Subquery(asked.values(value=KT("data__path"))[:1]),
                output_field=text,
            ),
        )
        .values_list("asked_model", "asked_path", "data__usage", "data__status", "data__failure", *more)
        .annotate(n=Count("id"))
        .order_by()
    )


def _served(events: QuerySet[RunEvent], *more: str) -> Iterable[tuple[Any, ...]]:
    """The served responses among ``events`` as (model, usage, how many, *more): failures cost nothing."""
    for body_model, path, usage, status, failure, *extra, count in _priced_rows(events, *more):
        if served({"status": status, "failure": failure}):
            yield (model_of(body_model, path), usage, count, *extra)


def run_costs(run_ids: Iterable[uuid.UUID], table: PriceTable | None = None) -> dict[uuid.UUID, Total]:
    """Each run's total (runs without responses cost $0): one query for the responses, one for the prices."""
    tallies = {run_id: Tally() for run_id in run_ids}
    if tallies:
        for model, usage, count, run_id in _served(RunEvent.objects.filter(run_id__in=list(tallies)), "run_id"):
            tallies[run_id].add(model, usage, count)
        table = table if table is not None else price_table()
    return {run_id: tally.total(table) for run_id, tally in tallies.items()}  # type: ignore[arg-type]


def runs_cost(runs: QuerySet[Run], table: PriceTable | None = None) -> Total:
    """The total over every response of these runs."""
    tally = Tally()
    for model, usage, count in _served(RunEvent.objects.filter(run__in=runs)):
        tally.add(model, usage, count)
    return tally.total(table if table is not None else price_table())


def period_cost(since: datetime, top: int = 5) -> dict[str, Any]:
    """The overview's figure: what the runs started since ``since`` cost, and the costliest tests among them (CI and
    pytest runs by test name), each linked to its runs. Two queries: the responses, the prices."""
    everything, tests = Tally(), {}
    for model, usage, count, name, source in _served(
        RunEvent.objects.filter(run__started_at__gte=since), "run__name", "run__source"
    ):
        everything.add(model, usage, count)
        if name and source in ("ci", "pytest"):
            tests.setdefault(name, Tally()).add(model, usage, count)
    table = price_table()
    total = everything.total(table)
    costs = {name: tally.total(table) for name, tally in tests.items()}
    costliest = sorted(costs.items(), key=lambda item: (-item[1].usd, item[0]))[:top]
    return {
        "total": describe(total) if total.responses else "",
        "known": total.known,
        "responses": total.responses,
        "tests": [
            {"name": name, "total": describe(cost), "url": reverse("runs:list") + "?" + urlencode({"test": name})}
            for name, cost in costliest
        ],
    }


def total_for(run: Run) -> Total:
    """One run's total, kept on the instance: the API's three cost fields ask for it, the list pre-fills it."""
    cached = getattr(run, "_cost_total", None)
    if cached is None:
        cached = run._cost_total = run_costs([run.id])[run.id]  # type: ignore[attr-defined]
    return cached


class RunPage(Page):
    """The API's pages of runs, each run's cost read for the whole page in one query."""

    def paginate_queryset(self, queryset: Any, pagination: LimitOffsetPagination.Input, **params: Any) -> Any:
        page = super().paginate_queryset(queryset, pagination, **params)
        items = list(page["items"])
        totals = run_costs([run.id for run in items])
        for run in items:
            run._cost_total = totals[run.id]
        page["items"] = items
        return page


# -- what pages show -------------------------------------------------------------------------------------------------


def cost_cell(total: Total | None) -> dict[str, Any]:
    """A total as a short cell (the runs list): the figure, "≥" when some responses are unpriced, "no price" when
    none could be priced; the full sentence as its title."""
    if total is None or total.responses == 0:
        return {"text": "—", "title": "no responses", "known": True}
    if total.known:
        title = f"{total.priced} response{'' if total.priced == 1 else 's'} priced, {total.usd} USD"
        return {"text": format_usd(total.usd), "title": title, "known": True}
    text = "no price" if total.priced == 0 else f"≥ {format_usd(total.usd)}"
    return {"text": text, "title": describe(total), "known": False}


def response_costs(events: list[RunEvent], table: PriceTable | None = None) -> dict[int, Cost]:
    """The cost of each served response of a run's events (in order), by its seq: the run page, no query but the
    prices'."""
    if table is None:
        if not any(event.kind == "response" for event in events):
            return {}
        table = price_table()
    costs: dict[int, Cost] = {}
    asked: dict[str, Any] = {}
    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        if event.kind == "request":
            asked = data
        elif event.kind == "response" and served(data):
            body = asked.get("body") if isinstance(asked.get("body"), dict) else {}
            costs[event.seq] = cost_of(model_of(body.get("model"), asked.get("path")), data.get("usage"), table)
    return costs


def _group(label: str, runs: QuerySet[Run], table: PriceTable, url: str = "") -> dict[str, Any]:
    count = runs.count()
    return {"label": label, "runs": count, "total": describe(runs_cost(runs, table)), "url": url}


def groups_of(run: Run, table: PriceTable) -> list[dict[str, Any]]:
    """What a CI or pytest run adds up to beyond itself: its test (every run of that test name) and its CI run (the
    runs of its pytest session, or of its build URL, or else of its commit)."""
    groups = []
    if run.name and run.source in ("ci", "pytest"):
        same_test = Run.objects.filter(name=run.name, source=run.source)
        url = reverse("runs:list") + "?" + urlencode({"test": run.name, "source": run.source})
        groups.append(_group("This test, every run", same_test, table, url))
    session = _SESSION.match(run.external_id or "")
    if session:
        runs = Run.objects.filter(external_id__startswith=f"pytest-{session.group(1)}-")
        groups.append(_group(f"pytest session {session.group(1)}", runs, table))
    elif run.build_url:
        groups.append(_group("This build", Run.objects.filter(build_url=run.build_url), table))
    elif run.commit and run.source == "ci":
        groups.append(_group(f"Commit {run.commit[:10]}", Run.objects.filter(commit=run.commit, source="ci"), table))
    return groups


def run_cost_context(run: Run | None, events: list[RunEvent]) -> dict[str, Any]:
    """The run page's cost: its total (from the events the page read), why part of it is unknown, and its test's
    and CI run's totals."""
    if run is None:
        return {"total": "", "groups": []}
    table = price_table()
    total = Total()
    for cost in response_costs(events, table).values():
        total.add(cost)
    return {
        "total": describe(total) if total.responses else "—",
        "known": total.known,
        "unpriced": why_unpriced(total),
        "priced_models": len(table),
        "groups": groups_of(run, table),
    }


def verdict_cost(verdict: Any, table: PriceTable | None = None) -> Cost | None:
    """What the judge's own call cost: its model's price times the tokens its answer reported; None when the judge
    was not asked (skipped)."""
    if getattr(verdict, "skipped_reason", ""):
        return None
    given = (getattr(verdict, "input_tokens", None), getattr(verdict, "output_tokens", None))
    usage = None if given == (None, None) else {"input_tokens": given[0] or 0, "output_tokens": given[1] or 0}
    return cost_of(verdict.judge_model, usage, table if table is not None else price_table())


def verdict_cost_text(verdict: Any, table: PriceTable | None = None) -> str:
    """The judge's cost as pages say it: "$0.0049", "no price for <model>", "no usage reported", or "not asked"."""
    cost = verdict_cost(verdict, table)
    return "not asked" if cost is None else describe_cost(cost)
