"""Whether a cassette shows what its name claims (seed 003's required scenarios): ``verify_openai_simple_text.json``
counts toward the floor and the required scenario only when its stream reads as a simple text answer.

Read in one provider-neutral vocabulary, the events of :class:`~harnessweb.engine.stream_events.StreamSummary`
(start, text delta, thinking delta, tool call start/delta/end, done, error) that every protocol's bytes are
summarised into. A scenario without a rule here claims nothing that can be checked, and counts as before.

Pure: summaries in, a reason out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from harnessweb.engine.stream_events import StreamSummary

Rule = Callable[[StreamSummary], str | None]


def _completes(s: StreamSummary) -> str | None:
    if s.has_error_event or s.error is not None or s.status >= 400:
        return f"it ends in an error (status {s.status})"
    if not s.has_start:
        return "it has no start"
    if not s.has_done:
        return "it never finishes (no done)"
    return None


def _text(s: StreamSummary) -> str | None:
    if why := _completes(s):
        return why
    if not s.text_deltas:
        return "it has no text delta"
    if s.tool_calls:
        return f"it calls {len(s.tool_calls)} tool(s)"
    return None


def _tool_calls(count: int | None) -> Rule:
    def rule(s: StreamSummary) -> str | None:
        if why := _completes(s):
            return why
        calls = len(s.tool_calls)
        if count is not None and calls != count:
            return f"it has {calls} tool call(s), not exactly {count}"
        if count is None and calls < 2:
            return f"it has {calls} tool call(s), not several"
        return None

    return rule


def _unicode(s: StreamSummary) -> str | None:
    if why := _text(s):
        return why
    return None if any(ord(c) > 127 for c in s.text) else "its text holds no non-ASCII character"


def _paragraphs(s: StreamSummary) -> str | None:
    if why := _text(s):
        return why
    return None if "\n\n" in s.text.strip() else "its text is a single paragraph"


def _thinking(s: StreamSummary) -> str | None:
    if why := _completes(s):
        return why
    return None if s.thinking_deltas or s.thinking_blocks else "it has no thinking"


def _status(status: int) -> Rule:
    def rule(s: StreamSummary) -> str | None:
        if s.status == status or (s.has_error_event and s.status in (status, 200)):
            return None
        return f"it answers status {s.status} without an error event, not {status}"

    return rule


# The scenario names seed 003 and the repository's own cassettes use, each with the stream it must show. Names whose
# real recordings do not show them in their bytes have no rule (``empty_response``: the model answered with text;
# ``stream_interruption``: a complete stream).
RULES: dict[str, tuple[str, Rule]] = {
    "simple_text": ("start, text deltas, done", _text),
    "tool_call_single": ("exactly one tool call, then done", _tool_calls(1)),
    "tool_call_multiple": ("several tool calls, then done", _tool_calls(None)),
    "unicode_text": ("non-ASCII text kept, then done", _unicode),
    "multi_paragraph": ("text of several paragraphs, then done", _paragraphs),
    "extended_thinking": ("thinking, then done", _thinking),
    "thinking_only": ("thinking, then done", _thinking),
    "thinking_with_tool_calls": ("thinking, then done", _thinking),
    "error_auth_401": ("status 401 or an error event", _status(401)),
    "forbidden_403": ("status 403 or an error event", _status(403)),
    "error_bad_request_400": ("status 400 or an error event", _status(400)),
    "error_rate_limit_429": ("status 429 or an error event", _status(429)),
    "server_error_500": ("status 500 or an error event", _status(500)),
    "overloaded_529": ("status 529 or an error event", _status(529)),
}


def misfit(scenario: str, summaries: Sequence[StreamSummary]) -> str | None:
    """Why a cassette of ``scenario`` does not show what the name claims (its last interaction is the answer the
    scenario is about; an error scenario may show its error in any), or None when it does or nothing is claimed."""
    found = RULES.get(scenario)
    if found is None:
        return None
    wanted, rule = found
    if not summaries:
        return f"{scenario} needs {wanted}: the cassette holds no interaction"
    if scenario.startswith(("error_", "forbidden_", "server_error_", "overloaded_")):
        whys = [rule(s) for s in summaries]
        if any(why is None for why in whys):
            return None
        why = whys[-1]
    else:
        why = rule(summaries[-1])
    return None if why is None else f"{scenario} needs {wanted}: {why}"
