"""The live pages' WebSocket consumers: new rows on the runs list, a run page's turns growing as they happen, and
the overview's widgets.

They render through :mod:`runs_app.live.fragments` (the same partials as the pages) and read the database only in
batches, so a burst of events costs a few queries rather than one each.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from runs_app.endpoint import inflight
from runs_app.endpoint.recorder import RUNS_GROUP, group_name
from runs_app.judging import batches
from runs_app.live import fragments
from runs_app.overview import presenters as overview

log = logging.getLogger(__name__)

# An application close code: the handshake is refused (HTTP 403) for a socket without a logged-in user.
CLOSE_UNAUTHENTICATED = 4403
# The ends of a response (or of an attempt at one): the next chunk for that turn starts a new stream.
ATTEMPT_ENDS = frozenset({"response", "rejected", "client_disconnected"})
# The events that move a run's timing waterfall (a row begins, fails, ends): others leave it as it is.
TIMING_KINDS = ATTEMPT_ENDS | {"request", "failure_injected"}
# While a response streams, its waterfall row (first byte, frames so far) is sent again at most this often.
STREAMING_TIMING_S = 0.5

render_run_rows = database_sync_to_async(fragments.render_run_rows)
render_run_updates = database_sync_to_async(fragments.render_run_updates)
render_waterfall = database_sync_to_async(fragments.render_waterfall)
run_turns_since = database_sync_to_async(fragments.run_turns_since)
render_judge_progress = database_sync_to_async(batches.render_progress)
render_overview = database_sync_to_async(overview.render_widgets)


class LiveConsumer(AsyncWebsocketConsumer):
    """A live page's socket: logged-in users only; what changed is rendered in batches, at most one every
    ``batch_s``, so a burst of runs or events costs a few queries rather than one each."""

    batch_s = 0.05

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.live_groups: list[str] = []
        self._batch: asyncio.Task[None] | None = None
        await self.join()
        await self.accept()
        await self.catch_up()

    async def join(self) -> None:
        raise NotImplementedError

    async def catch_up(self) -> None:
        """Anything the page missed between its rendering and this socket."""

    async def send_batch(self) -> None:
        raise NotImplementedError

    def schedule(self) -> None:
        if self._batch is None or self._batch.done():
            self._batch = asyncio.get_running_loop().create_task(self._run_batch())

    async def _run_batch(self) -> None:
        await asyncio.sleep(self.batch_s)
        try:
            await self.send_batch()
        except Exception:  # a failed render must not kill the socket: the next change renders again
            log.exception("Could not render a live update")

    async def disconnect(self, code: int) -> None:
        batch = getattr(self, "_batch", None)
        if batch is not None:
            batch.cancel()
        for group in getattr(self, "live_groups", []):
            await self.channel_layer.group_discard(group, self.channel_name)


class RunsListConsumer(LiveConsumer):
    """``/ws/runs/?<filters>&page=&since=``: new runs on top of the list and status changes in place, as rows."""

    batch_s = 0.1

    async def join(self) -> None:
        self.query = self.scope.get("query_string", b"").decode("latin-1")
        self.changed: set[str] = set()
        self.live_groups = [RUNS_GROUP]
        await self.channel_layer.group_add(RUNS_GROUP, self.channel_name)

    async def runs_changed(self, message: dict[str, Any]) -> None:
        """The runs a batch of the recorder's wrote (``{"runs": [{"run", "status"}, …]}``)."""
        self.changed.update(change["run"] for change in message.get("runs") or ())
        self.schedule()

    async def send_batch(self) -> None:
        run_ids, self.changed = self.changed, set()
        html = await render_run_rows(run_ids, self.query)
        if html:
            await self.send(text_data=html)


def _turn_number(value: Any) -> int:
    return value if isinstance(value, int) else fragments.NO_TURN


class RunTimelineConsumer(LiveConsumer):
    """``/ws/runs/<uuid>/?after=<seq>``: a run page's timeline. Events re-render the parts of their turn (and the
    header and resilience summary) from the database; chunks are appended to the stream viewer as they come.

    A page opened in the middle of a response gets what it streamed so far when its socket connects: the socket
    joins the run's group first, then reads the response's pieces kept by ``runs_app.endpoint.inflight``. Each chunk
    names its attempt and the number of its last piece, so the socket sends only the pieces after the ones it has
    sent (a chunk both in the snapshot and in the group's messages is not shown twice, and none falls between).
    """

    batch_s = 0.03

    async def join(self) -> None:
        self.run_id = str(self.scope["url_route"]["kwargs"]["run_id"])
        after = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("after", ["0"])[0]
        self.after = int(after) if after.isdigit() else 0
        self.cards: set[int] = set()  # turns the page has a card for
        self.streaming: set[int] = set()  # turns receiving chunks since their last attempt ended
        self.blocks: set[tuple[int, int]] = set()  # (turn, block) containers in the stream viewers
        self.shown: dict[int, tuple[str, int]] = {}  # turn → (its attempt, the number of the last piece sent)
        self.ended: set[str] = set()  # attempts whose end was recorded: the recorded answer replaced their chunks
        self.timing_at = 0.0  # when the waterfall was last sent again for a stream going on (the loop's clock)
        self.dirty: set[int] = set()
        self.timing = False  # the waterfall is due to be sent again
        self.live_groups = [group_name(self.run_id)]
        await self.channel_layer.group_add(self.live_groups[0], self.channel_name)

    async def catch_up(self) -> None:
        # Read after joining the group: a piece streamed since is both here and in a message to come (see above).
        streams = inflight.snapshot(self.run_id)
        shown, changed = await run_turns_since(self.run_id, self.after)
        self.cards |= shown
        html = "".join(self._chunk_html(_turn_number(s["turn"]), s["pieces"], s["attempt"], s["seq"]) for s in streams)
        if html:
            await self.send(text_data=html)
        if changed:
            self.dirty |= changed
            self.timing = True
            self.schedule()

    async def run_event(self, message: dict[str, Any]) -> None:
        turn = _turn_number(message.get("turn"))
        if message.get("kind") in ATTEMPT_ENDS:
            self.streaming.discard(turn)
            if turn in self.shown:
                self.ended.add(self.shown[turn][0])
        self.timing = self.timing or message.get("kind") in TIMING_KINDS
        self.dirty.add(turn)
        self.schedule()

    async def run_events(self, message: dict[str, Any]) -> None:
        """A batch's events of this run at once (what the recorder sends): one render for all of them."""
        for event in message.get("events") or ():
            await self.run_event(event)

    async def run_chunk(self, message: dict[str, Any]) -> None:
        # Rendered at once, without the database: this is what makes the text visibly grow.
        turn = _turn_number(message.get("turn"))
        html = self._chunk_html(turn, message.get("pieces") or [], message.get("attempt"), message.get("seq"))
        if html:
            await self.send(text_data=html)
        now = asyncio.get_running_loop().time()
        # The waterfall's row grows with the stream (drawn from the timing this process keeps of it).
        if now - self.timing_at >= STREAMING_TIMING_S and inflight.streaming(self.run_id):
            self.timing_at, self.timing = now, True
            self.schedule()

    def _chunk_html(self, turn: int, pieces: list[list[Any]], attempt: Any = None, seq: Any = None) -> str:
        """A turn's stream viewer extended by the pieces it has not shown yet (reset first for a new attempt)."""
        if attempt in self.ended:
            return ""  # the attempt's recorded answer is shown whole already
        numbered = isinstance(attempt, str) and isinstance(seq, int)
        known = self.shown.get(turn)
        if numbered and known is not None and known[0] == attempt:
            pieces = pieces[max(0, known[1] - (seq - len(pieces))) :]  # those up to known[1] were sent
            if not pieces:
                return ""
            new = False
        else:
            # A new attempt (by its name; a chunk that names none: since the last attempt of the turn ended): its
            # stream replaces the previous one's.
            new = numbered or turn not in self.streaming
        if numbered:
            self.shown[turn] = (attempt, seq)
        html = self._new_cards([turn])
        if new:
            self.streaming.add(turn)
            self.blocks = {key for key in self.blocks if key[0] != turn}
            html += fragments.render_stream_reset(turn)
        return html + fragments.render_pieces(turn, pieces, self.blocks)

    def _new_cards(self, turns: Iterable[int]) -> str:
        new = sorted(set(turns) - self.cards)
        self.cards.update(new)
        return "".join(fragments.render_turn_card(number) for number in new)

    async def send_batch(self) -> None:
        turns, self.dirty = self.dirty, set()
        timing, self.timing = self.timing, False
        # The cards first, in their own frame: chunks handled while the database is read must find them.
        cards = self._new_cards(turns)
        if cards:
            await self.send(text_data=cards)
        if turns:
            html = await render_run_updates(self.run_id, turns, frozenset(self.streaming), timing=timing)
        else:  # only the waterfall of a stream going on
            html = await render_waterfall(self.run_id) if timing else ""
        if html:
            await self.send(text_data=html)


class JudgeBatchConsumer(LiveConsumer):
    """``/ws/judge/<id>/``: a judge batch's progress (n of m judged, the verdicts so far), re-rendered from its row
    whenever the batch's thread says it moved."""

    batch_s = 0.05

    async def join(self) -> None:
        self.batch_id = int(self.scope["url_route"]["kwargs"]["batch_id"])
        self.live_groups = [batches.group_name(self.batch_id)]
        await self.channel_layer.group_add(self.live_groups[0], self.channel_name)

    async def catch_up(self) -> None:
        self.schedule()  # whatever was judged between the page's rendering and this socket

    async def judge_progress(self, message: dict[str, Any]) -> None:
        self.schedule()

    async def send_batch(self) -> None:
        html = await render_judge_progress(self.batch_id)
        if html:
            await self.send(text_data=html)


class OverviewConsumer(LiveConsumer):
    """``/ws/overview/?period=``: the overview's widgets re-rendered (one out-of-band swap) when runs start or change.
    Its figures aggregate the whole period, so changes are gathered for half a second before each render."""

    batch_s = 0.5

    async def join(self) -> None:
        self.period = parse_qs(self.scope.get("query_string", b"").decode("latin-1")).get("period", [""])[0]
        self.staff = bool(getattr(self.scope["user"], "is_staff", False))
        headers = dict(self.scope.get("headers") or [])
        scheme = "https" if self.scope.get("scheme") == "wss" else "http"
        self.base_url = f"{scheme}://{headers.get(b'host', b'localhost').decode('latin-1')}"
        self.pending = False
        self.live_groups = [RUNS_GROUP]
        await self.channel_layer.group_add(RUNS_GROUP, self.channel_name)

    async def catch_up(self) -> None:
        await self.run_changed({})  # runs that changed between the page's rendering and this socket

    async def run_changed(self, message: dict[str, Any]) -> None:
        self.pending = True
        self.schedule()

    runs_changed = run_changed  # a batch's runs at once: one more render all the same

    async def send_batch(self) -> None:
        # A change that arrives while the figures are read would find this batch still running (schedule() skips
        # it), so render again until none came in meanwhile: the last render always follows the last change.
        while self.pending:
            self.pending = False
            await self.send(text_data=await render_overview(self.period, staff=self.staff, base_url=self.base_url))
