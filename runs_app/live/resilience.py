"""How a client coped with the failures a run injected, read from the run's events alone (no Django, no I/O).

For each injected failure: did the client retry the same turn, and after how long compared with the Retry-After it
was given; did successive retries of a turn back off; did it give up; or did it go on to a later turn as if the
failed answer had been a good one (the dangerous case after a dropped or malformed stream).

Input events are mappings with ``seq``, ``timestamp`` (a datetime or an ISO 8601 string), ``kind``, ``turn`` and
``data``, as recorded (``RunEvent``) or broadcast (``run.events``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from harnessweb.engine.exchange import ALWAYS
from harnessweb.text import plural

# Failures whose HTTP response carries Retry-After / retry-after-ms when the scenario gives a time. A dropped
# connection or a malformed 200 carries no advice, whatever the scenario says.
ADVISING_STATUSES = frozenset(
    {"rate_limit", "model_error", "timeout", "auth_error", "permission_error", "not_found", "bad_request",
     "request_too_large", "server_error", "bad_gateway", "unavailable", "overloaded"}
)  # fmt: skip
# Both ends of a measured wait are taken server-side a little after the client acts (after the last byte is written,
# after the retry's body is read), so a client that waits exactly as advised can measure a few ms short.
TOLERANCE_MS = 20.0
# Successive waits count as backing off only when each is clearly longer than the one before (beyond timing noise).
BACKOFF_GROWTH = 1.05
# Failures after which carrying on means the client took a broken answer for a good one.
BROKEN_STREAM_STATUSES = frozenset(
    {"network_error", "invalid_response", "wrong_content_type", "missing_content_type", "invalid_json_in_stream",
     "invalid_utf8", "truncated_stream"}
)  # fmt: skip
# A slow first byte is followed by the good answer: a client that sat through it and went on did right.
SLOW_FIRST_BYTE = "slow_first_byte"
# How each failure that is no provider error reads (the others read as their kind and HTTP status).
_DESCRIBED = {
    "network_error": "a dropped connection (network_error)",
    "invalid_response": "a malformed response (invalid_response)",
    "wrong_content_type": "an answer under the wrong content type (wrong_content_type)",
    "missing_content_type": "an answer without a content type (missing_content_type)",
    "invalid_json_in_stream": "a stream with a data line that is not JSON (invalid_json_in_stream)",
    "invalid_utf8": "an answer with bytes that are not UTF-8 (invalid_utf8)",
    "truncated_stream": "a stream that ended before its terminator (truncated_stream)",
    "slow_first_byte": "a slow first byte (slow_first_byte)",
}

HONOURED = "honoured"
TOO_EARLY = "too early"
NO_ADVICE = "no advice"

WAITED_OUT = "waited it out"
RETRIED = "retried"
WENT_ON = "went on"
GAVE_UP = "gave up"
WAITING = "waiting"


@dataclass(frozen=True)
class FailureOutcome:
    """One injected failure and what the client did next."""

    seq: int
    turn: int | None
    status: str  # the failure_status: rate_limit, model_error, timeout, network_error, invalid_response
    attempt: int
    of: int
    retryable: bool
    http_status: int | None  # what the client got (None: dropped, or it hung up first)
    received: bool  # the client received the failure (False: it disconnected before, e.g. during a timeout hold)
    advised_ms: int | None  # the retry-after-ms the client was given, if any
    outcome: str  # retried | went on | gave up | waiting | waited it out (a slow first byte, then the answer)
    waited_ms: float | None  # from the end of the failed response to the retry
    verdict: str | None  # honoured | too early | no advice (only when retried)
    next_turn: int | None  # the turn of the next request, when it went on
    sentence: str = ""
    chaos_seed: int | None = None  # chaos by probability chose it (``harnessweb.engine.chaos``): the seed that did

    @property
    def tried(self) -> str:
        """Which failure of its turn this was: ``1 of 3``, ``1 (it always fails)``, or ``chaos (seed 7)`` (chaos
        fails a request by chance, so its count of one says nothing)."""
        if self.chaos_seed is not None:
            return f"chaos (seed {self.chaos_seed})"
        return f"{self.attempt} of {self.of}" if self.of < ALWAYS else f"{self.attempt} (it always fails)"

    @property
    def flagged(self) -> bool:
        """The client carried on to a later turn without a good answer for this one."""
        return self.outcome == WENT_ON


@dataclass(frozen=True)
class TurnBackoff:
    """The waits between successive retries of one turn."""

    turn: int | None
    waits_ms: tuple[float, ...]
    backed_off: bool
    followed_advice: bool
    sentence: str = ""


@dataclass(frozen=True)
class Resilience:
    failures: tuple[FailureOutcome, ...] = ()
    backoff: tuple[TurnBackoff, ...] = ()
    summary: tuple[str, ...] = field(default_factory=tuple)

    @property
    def flagged(self) -> tuple[FailureOutcome, ...]:
        return tuple(f for f in self.failures if f.flagged)

    @property
    def has_failures(self) -> bool:
        return bool(self.failures)


def _time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def _ms(later: datetime, earlier: datetime) -> float:
    return round((later - earlier).total_seconds() * 1000, 1)


def format_ms(value: float | None) -> str:
    """A duration for people: ``850 ms``, ``1.25 s``."""
    if value is None:
        return "—"
    if value < 1000:
        return f"{value:.0f} ms"
    return f"{value / 1000:.2f}".rstrip("0").rstrip(".") + " s"


def _turn_label(turn: int | None) -> str:
    return f"turn {turn}" if turn is not None else "an unknown turn"


def describe(status: str) -> str:
    """How a failure that is no provider error reads (``""`` for a provider error: its HTTP status says it)."""
    return _DESCRIBED.get(status, "")


def _what_failed(status: str, http_status: int | None, received: bool) -> str:
    if status in _DESCRIBED and (received or status != SLOW_FIRST_BYTE):
        return _DESCRIBED[status]
    if not received:
        return f"a {status} it hung up on before the answer came"
    return f"{status} (HTTP {http_status})" if http_status else status


def _failure_sentence(f: FailureOutcome) -> str:
    count = f.tried if f.chaos_seed is not None else f"failure {f.tried}"
    head = f"{_turn_label(f.turn).capitalize()}, {count}, "
    what = _what_failed(f.status, f.http_status, f.received)
    if f.outcome == WAITED_OUT:
        return f"{head}{what}: the client waited for the answer that followed."
    if f.outcome == WENT_ON:
        carried = "as if nothing happened" if f.status in BROKEN_STREAM_STATUSES else "without a good answer"
        instead = f"instead of retrying {_turn_label(f.turn)}"
        return f"{head}{what}: the client went on to turn {f.next_turn} {carried} {instead}."
    if f.outcome == WAITING:
        return f"{head}{what}: no retry yet."
    if f.outcome == GAVE_UP:
        if not f.retryable:
            return f"{head}{what}: the client gave up, rightly: the error was marked not retryable."
        return f"{head}{what}: the client gave up (no later request for {_turn_label(f.turn)})."
    waited = format_ms(f.waited_ms)
    if f.verdict == HONOURED:
        advice = f"after {waited}, honouring the advised {format_ms(f.advised_ms)}"
    elif f.verdict == TOO_EARLY:
        advice = f"after {waited}, too early: it was told to wait {format_ms(f.advised_ms)}"
    else:
        advice = f"after {waited} (no Retry-After was given)"
    tail = " although the error was marked not retryable" if not f.retryable else ""
    return f"{head}{what}: the client retried {advice}{tail}."


def _backoff_sentence(b: TurnBackoff) -> str:
    waits = ", ".join(format_ms(w) for w in b.waits_ms)
    if b.backed_off:
        return f"{_turn_label(b.turn).capitalize()}: retries waited {waits}, backing off each time."
    if b.followed_advice:
        return f"{_turn_label(b.turn).capitalize()}: retries waited {waits}, as each Retry-After advised."
    return f"{_turn_label(b.turn).capitalize()}: retries waited {waits}, without backing off."


def _normalised(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = [
        {
            "seq": int(e["seq"]),
            "at": _time(e["timestamp"]),
            "kind": e["kind"],
            "turn": e.get("turn"),
            "data": e.get("data") or {},
        }
        for e in events
    ]
    rows.sort(key=lambda e: e["seq"])
    return rows


def analyse(events: Iterable[Mapping[str, Any]], *, live: bool = False) -> Resilience:
    """The client's resilience on one run.

    ``live``: the run may still receive requests, so a failure with nothing after it is "waiting", not "gave up".
    """
    rows = _normalised(events)
    outcomes: list[FailureOutcome] = []
    for i, event in enumerate(rows):
        if event["kind"] != "failure_injected":
            continue
        turn, data = event["turn"], event["data"]
        status = str(data.get("status", ""))
        # The end of this attempt: its response, or the client hanging up (a timeout it did not sit through).
        end_index = next(
            (
                j
                for j in range(i + 1, len(rows))
                if rows[j]["turn"] == turn and rows[j]["kind"] in ("response", "client_disconnected")
            ),
            None,
        )
        end = rows[end_index] if end_index is not None else event
        received = end_index is not None and end["kind"] == "response"
        http_status = end["data"].get("status") if received else None
        retry_after = data.get("retry_after_ms")
        advised = retry_after if status in ADVISING_STATUSES and received and retry_after is not None else None
        later = rows[(end_index if end_index is not None else i) + 1 :]
        next_request = next((e for e in later if e["kind"] == "request"), None)
        retry = next((e for e in later if e["kind"] == "request" and e["turn"] == turn), None)

        waited: float | None = None
        verdict: str | None = None
        next_turn: int | None = None
        if status == SLOW_FIRST_BYTE and received:  # the answer came after the stall
            outcome = WAITED_OUT
        elif (
            next_request is not None
            and next_request is not retry
            and turn is not None
            and next_request["turn"] is not None
            and next_request["turn"] > turn
        ):
            outcome, next_turn = WENT_ON, next_request["turn"]
        elif retry is not None:
            outcome = RETRIED
            waited = _ms(retry["at"], end["at"])
            if advised is None:
                verdict = NO_ADVICE
            elif waited + TOLERANCE_MS >= advised:
                verdict = HONOURED
            else:
                verdict = TOO_EARLY
        elif live and next_request is None:
            outcome = WAITING
        else:
            outcome = GAVE_UP
        outcome_row = FailureOutcome(
            seq=event["seq"],
            turn=turn,
            status=status,
            attempt=int(data.get("attempt") or 0),
            of=int(data.get("of") or 0),
            retryable=bool(data.get("retryable", True)),
            http_status=http_status,
            received=received,
            advised_ms=advised,
            outcome=outcome,
            waited_ms=waited,
            verdict=verdict,
            next_turn=next_turn,
            chaos_seed=_chaos_seed(data),
        )
        outcomes.append(_with_sentence(outcome_row))

    backoff = _backoff(outcomes)
    return Resilience(failures=tuple(outcomes), backoff=backoff, summary=_summary(outcomes, backoff))


def _chaos_seed(data: Mapping[str, Any]) -> int | None:
    """The seed of a failure chaos chose (its event is marked ``chaos``), else None."""
    seed = data.get("seed")
    return seed if data.get("chaos") is True and isinstance(seed, int) and not isinstance(seed, bool) else None


def _with_sentence(outcome: FailureOutcome) -> FailureOutcome:
    return replace(outcome, sentence=_failure_sentence(outcome))


def _backoff(outcomes: list[FailureOutcome]) -> tuple[TurnBackoff, ...]:
    by_turn: dict[int | None, list[FailureOutcome]] = {}
    for f in outcomes:
        if f.outcome == RETRIED and f.waited_ms is not None:
            by_turn.setdefault(f.turn, []).append(f)
    result = []
    for turn, retried in by_turn.items():
        if len(retried) < 2:
            continue
        waits = tuple(f.waited_ms for f in retried if f.waited_ms is not None)
        backed_off = all(b > a * BACKOFF_GROWTH for a, b in zip(waits, waits[1:], strict=False))
        followed = all(f.verdict == HONOURED for f in retried)
        row = TurnBackoff(turn=turn, waits_ms=waits, backed_off=backed_off, followed_advice=followed)
        result.append(replace(row, sentence=_backoff_sentence(row)))
    return tuple(result)


def _summary(outcomes: list[FailureOutcome], backoff: tuple[TurnBackoff, ...]) -> tuple[str, ...]:
    if not outcomes:
        return ("No failures were injected on this run, so there is no retry behaviour to judge.",)
    went_on = [f for f in outcomes if f.outcome == WENT_ON]
    early = [f for f in outcomes if f.verdict == TOO_EARLY]
    gave_up = [f for f in outcomes if f.outcome == GAVE_UP and f.retryable]
    sentences = [f.sentence for f in went_on]  # the dangerous case first
    if early:
        sentences.append(
            f"The client retried {len(early)} of {plural(len(outcomes), 'failure')} before the advised Retry-After."
        )
    if gave_up:
        sentences.append(f"The client gave up on {plural(len(gave_up), 'retryable failure')}.")
    if not (went_on or early or gave_up) and all(f.outcome == RETRIED for f in outcomes):
        honoured = any(f.verdict == HONOURED for f in outcomes)
        tail = " and honoured every Retry-After it was given" if honoured else ""
        what = "the injected failure" if len(outcomes) == 1 else f"all {len(outcomes)} injected failures"
        sentences.append(f"The client retried {what}{tail}.")
    sentences.extend(f.sentence for f in outcomes if f.outcome != WENT_ON)
    sentences.extend(b.sentence for b in backoff)
    return tuple(sentences)
