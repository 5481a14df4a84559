"""A run's timing as a waterfall, read from its events alone (no Django, no I/O): one row per request on one time
axis, with its time to first byte, each frame's arrival, the pacing gaps between frames, the injected failure it
got, and the client's wait before a retry beside the Retry-After it was given. A socket session's turn (Realtime's,
Live's) is a row too: from the client's message that asked for a response to the server's last message, its status
what came on the socket (``socket_status``), never an HTTP status.

The result is geometry in the SVG's own units (``templates/runs_app/run_waterfall.html`` draws it) plus the same
numbers as text, for the table under it and for screen readers.

Input events are mappings with ``seq``, ``timestamp`` (a datetime or an ISO 8601 string), ``kind``, ``turn`` and
``data``, as recorded (``RunEvent``) or broadcast. A response records ``ttfb_ms`` and ``duration_ms`` from the start
of its request, and ``frame_ms``: when each frame went out, in ms after the first byte
(``runs_app/endpoint/consumer.py``). A response still streaming has no such event yet: its timing so far may be given
by turn (``streaming``: ``ttfb_ms``, ``frame_ms``, ``elapsed_ms`` since its request came, as
``runs_app/endpoint/inflight.py`` keeps them), and its row is drawn as far as it went.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from statistics import median
from typing import Any

from harnessweb.judging.transcript import SOCKET_WIRES
from harnessweb.text import plural
from runs_app.live.resilience import HONOURED, RETRIED, TOO_EARLY, analyse, format_ms

LABEL_W = 130.0  # the rows' labels, left of the plot
PLOT_W = 700.0
RIGHT_W = 170.0  # room for what the last row got, right of its bar
AXIS_H = 24.0
ROW_H = 40.0
WIDTH = LABEL_W + PLOT_W + RIGHT_W
MIN_SPAN_MS = 10.0  # the shortest axis: a run of one instant still gets ticks that read apart
MIN_GAP_MS = 5  # a shorter pause between two frames is no pacing gap, only the time it takes to send one
DOT_PX = 2.0  # frames closer than this on the axis share a dot (an unpaced stream is one dot, not hundreds)
WAIT_CLASS = {HONOURED: "honoured", TOO_EARLY: "early"}  # else "unadvised"
ENDS = ("response", "rejected", "client_disconnected")
# How each socket protocol's client asks for a response (the message its turn's request event stands for).
ASKED_BY = {"realtime": "response.create", "gemini_live": "the client's turn"}


def is_socket(data: Mapping[str, Any]) -> bool:
    """Whether a request event is a socket session's turn (Realtime's, Live's: its recorded protocol is a socket's)."""
    return data.get("protocol") in SOCKET_WIRES


def asked_by(data: Mapping[str, Any]) -> str:
    """The client message a socket turn's request stands for (``response.create`` for Realtime)."""
    return ASKED_BY.get(str(data.get("protocol", "")), "a message")


def socket_status(data: Mapping[str, Any], failure: str) -> tuple[str, str]:
    """What the client got on the socket, for a socket turn's row that ended in a ``response``, and its state."""
    if data.get("dropped"):
        return f"connection cut ({failure or data.get('failure') or 'network error'})", "failed"
    if failure or data.get("failure"):
        return f"error event ({failure or data.get('failure')})", "failed"
    return f"{plural(data.get('chunks') or 0, 'message')} sent", "ok"


@dataclass
class Dot:
    x: float
    first: int  # the frame numbers it stands for, from 1
    last: int
    at_ms: int  # after the first byte
    unit: str = "frame"  # a socket's: "message"

    @property
    def label(self) -> str:
        which = f"{self.unit} {self.first}" if self.first == self.last else f"{self.unit}s {self.first}–{self.last}"
        first = "the first message" if self.unit == "message" else "the first byte"
        return f"{which} at +{format_ms(self.at_ms)} after {first}"


@dataclass
class Gap:
    x1: float
    x2: float
    ms: int

    @property
    def w(self) -> float:
        return _width(self.x1 + 0.5, self.x2 - 0.5)  # apart from the next gap's


@dataclass
class Wait:
    """The client's wait between a failed attempt and its retry, beside the Retry-After it was given."""

    x1: float
    x2: float  # where the retry came
    advised_x2: float | None  # where the advice said it could come
    waited_ms: float
    advised_ms: int | None
    verdict: str  # honoured | too early | no advice
    css: str  # honoured | early | unadvised
    text: str

    @property
    def w(self) -> float:
        return _width(self.x1, self.x2)


@dataclass
class Row:
    index: int  # from 1, in the order the requests came
    turn: int | None
    attempt: int  # of its turn, from 1
    start_ms: float  # from the first request of the run
    end_ms: float
    ttfb_ms: float | None
    duration_ms: float | None
    status: str  # what the client got: "200", "429 rate_limit", "dropped (network_error)", "in flight", ...
    state: str  # ok | failed | rejected | hung-up | in-flight
    failure: str = ""
    retry_after_ms: int | None = None
    frame_ms: list[int] | None = None  # None: not recorded (a response recorded before the harness kept them)
    chunks: int | None = None
    asked: str = ""  # a socket's turn: the client message that asked for it (else an HTTP request)
    y: float = 0.0
    x1: float = 0.0
    x_first_byte: float | None = None
    x2: float = 0.0
    dots: list[Dot] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    wait: Wait | None = None

    @property
    def ttfb_w(self) -> float:
        return _width(self.x1, self.x_first_byte or self.x1)

    @property
    def recv_w(self) -> float:
        return _width(self.x_first_byte or self.x1, self.x2)

    @property
    def bar_w(self) -> float:
        return _width(self.x1, self.x2)

    @property
    def label(self) -> str:
        head = f"Turn {self.turn}" if self.turn is not None else "Run"
        return f"{head} · attempt {self.attempt}" if self.attempt > 1 else head

    @property
    def gap_values(self) -> list[int]:
        frames = self.frame_ms or []
        return [b - a for a, b in zip(frames, frames[1:], strict=False) if b - a >= MIN_GAP_MS]

    @property
    def gaps_text(self) -> str:
        values = self.gap_values
        if not values:
            return "none"
        return f"{len(values)}, median {format_ms(median(values))}, longest {format_ms(max(values))}"

    @property
    def frames_text(self) -> str:
        return "not recorded" if self.frame_ms is None else ", ".join(str(ms) for ms in self.frame_ms)

    @property
    def sentence(self) -> str:
        """The row in words (the bar's title, for screen readers and hovering)."""
        parts = [f"{self.label}: {self.asked or 'request'} at +{format_ms(self.start_ms)}"]
        first, frames = ("message", "messages") if self.asked else ("byte", "frames")  # a socket's are messages
        if self.ttfb_ms is not None:
            parts.append(f"first {first} after {format_ms(self.ttfb_ms)}")
        if self.frame_ms:
            parts.append(
                f"{len(self.frame_ms)} {frames} over {format_ms(self.frame_ms[-1])}, pacing gaps {self.gaps_text}"
            )
        if self.duration_ms is not None:
            parts.append(f"done after {format_ms(self.duration_ms)}")
        parts.append(f"got {self.status}" + (" on the socket" if self.asked else ""))
        return ", ".join(parts) + "."


@dataclass
class Waterfall:
    rows: list[Row]
    span_ms: float
    ticks: list[tuple[float, str]]
    height: float
    width: float = WIDTH
    label_w: float = LABEL_W
    plot_right: float = LABEL_W + PLOT_W

    @property
    def socket(self) -> bool:
        """Every row is a socket session's turn (the chart says responses, not requests)."""
        return bool(self.rows) and all(row.asked for row in self.rows)

    @property
    def summary(self) -> str:
        """The whole chart in one sentence (the SVG's description)."""
        if not self.rows:
            return "No request yet."
        waits = [row.wait for row in self.rows if row.wait is not None]
        failed = sum(1 for row in self.rows if row.state in ("failed", "rejected", "hung-up"))
        what = plural(len(self.rows), "response") + " on a socket" if self.socket else plural(len(self.rows), "request")
        text = f"{what} over {format_ms(self.span_ms)}; {failed} did not get a good answer"
        if waits:
            honoured = sum(1 for w in waits if w.css == "honoured")
            early = sum(1 for w in waits if w.css == "early")
            retries = "1 retry" if len(waits) == 1 else f"{len(waits)} retries"
            text += f"; {retries}: {honoured} waited out the Retry-After, {early} came back too early"
        return text + "."


def _width(x1: float, x2: float) -> float:
    """A bar's width, at least a pixel: what took no time still shows."""
    return round(max(x2 - x1, 1.0), 1)


def _time(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _frames(value: Any) -> list[int] | None:
    if not isinstance(value, list):
        return None
    return [int(v) for v in value if isinstance(v, int | float) and not isinstance(v, bool)]


def nice_step(span_ms: float, ticks: int = 6) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks over the span."""
    raw = max(span_ms, 1.0) / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _row_of(request: Mapping[str, Any], attempt: int, index: int, t0: datetime) -> dict[str, Any]:
    at = (_time(request["timestamp"]) - t0).total_seconds() * 1000
    data = request.get("data") or {}
    asked = asked_by(data) if is_socket(data) else ""
    return {"index": index, "turn": request["turn"], "attempt": attempt, "request_ms": at, "end": None, "asked": asked}


def _collect(rows_in: list[Mapping[str, Any]], t0: datetime) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """The attempts in request order, each with the events that belong to it (by turn), and which row each failure
    event is on (by its seq)."""
    rows: list[dict[str, Any]] = []
    open_by_turn: dict[Any, dict[str, Any]] = {}
    attempts: dict[Any, int] = {}
    failure_rows: dict[int, int] = {}
    for event in rows_in:
        kind, turn, data = event["kind"], event.get("turn"), event.get("data") or {}
        if kind == "request":
            attempts[turn] = attempts.get(turn, 0) + 1
            row = _row_of(event, attempts[turn], len(rows) + 1, t0)
            rows.append(row)
            open_by_turn[turn] = row
            continue
        row = open_by_turn.get(turn)
        if row is None or row["end"] is not None:
            continue
        if kind == "failure_injected":
            row["failure"], row["retry_after_ms"] = str(data.get("status", "")), data.get("retry_after_ms")
            failure_rows[int(event["seq"])] = row["index"]
        elif kind in ENDS:
            row["end"] = (_time(event["timestamp"]) - t0).total_seconds() * 1000
            row["end_kind"], row["data"] = kind, data
    return rows, failure_rows


def _status(row: dict[str, Any], live: bool) -> tuple[str, str]:
    """What the client got, and the row's state."""
    kind, data, failure = row.get("end_kind"), row.get("data") or {}, row.get("failure", "")
    if kind is None:
        frames = (row.get("streaming") or {}).get("frame_ms")
        if live and frames:
            return f"streaming, {len(frames)} frame{'s' if len(frames) != 1 else ''} so far", "in-flight"
        return ("in flight", "in-flight") if live else ("no answer recorded", "unknown")
    if kind == "client_disconnected":
        return f"hung up after {format_ms(_number(data.get('after_ms')))}", "hung-up"
    if kind == "rejected":
        return f"{data.get('status', '')} rejected".strip(), "rejected"
    if row.get("asked"):
        return socket_status(data, failure)
    if data.get("dropped"):
        return f"dropped ({failure or 'network error'})", "failed"
    status = str(data.get("status") or "")
    if failure or data.get("failure"):
        return f"{status} {failure or data.get('failure')}".strip(), "failed"
    return status or "answered", "ok"


def build(
    events: Iterable[Mapping[str, Any]], *, live: bool = False, streaming: Mapping[Any, Mapping[str, Any]] | None = None
) -> Waterfall:
    """The waterfall of a run's events. ``live``: requests without an end yet are drawn as in flight up to the
    latest event (else they are drawn as a request alone), a turn's latest one with the timing ``streaming`` gives
    for that turn (its first byte and frames so far, up to now)."""
    ordered = sorted(events, key=lambda e: int(e["seq"]))
    requests = [e for e in ordered if e["kind"] == "request"]
    if not requests:
        return Waterfall(rows=[], span_ms=0.0, ticks=[], height=AXIS_H)
    t0 = _time(requests[0]["timestamp"])
    latest = max((_time(e["timestamp"]) - t0).total_seconds() * 1000 for e in ordered)
    collected, failure_rows = _collect(ordered, t0)
    if live and streaming:
        latest_of_turn = {raw["turn"]: raw for raw in collected}
        for turn, timing in streaming.items():
            raw = latest_of_turn.get(turn)
            if raw is not None and raw["end"] is None:
                raw["streaming"] = timing
    rows: list[Row] = []
    for raw in collected:
        data = raw.get("data") or raw.get("streaming") or {}
        duration = _number(data.get("duration_ms"))
        end = raw["end"]
        # The response is recorded as its last frame goes out, ``duration_ms`` after its request began (which is a
        # little before the request event: the body was read first).
        start = end - duration if end is not None and duration is not None else raw["request_ms"]
        if end is None:
            elapsed = _number(data.get("elapsed_ms"))  # a response streaming: up to now
            end = max(latest, start + (elapsed or 0.0)) if live else start
        status, state = _status(raw, live)
        if state == "hung-up":
            duration = _number(data.get("after_ms"))
        retry_after = raw.get("retry_after_ms")
        rows.append(
            Row(
                index=raw["index"],
                turn=raw["turn"],
                attempt=raw["attempt"],
                start_ms=start,
                end_ms=max(end, start),
                ttfb_ms=_number(data.get("ttfb_ms")),
                duration_ms=duration,
                status=status,
                state=state,
                failure=raw.get("failure", ""),
                retry_after_ms=int(retry_after) if isinstance(retry_after, int | float) else None,
                frame_ms=_frames(data.get("frame_ms")),
                chunks=data.get("chunks") if isinstance(data.get("chunks"), int) else None,
                asked=raw["asked"],
            )
        )
    # The axis begins with the first request's start, which may be a little before its event (see above).
    shift = min(row.start_ms for row in rows)
    for row in rows:
        row.start_ms, row.end_ms = round(row.start_ms - shift, 3), round(row.end_ms - shift, 3)
    waits = _waits(ordered, rows, failure_rows, live)
    ends = [r.end_ms for r in rows] + [began + max(o.waited_ms, advised or 0) for o, began, advised in waits.values()]
    span = max([MIN_SPAN_MS, *ends])
    step = nice_step(span)
    span = max(step, math.ceil(span / step) * step)
    scale = PLOT_W / span

    def x(ms: float) -> float:
        return round(LABEL_W + ms * scale, 1)

    for i, row in enumerate(rows):
        row.y = AXIS_H + i * ROW_H
        row.x1, row.x2 = x(row.start_ms), x(row.end_ms)
        if row.ttfb_ms is not None:
            first_byte = row.start_ms + row.ttfb_ms
            row.x_first_byte = x(first_byte)
            row.dots, row.gaps = _dots(row.frame_ms or [], first_byte, x, "message" if row.asked else "frame")
        if row.index in waits:
            row.wait = _wait(waits[row.index], x)
    ticks = [(x(i * step), format_ms(i * step)) for i in range(int(round(span / step)) + 1)]
    return Waterfall(rows=rows, span_ms=span, ticks=ticks, height=AXIS_H + len(rows) * ROW_H + 6)


def _dots(frames: list[int], first_byte: float, x: Any, unit: str = "frame") -> tuple[list[Dot], list[Gap]]:
    dots: list[Dot] = []
    for number, at in enumerate(frames, start=1):
        px = x(first_byte + at)
        if dots and px - dots[-1].x < DOT_PX:
            dots[-1].last = number
            continue
        dots.append(Dot(x=px, first=number, last=number, at_ms=at, unit=unit))
    gaps = [
        Gap(x1=x(first_byte + a), x2=x(first_byte + b), ms=b - a)
        for a, b in zip(frames, frames[1:], strict=False)
        if b - a >= MIN_GAP_MS
    ]
    return dots, gaps


def _waits(
    ordered: list[Mapping[str, Any]], rows: list[Row], failure_rows: dict[int, int], live: bool
) -> dict[int, tuple[Any, float, int | None]]:
    """The retried failures (as the resilience analysis reads them), by the row of their retry: (the outcome, when
    the wait began, the advised wait)."""
    by_index = {row.index: row for row in rows}
    found = {}
    for outcome in analyse(ordered, live=live).failures:
        failed = by_index.get(failure_rows.get(outcome.seq, -1))
        if outcome.outcome != RETRIED or outcome.waited_ms is None or failed is None:
            continue
        retry = next((r for r in rows if r.index > failed.index and r.turn == failed.turn), None)
        if retry is not None:
            found[retry.index] = (outcome, failed.end_ms, outcome.advised_ms)
    return found


def _wait(found: tuple[Any, float, int | None], x: Any) -> Wait:
    outcome, began, advised = found
    css = WAIT_CLASS.get(outcome.verdict or "", "unadvised")
    if css == "honoured":
        text = f"waited {format_ms(outcome.waited_ms)} for a Retry-After of {format_ms(advised)}"
    elif css == "early":
        text = f"came back after {format_ms(outcome.waited_ms)}, Retry-After {format_ms(advised)}: too early"
    else:
        text = f"waited {format_ms(outcome.waited_ms)} (no Retry-After)"
    return Wait(
        x1=x(began),
        x2=x(began + outcome.waited_ms),
        advised_x2=x(began + advised) if advised is not None else None,
        waited_ms=outcome.waited_ms,
        advised_ms=advised,
        verdict=outcome.verdict or "",
        css=css,
        text=text,
    )
