"""The LLM judge's vocabulary and its two pure steps (seed 001's judge module): what the judge is given
(``JudgeInput``: messages, generated pages and other artifacts, trace logs, timeline, criteria), the transcript and
prompt built from it (``format_transcript``, ``build_prompt``), and the verdict read back from its answer, raw JSON
or fenced, or the diagnostic verdict when there is none, or the skipped one when the judge was not asked.

Pure: no Django, no I/O. The call lives in :mod:`harnessweb.judging.client`, the storing in
:mod:`runs_app.judging.judge`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

PASS = "PASS"
FAIL = "FAIL"
# Each trace log and each generated page is cut to this many characters in the prompt (the end is kept for logs:
# that is where a FAILED footer and the last errors are).
MAX_ATTACHMENT_CHARS = 20_000
# How much of an unparseable answer the diagnostic verdict quotes.
QUOTE_CHARS = 500

# The first line is what a scenario standing in for the judge can match on (``system_contains``).
JUDGE_SYSTEM = """You are the judge of a recorded conversation with an LLM-driven application.
Evaluate the transcript against each criterion, in order, and answer with JSON only, in exactly this shape:
{"criteria": [{"criterion": "<the criterion as given>", "verdict": "PASS" or "FAIL", "reason": "<one sentence>"}],
 "overall": "PASS" or "FAIL", "summary": "<two or three sentences>"}
"overall" is PASS only when every criterion passes. Judge only from the transcript, the timeline, the generated
pages and the trace logs given; an injected failure is part of the test, judge how the application coped with it."""


@dataclass(frozen=True)
class TranscriptMessage:
    role: str  # system | user | assistant | tool
    content: str


@dataclass(frozen=True)
class TurnLog:
    """One turn's trace log, as the seed's harness collects it."""

    turn_number: int
    file_path: str
    content: str


@dataclass(frozen=True)
class JudgeInput:
    """What the judge reads. ``timeline`` is the run's events in words (requests, answers, tool calls, injected
    failures), which the seed's judge could not see; ``generated_pages`` the HTML artifacts by name (the seed's
    short URL → HTML), ``artifacts`` the text ones."""

    messages: list[TranscriptMessage]
    criteria: list[str]
    generated_pages: dict[str, str] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    turn_logs: list[TurnLog] = field(default_factory=list)
    timeline: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CriterionVerdict:
    criterion: str
    verdict: Literal["PASS", "FAIL"]
    reason: str = ""


@dataclass(frozen=True)
class JudgeVerdict:
    """The seed's verdict plus what is known of the call. ``judge_error`` is set when the judge itself failed
    (nothing parseable came back, or the call failed): the verdict is then the seed's diagnostic FAIL, which is
    never to be read as the product failing. ``skipped_reason`` is set when the judge was not asked at all (no key,
    a placeholder key): no criteria, a blank overall. ``prompt`` is the prompt as sent (``Prompt.text``), the
    tokens what the answer's usage reported (None when it said nothing)."""

    criteria: list[CriterionVerdict]
    overall: Literal["PASS", "FAIL", ""]
    summary: str
    raw_output: str = ""
    judge_error: str = ""
    judge_model: str = ""
    prompt_hash: str = ""
    prompt: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    skipped_reason: str = ""


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str

    def digest(self, model: str) -> str:
        """SHA-256 of the model and both messages: two verdicts with the same digest were asked the same thing."""
        data = json.dumps([model, self.system, self.user], ensure_ascii=False)
        return hashlib.sha256(data.encode("utf-8")).hexdigest()

    def text(self) -> str:
        """Both messages as stored with the verdict and shown to a reviewer."""
        return f"[system]\n{self.system}\n\n[user]\n{self.user}"


def criteria_lines(text: str) -> list[str]:
    """Criteria typed one per line: blank lines dropped, list markers ("-", "*", "1.") taken off."""
    lines = (re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


def _cut(text: str, keep_end: bool = False) -> str:
    if len(text) <= MAX_ATTACHMENT_CHARS:
        return text
    cut = len(text) - MAX_ATTACHMENT_CHARS
    if keep_end:
        return f"[… first {cut} characters left out …]\n" + text[-MAX_ATTACHMENT_CHARS:]
    return text[:MAX_ATTACHMENT_CHARS] + f"\n[… last {cut} characters left out …]"


def format_transcript(data: JudgeInput) -> str:
    """The transcript as the judge reads it: messages with their role (an uploaded conversation's tool calls and
    results among them), the timeline (a harness run's requests, answers, tool calls and injected failures), the
    generated pages and other artifacts (each cut to ``MAX_ATTACHMENT_CHARS``), the trace logs (their end kept)."""
    parts = ["## Conversation"]
    parts.extend(f"[{m.role}] {m.content}" for m in data.messages)
    if not data.messages:
        parts.append("(no messages recorded)")
    if data.timeline:
        parts += ["", "## Timeline", *data.timeline]
    for url, html in data.generated_pages.items():
        parts += ["", f"## Generated page {url}", _cut(html)]
    for name, content in data.artifacts.items():
        parts += ["", f"## Artifact {name}", _cut(content)]
    for log in data.turn_logs:
        parts += ["", f"## Trace log, turn {log.turn_number}: {log.file_path}", _cut(log.content, keep_end=True)]
    return "\n".join(parts)


def build_prompt(data: JudgeInput) -> Prompt:
    """The judge's system and user messages for this input."""
    numbered = "\n".join(f"{n}. {criterion}" for n, criterion in enumerate(data.criteria, start=1))
    user = f"Criteria:\n{numbered}\n\nTranscript:\n{format_transcript(data)}"
    return Prompt(JUDGE_SYSTEM, user)


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


class NoVerdict(ValueError):
    """The judge's answer holds no verdict; the message says why."""


def _verdict_value(value: Any, where: str) -> Literal["PASS", "FAIL"]:
    text = value.strip().upper() if isinstance(value, str) else value
    if text == PASS:
        return PASS
    if text == FAIL:
        return FAIL
    raise NoVerdict(f"{where} is {json.dumps(value)}, not PASS or FAIL")


def _from_data(data: Any) -> tuple[list[CriterionVerdict], Literal["PASS", "FAIL"], str]:
    if not isinstance(data, dict):
        raise NoVerdict("the JSON is not an object")
    overall = _verdict_value(data.get("overall"), "overall")
    raw_criteria = data.get("criteria")
    if not isinstance(raw_criteria, list) or not raw_criteria:
        raise NoVerdict("criteria is not a non-empty list")
    criteria = []
    for n, item in enumerate(raw_criteria):
        if not isinstance(item, dict) or not isinstance(item.get("criterion"), str):
            raise NoVerdict(f"criteria[{n}] has no criterion text")
        reason = item.get("reason", "")
        criteria.append(
            CriterionVerdict(
                criterion=item["criterion"],
                verdict=_verdict_value(item.get("verdict"), f"criteria[{n}].verdict"),
                reason=reason if isinstance(reason, str) else json.dumps(reason),
            )
        )
    summary = data.get("summary", "")
    return criteria, overall, summary if isinstance(summary, str) else json.dumps(summary)


def parse_verdict(raw: str) -> tuple[list[CriterionVerdict], Literal["PASS", "FAIL"], str]:
    """The verdict in the judge's answer: the whole answer as JSON, or the first fenced block that is one.
    Raises NoVerdict saying what was wrong with the closest candidate."""
    candidates = [raw.strip()] + [m.group(1).strip() for m in _FENCE.finditer(raw)]
    problem = "the answer is empty" if not raw.strip() else "the answer is neither JSON nor a fenced JSON block"
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        try:
            return _from_data(data)
        except NoVerdict as exc:
            problem = str(exc)
    raise NoVerdict(problem)


def diagnostic_verdict(raw: str, error: str) -> JudgeVerdict:
    """The seed's diagnostic FAIL, quoting what came back, marked as a judge error."""
    quoted = raw.strip()
    if len(quoted) > QUOTE_CHARS:
        quoted = quoted[:QUOTE_CHARS] + "…"
    summary = f"The judge failed: {error}." + (f" It answered: {quoted}" if quoted else " Nothing came back.")
    return JudgeVerdict(criteria=[], overall=FAIL, summary=summary, raw_output=raw, judge_error=error)


def skipped_verdict(reason: str) -> JudgeVerdict:
    """The verdict of a judge that was not asked: no criteria, a blank overall, the reason. Never a FAIL."""
    return JudgeVerdict(criteria=[], overall="", summary=f"The judge was skipped: {reason}.", skipped_reason=reason)


def read_answer(raw: str) -> JudgeVerdict:
    """The verdict the judge answered, or the diagnostic verdict when its answer holds none."""
    try:
        criteria, overall, summary = parse_verdict(raw)
    except NoVerdict as exc:
        return diagnostic_verdict(raw, f"no verdict in the judge's answer ({exc})")
    return JudgeVerdict(criteria=criteria, overall=overall, summary=summary, raw_output=raw)
