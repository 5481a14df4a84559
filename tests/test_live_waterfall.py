"""A run's timing drawn: the waterfall's geometry from events (pure), the run page and its socket, and the frame
times the endpoint records."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from typing import Any

import openai
import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from runs_app.endpoint.recorder import event_payload, group_name
from runs_app.live.waterfall import AXIS_H, LABEL_W, PLOT_W, ROW_H, build, nice_step
from tests.conftest import make_run, make_scenario, recorded_run
from tests.test_live_consumers import close, open_socket

START = dt.datetime(2025, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def make_events(*steps: tuple[float, str, int | None, dict[str, Any]]) -> list[dict[str, Any]]:
    """Events as recorded, from (ms after the start, kind, turn, data), numbered in order."""
    return [
        {"seq": i, "timestamp": START + dt.timedelta(milliseconds=at), "kind": kind, "turn": turn, "data": data}
        for i, (at, kind, turn, data) in enumerate(steps, start=1)
    ]


def make_rate_limited(at: float, turn: int = 1, retry_after_ms: int = 300) -> list[tuple]:
    """A request answered by an injected 429 that advised ``retry_after_ms``, 4 ms after it."""
    failure = {"status": "rate_limit", "message": "slow down", "attempt": 1, "of": 1, "retryable": True}
    response = {"status": 429, "failure": "rate_limit", "ttfb_ms": 3.0, "duration_ms": 4.0, "frame_ms": [0]}
    return [
        (at, "request", turn, {"body": {}}),
        (at + 1, "failure_injected", turn, {**failure, "retry_after_ms": retry_after_ms}),
        (at + 4, "response", turn, response),
    ]


def make_streamed(at: float, turn: int = 1, frames: list[int] | None = None, ttfb: float = 10.0) -> list[tuple]:
    """A request answered by a stream whose frames went out ``frames`` ms after its first byte."""
    frames = frames if frames is not None else [0, 150, 300, 450]
    duration = ttfb + frames[-1]
    response = {"status": 200, "text": "ok", "chunks": 2, "ttfb_ms": ttfb, "duration_ms": duration, "frame_ms": frames}
    return [(at, "request", turn, {"body": {}}), (at + duration, "response", turn, response)]


def x_of(ms: float, span: float) -> float:
    return round(LABEL_W + ms * PLOT_W / span, 1)


# -- the geometry --------------------------------------------------------------------------------------------------


def test_it_draws_one_row_per_request_on_one_axis():
    chart = build(make_events(*make_streamed(0, 1), *make_streamed(600, 2, [0, 50])))
    assert [(r.index, r.turn, r.attempt, r.label) for r in chart.rows] == [(1, 1, 1, "Turn 1"), (2, 2, 1, "Turn 2")]
    assert [r.y for r in chart.rows] == [AXIS_H, AXIS_H + ROW_H]
    # The axis runs to a round number past the last end (660 ms): 200 ms ticks up to 800 ms.
    assert chart.span_ms == 800
    assert [label for _, label in chart.ticks] == ["0 ms", "200 ms", "400 ms", "600 ms", "800 ms"]
    assert chart.ticks[0][0] == LABEL_W and chart.ticks[-1][0] == LABEL_W + PLOT_W
    first, second = chart.rows
    assert (first.start_ms, first.end_ms, first.status, first.state) == (0, 460, "200", "ok")
    assert (second.x1, second.x2) == (x_of(600, 800), x_of(660, 800))


def test_it_starts_a_request_when_its_response_says_it_began():
    # The request event comes after the body was read: the response's duration_ms says when the request began.
    events = make_events((0, "request", 1, {}), (50, "response", 1, {"status": 200, "ttfb_ms": 8, "duration_ms": 52}))
    [row] = build(events).rows
    assert (row.start_ms, row.end_ms, row.x1) == (0, 52, LABEL_W)


def test_it_puts_the_first_byte_and_every_frame_where_they_came():
    [row] = build(make_events(*make_streamed(0, 1, [0, 150, 300, 450], ttfb=40))).rows
    span = 500
    assert row.x_first_byte == x_of(40, span)
    assert [d.x for d in row.dots] == [x_of(40 + ms, span) for ms in (0, 150, 300, 450)]
    assert row.dots[2].label == "frame 3 at +300 ms after the first byte"
    assert row.ttfb_w == round(x_of(40, span) - LABEL_W, 1)
    assert "first byte after 40 ms, 4 frames over 450 ms" in row.sentence


def test_it_marks_the_pacing_gaps_between_frames():
    [row] = build(make_events(*make_streamed(0, 1, [0, 1, 150, 152, 400]))).rows
    assert [g.ms for g in row.gaps] == [149, 248]  # 1 and 2 ms apart is sending, not pacing
    assert row.gaps_text == "2, median 198 ms, longest 248 ms"  # the median 198.5 ms, as people read it
    assert row.frames_text == "0, 1, 150, 152, 400"


def test_it_gathers_frames_that_share_a_pixel_into_one_dot():
    [row] = build(make_events(*make_streamed(0, 1, [0] * 300 + [200]))).rows
    assert [(d.first, d.last) for d in row.dots] == [(1, 300), (301, 301)]
    assert row.dots[0].label == "frames 1–300 at +0 ms after the first byte"


def test_it_colours_a_retry_that_waited_out_the_retry_after_green():
    chart = build(make_events(*make_rate_limited(0, retry_after_ms=300), *make_streamed(310)))
    failed, retry = chart.rows
    assert (failed.state, failed.status, failed.failure) == ("failed", "429 rate_limit", "rate_limit")
    assert (retry.attempt, retry.label) == (2, "Turn 1 · attempt 2")
    wait = retry.wait
    assert failed.wait is None and wait is not None
    assert (wait.css, wait.verdict, wait.waited_ms, wait.advised_ms) == ("honoured", "honoured", 306.0, 300)
    span = chart.span_ms
    assert (wait.x1, wait.x2, wait.advised_x2) == (x_of(4, span), x_of(310, span), x_of(304, span))
    assert wait.text == "waited 306 ms for a Retry-After of 300 ms"
    assert "1 retry: 1 waited out the Retry-After, 0 came back too early" in chart.summary


def test_it_colours_a_retry_that_came_back_early_red():
    chart = build(make_events(*make_rate_limited(0, retry_after_ms=1000), *make_streamed(104)))
    wait = chart.rows[1].wait
    assert (wait.css, wait.verdict, wait.waited_ms) == ("early", "too early", 100.0)
    assert wait.x2 < wait.advised_x2  # the retry came before the advice allowed
    assert wait.text == "came back after 100 ms, Retry-After 1 s: too early"
    assert chart.span_ms >= 1004  # the advice is on the axis even when the retry came first


def test_it_draws_a_retry_without_advice_grey():
    events = make_events(
        (0, "request", 1, {}),
        (1, "failure_injected", 1, {"status": "network_error", "attempt": 1, "of": 1, "retry_after_ms": 500}),
        (20, "response", 1, {"status": None, "failure": "network_error", "dropped": True, "duration_ms": 20.0}),
        *make_streamed(120),
    )
    failed, retry = build(events).rows
    assert failed.status == "dropped (network_error)"
    assert retry.wait.css == "unadvised" and retry.wait.advised_x2 is None


def test_it_draws_requests_still_waiting_for_an_answer_as_in_flight_when_live():
    events = make_events(*make_streamed(0, 1), (500, "request", 2, {}), (520, "match", 2, {}))
    live = build(events, live=True).rows[1]
    assert (live.state, live.status, live.start_ms, live.end_ms) == ("in-flight", "in flight", 500, 520)
    finished = build(events).rows[1]
    assert (finished.state, finished.status) == ("unknown", "no answer recorded")


def test_it_reads_hang_ups_rejections_and_responses_recorded_without_frame_times():
    events = make_events(
        (0, "request", 1, {}),
        (300, "client_disconnected", 1, {"after_ms": 300.0}),
        (400, "request", 2, {}),
        (401, "rejected", 2, {"status": 404, "message": "nothing matched"}),
        (500, "request", 3, {}),
        (540, "response", 3, {"status": 200, "ttfb_ms": 5.0, "duration_ms": 40.0, "chunks": 3}),
    )
    hung_up, rejected, old = build(events).rows
    assert (hung_up.status, hung_up.state, hung_up.end_ms) == ("hung up after 300 ms", "hung-up", 300)
    assert (rejected.status, rejected.state) == ("404 rejected", "rejected")
    assert old.frame_ms is None and old.dots == [] and old.frames_text == "not recorded"


def test_it_is_empty_without_requests_and_survives_one_instant():
    assert build([]).rows == [] and build([]).summary == "No request yet."
    [row] = build(make_events((0, "request", 1, {}), (0, "response", 1, {"status": 200}))).rows
    assert row.bar_w == 1.0  # what took no time still shows
    assert [label for _, label in build(make_events((0, "request", 1, {}))).ticks] == [
        f"{ms} ms" for ms in range(0, 11, 2)
    ]


def test_it_picks_round_tick_steps():
    assert [nice_step(span) for span in (0, 7, 460, 1000, 2600)] == [0.2, 2, 100, 200, 500]


# -- the page ------------------------------------------------------------------------------------------------------


def store_events(run: Any, events: list[dict[str, Any]]) -> None:
    from runs_app.models import RunEvent

    for event in events:
        RunEvent.objects.create(run=run, **event)


@pytest.mark.django_db
def test_it_draws_the_waterfall_on_the_run_page_with_its_table(admin_client):
    run = make_run(scenario_id="<script>alert(1)</script>", status="passed")
    store_events(run, make_events(*make_rate_limited(0), *make_streamed(310)))
    html = admin_client.get(f"/runs/{run.id}/").content.decode()
    section = html[html.index('<section id="run-waterfall"') :]
    assert '<svg viewBox="0 0 1000.0 110.0"' in section and 'role="img"' in section
    assert '<title id="waterfall-title">Timing of run &lt;script&gt;alert(1)&lt;/script&gt;</title>' in section
    assert "<script>alert(1)" not in html
    assert '<g class="wf-wait honoured" data-verdict="honoured">' in section
    assert "waited 306 ms for a Retry-After of 300 ms" in section
    assert len(re.findall(r'<circle class="wf-dot"', section)) == 5  # the 429's one frame and the stream's four
    assert "<summary>The same as a table</summary>" in section
    assert "<code>0, 150, 300, 450</code>" in section


@pytest.mark.django_db
def test_it_says_so_before_the_first_request(admin_client):
    html = admin_client.get(f"/runs/{uuid.uuid4()}/?live=1").content.decode()
    assert "No request yet: each one appears here as it arrives." in html


@pytest.mark.django_db
def test_it_does_not_draw_the_waterfall_for_anonymous_visitors(client):
    run = make_run()
    store_events(run, make_events(*make_streamed(0)))
    response = client.get(f"/runs/{run.id}/")
    assert response.status_code == 302 and "run-waterfall" not in response.content.decode()


# -- the socket ----------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_it_sends_the_waterfall_again_when_an_answer_comes_and_not_for_other_events():
    run = await sync_to_async(make_run)()
    steps = make_events(*make_rate_limited(0))
    await sync_to_async(store_events)(run, steps[:1])
    communicator = await open_socket(f"/ws/runs/{run.id}/?after=1")
    layer = get_channel_layer()
    match = {**steps[1], "kind": "match", "data": {"mode": "scenario"}}
    from runs_app.models import RunEvent

    event = await sync_to_async(RunEvent.objects.create)(run=run, **match)
    await layer.group_send(group_name(run.id), {"type": "run.events", "events": [event_payload(event)]})
    assert 'id="run-waterfall"' not in await communicator.receive_from(timeout=3)
    event = await sync_to_async(RunEvent.objects.create)(run=run, **{**steps[2], "seq": 3})
    await layer.group_send(group_name(run.id), {"type": "run.events", "events": [event_payload(event)]})
    html = await communicator.receive_from(timeout=3)
    assert '<section id="run-waterfall" class="card waterfall" hx-swap-oob="true">' in html
    assert "429" in html[html.index('id="run-waterfall"') :]
    await close(communicator)


# -- what the endpoint records ---------------------------------------------------------------------------------


def test_it_records_when_each_frame_went_out(paced_server, transactional_db):
    make_scenario(
        "frame-times",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": "one two three four"}}],
        pacing={"chunk_words": 1, "interval_ms": 60},
    )
    client = openai.OpenAI(base_url=f"{paced_server.url}/v1", api_key=f"sk-{uuid.uuid4().hex}", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "frame-times"}], stream=True
    )
    list(raw.parse())
    run = recorded_run(raw.headers["x-harness-run"], status="passed", events=4)
    summary = run.events.get(kind="response").data
    frames = summary["frame_ms"]
    assert frames[0] == 0 and frames == sorted(frames) and all(isinstance(ms, int) for ms in frames)
    gaps = [b - a for a, b in zip(frames, frames[1:], strict=False)]
    assert len(frames) > summary["chunks"] >= 4  # every frame: the role, the words, the end, [DONE]
    assert all(gap >= 55 for gap in gaps)  # paced 60 ms apart (the timer's slack is a few ms at most)
    assert frames[-1] <= summary["duration_ms"] - summary["ttfb_ms"] + 1
