"""The overview's figures, from rows the query layer feeds in (no Django, no I/O): runs per bucket stacked by
status with the bars' SVG geometry, the scenarios whose pass rate dropped against the previous period, and the
clients that waited longest for their answers and that retried most after injected failures.

A *client* is what the runs' requests say about who sent them: the User-Agent header (an SDK names itself and its
version there), with the run's protocol and source. API keys are redacted before anything is recorded, so no key
fingerprint exists to group by, and the conversation key is one per run, which groups nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import median
from typing import Any

from runs_app.live.resilience import RETRIED, WENT_ON, analyse

# Stacked bottom to top; "running" last, so a finished bar's top is its failures and errors.
STATUSES = ("passed", "failed", "errored", "abandoned", "running")
# A pass rate's runs: an abandoned run (its client went away before the last turn) passed nothing and failed nothing.
FINISHED = ("passed", "failed", "errored")
# The chart's drawing area in SVG user units (the template scales it to the card's width).
WIDTH, HEIGHT = 720, 200
LEFT, RIGHT, TOP, BOTTOM = 36, 8, 10, 26
TOP_ROWS = 6  # rows listed per widget


@dataclass(frozen=True)
class Period:
    key: str
    label: str
    span: timedelta
    bucket: timedelta

    @property
    def buckets(self) -> int:
        return int(self.span / self.bucket)


PERIODS = {
    "24h": Period("24h", "last 24 hours", timedelta(hours=24), timedelta(hours=1)),
    "7d": Period("7d", "last 7 days", timedelta(days=7), timedelta(days=1)),
}
DEFAULT_PERIOD = "24h"


def bucket_starts(period: Period, now: datetime) -> list[datetime]:
    """The starts of the period's buckets, oldest first; the last one holds ``now``."""
    floor = now.replace(minute=0, second=0, microsecond=0)
    if period.bucket >= timedelta(days=1):
        floor = floor.replace(hour=0)
    return [floor - period.bucket * (period.buckets - 1 - i) for i in range(period.buckets)]


@dataclass
class Bar:
    start: datetime
    label: str
    counts: dict[str, int]
    x: float = 0.0
    width: float = 0.0
    segments: list[dict[str, Any]] = field(default_factory=list)
    show_label: bool = True

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def centre(self) -> float:
        return round(self.x + self.width / 2, 2)

    @property
    def title(self) -> str:
        parts = ", ".join(f"{self.counts[s]} {s}" for s in STATUSES if self.counts[s])
        return f"{self.label}: {self.total} run{'s' if self.total != 1 else ''}" + (f" ({parts})" if parts else "")


@dataclass
class Chart:
    bars: list[Bar]
    ticks: list[dict[str, Any]]
    totals: dict[str, int]
    width: int = WIDTH
    height: int = HEIGHT
    baseline: float = HEIGHT - BOTTOM
    left: float = LEFT
    right: float = WIDTH - RIGHT
    label_y: float = HEIGHT - 8

    @property
    def total(self) -> int:
        return sum(self.totals.values())

    @property
    def description(self) -> str:
        """The chart in one sentence: its text alternative."""
        if not self.total:
            return "No runs in this period."
        busiest = max(self.bars, key=lambda bar: bar.total)
        parts = ", ".join(f"{self.totals[s]} {s}" for s in STATUSES if self.totals[s])
        runs = f"{self.total} run{'s' if self.total != 1 else ''}"
        return f"{runs} ({parts}); the busiest was {busiest.label} with {busiest.total}."


def _label(start: datetime, period: Period) -> str:
    return start.strftime("%a %d %b") if period.bucket >= timedelta(days=1) else start.strftime("%H:00")


def _axis_max(peak: int) -> int:
    """A round top for the y axis, at or above ``peak``: 1, 2, 5, 10, 20, 50…"""
    top = 1
    while top < peak:
        top = top * 5 // 2 if str(top)[0] == "2" else top * 2
    return top


def chart(rows: Iterable[tuple[datetime, str, int]], period: Period, now: datetime) -> Chart:
    """Runs per bucket stacked by status, with each bar's rectangles in SVG user units.

    ``rows``: (bucket start, status, count), the database's counts; rows outside the buckets are ignored.
    """
    starts = bucket_starts(period, now)
    bars = {start: Bar(start, _label(start, period), dict.fromkeys(STATUSES, 0)) for start in starts}
    for start, status, count in rows:
        bar = bars.get(start)
        if bar is not None and status in bar.counts:
            bar.counts[status] += count
    ordered = [bars[start] for start in starts]
    top = _axis_max(max((bar.total for bar in ordered), default=0))
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / len(ordered)
    every = max(1, len(ordered) // 8)  # about eight labels under the bars, so that they stay readable
    for i, bar in enumerate(ordered):
        bar.x, bar.width = round(LEFT + i * slot + slot * 0.15, 2), round(slot * 0.7, 2)
        bar.show_label = i % every == 0
        y = HEIGHT - BOTTOM
        for status in STATUSES:
            if not bar.counts[status]:
                continue
            height = round(bar.counts[status] / top * inner_h, 2)
            y = round(y - height, 2)
            bar.segments.append({"status": status, "count": bar.counts[status], "y": y, "height": height})
    values = sorted({0, top // 2, top})
    ticks = [{"value": v, "y": round(HEIGHT - BOTTOM - v / top * inner_h, 2)} for v in values]
    for tick in ticks:
        tick["label_y"] = round(tick["y"] + 4, 2)
    totals = {status: sum(bar.counts[status] for bar in ordered) for status in STATUSES}
    return Chart(bars=ordered, ticks=ticks, totals=totals)


def _rate(counts: Mapping[str, int]) -> float | None:
    finished = sum(counts.get(status, 0) for status in FINISHED)
    return counts.get("passed", 0) / finished if finished else None


def pass_rate_drops(rows: Iterable[tuple[str, bool, str, int]]) -> list[dict[str, Any]]:
    """Scenarios whose pass rate (passed of finished runs) is lower in this period than in the previous one, the
    biggest drop first.

    ``rows``: (scenario id, in the current period, status, count). A scenario needs finished runs in both periods.
    """
    counts: dict[tuple[str, bool], dict[str, int]] = {}
    for scenario, current, status, count in rows:
        bucket = counts.setdefault((scenario, bool(current)), {})
        bucket[status] = bucket.get(status, 0) + count
    drops = []
    for scenario in sorted({key[0] for key in counts}):
        now_counts, before_counts = counts.get((scenario, True), {}), counts.get((scenario, False), {})
        now, before = _rate(now_counts), _rate(before_counts)
        if now is None or before is None or now >= before:
            continue
        drops.append(
            {
                "scenario": scenario,
                "now": now,
                "before": before,
                "drop": before - now,
                "now_pct": round(now * 100),
                "before_pct": round(before * 100),
                "failed": now_counts.get("failed", 0) + now_counts.get("errored", 0),
                "finished": sum(now_counts.get(status, 0) for status in FINISHED),
            }
        )
    drops.sort(key=lambda row: (-row["drop"], row["scenario"]))
    return drops[:TOP_ROWS]


@dataclass(frozen=True)
class ClientKey:
    agent: str  # the User-Agent, or "" when the requests carried none
    protocol: str
    source: str

    @property
    def label(self) -> str:
        return self.agent or f"unnamed {self.source} client"


def client_keys(rows: Iterable[tuple[Any, str | None, str, str]]) -> dict[Any, ClientKey]:
    """Each run's client from its requests: (run id, User-Agent, protocol, source); a run's first named agent
    wins."""
    keys: dict[Any, ClientKey] = {}
    for run_id, agent, protocol, source in rows:
        agent = (agent or "").strip()[:120]
        if run_id not in keys or (agent and not keys[run_id].agent):
            keys[run_id] = ClientKey(agent, protocol or "", source or "")
    return keys


def slowest_clients(
    keys: Mapping[Any, ClientKey], responses: Iterable[tuple[Any, float | None, float | None]]
) -> list[dict[str, Any]]:
    """Clients by the median time their responses took (first byte, and whole), the slowest first.

    ``responses``: (run id, ttfb ms, duration ms) of each ``response`` event; runs without a client are skipped.
    """
    by_client: dict[ClientKey, dict[str, Any]] = {}
    for run_id, ttfb, duration in responses:
        key = keys.get(run_id)
        if key is None or duration is None:
            continue
        entry = by_client.setdefault(key, {"ttfb": [], "duration": [], "runs": set()})
        entry["duration"].append(float(duration))
        if ttfb is not None:
            entry["ttfb"].append(float(ttfb))
        entry["runs"].add(run_id)
    rows = [
        {
            "client": key,
            "responses": len(entry["duration"]),
            "runs": len(entry["runs"]),
            "median_ms": median(entry["duration"]),
            "ttfb_ms": median(entry["ttfb"]) if entry["ttfb"] else None,
            "max_ms": max(entry["duration"]),
        }
        for key, entry in by_client.items()
    ]
    rows.sort(key=lambda row: (-row["median_ms"], row["client"].label))
    return rows[:TOP_ROWS]


def most_retried_clients(
    keys: Mapping[Any, ClientKey], events_by_run: Mapping[Any, list[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """Clients by the injected failures they retried (as :func:`runs_app.live.resilience.analyse` reads each run),
    the most first; clients whose runs had no injected failure are left out.

    ``events_by_run``: each run's events (``seq``, ``timestamp``, ``kind``, ``turn``, ``data``).
    """
    by_client: dict[ClientKey, dict[str, int]] = {}
    for run_id, events in events_by_run.items():
        key = keys.get(run_id)
        report = analyse(events)
        if key is None or not report.failures:
            continue
        entry = by_client.setdefault(key, {"failures": 0, "retries": 0, "went_on": 0, "runs": 0})
        entry["runs"] += 1
        entry["failures"] += len(report.failures)
        entry["retries"] += sum(1 for f in report.failures if f.outcome == RETRIED)
        entry["went_on"] += sum(1 for f in report.failures if f.outcome == WENT_ON)
    rows = [{"client": key, **entry} for key, entry in by_client.items()]
    rows.sort(key=lambda row: (-row["retries"], -row["failures"], row["client"].label))
    return rows[:TOP_ROWS]
