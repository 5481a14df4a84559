"""Batches and files, what is pure of them: an upload's multipart form read, a batch's input read line by line (OpenAI's
JSONL, Anthropic's ``requests``) with errors naming the line, the outcome a scenario scripts for a batch, and the
clock that moves a batch through its states.

A batch's state is a function of time: ``validating`` → ``in_progress`` → ``finalizing`` → ``completed`` one step
apart (``HARNESS_BATCH_STEP_S``, or the create request's ``X-Harness-Batch-Step``), so a test that polls sees the
same states in the same order on every run; the hosts answer the lines on the first read that finds the batch past
``validating``. The objects the APIs send are built in :mod:`harnessweb.engine.batch_objects`.
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import orjson

from harnessweb.engine import respond, routes
from harnessweb.engine.exchange import ChatRequest, ScenarioNotFound
from harnessweb.engine.playback import Catalog, select_scenario
from harnessweb.engine.schemas import BatchOutcome
from harnessweb.engine.wire.common import WireError

OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/responses", "/v1/embeddings")
ANTHROPIC_PATH = "/v1/messages"  # what each request of a Message Batch plays
FILE_PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
MAX_LINES = 50_000  # OpenAI's limit of requests in one batch
MAX_MESSAGE_REQUESTS = 100_000  # Anthropic's
CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # Anthropic's pattern for a request's custom_id
WINDOW_S = 24 * 3600  # a batch's completion window, and when it expires
MAX_STEP_S = 3600.0
STEP_HEADER = "x-harness-batch-step"


def new_id(prefix: str) -> str:
    """A fresh object id in the provider's style: ``file-…``, ``batch_…``, ``msgbatch_…``."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# ---------------------------------------------------------------------------------------------------------------
# Uploads


@dataclass(frozen=True)
class Upload:
    """A file uploaded to ``POST /v1/files``: its name, bytes, purpose and how long it lives (None: until deleted)."""

    filename: str
    content: bytes
    purpose: str
    expires_after_s: int | None = None


def read_form(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """A ``multipart/form-data`` body's fields: name → (file name or None, bytes). Raises :class:`WireError` for a
    body of another type or one that is not a form."""
    media = content_type.partition(";")[0].strip().lower()
    if media != "multipart/form-data" or "boundary=" not in content_type:
        raise WireError("Upload the file as multipart/form-data (a 'file' and a 'purpose' field)", "content-type")
    head = b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n"
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise WireError("The body is not a multipart form: upload a 'file' and a 'purpose' field", "file")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            fields[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return fields


def read_upload(content_type: str, body: bytes) -> Upload:
    """The upload a ``POST /v1/files`` form holds, or :class:`WireError` naming the field that is wrong."""
    fields = read_form(content_type, body)
    if "file" not in fields:
        raise WireError("Missing required parameter: 'file'.", "file")
    if "purpose" not in fields:
        raise WireError("Missing required parameter: 'purpose'.", "purpose")
    filename, content = fields["file"]
    purpose = fields["purpose"][1].decode("utf-8", "replace").strip()
    if purpose not in FILE_PURPOSES:
        allowed = ", ".join(f"'{p}'" for p in FILE_PURPOSES)
        raise WireError(f"Invalid value for 'purpose': '{purpose[:80]}'. Supported values are: {allowed}.", "purpose")
    if not content:
        raise WireError("The file is empty: upload a file with content", "file")
    name = (filename or "file").replace("\\", "/").rsplit("/", 1)[-1][:255] or "file"
    if purpose == "batch" and not name.lower().endswith(".jsonl"):
        raise WireError(f"Invalid file format for Batch API: '{name}'. Must be .jsonl", "file")
    return Upload(name, content, purpose, _expires_after(fields))


def _expires_after(fields: dict[str, tuple[str | None, bytes]]) -> int | None:
    anchor = fields.get("expires_after[anchor]", (None, b""))[1].decode("utf-8", "replace")
    seconds = fields.get("expires_after[seconds]", (None, b""))[1].decode("utf-8", "replace")
    if not anchor and not seconds:
        return None
    if anchor != "created_at":
        raise WireError(
            f"Invalid value for 'expires_after.anchor': '{anchor[:40]}'. Use 'created_at'.", "expires_after"
        )
    if not seconds.isdigit() or not 3600 <= int(seconds) <= 2_592_000:
        message = f"Invalid value for 'expires_after.seconds': '{seconds[:40]}'. Use 3600 to 2592000."
        raise WireError(message, "expires_after")
    return int(seconds)


# ---------------------------------------------------------------------------------------------------------------
# A batch's input


@dataclass(frozen=True)
class Line:
    """One request of a batch: its line in the input file (1-based; Anthropic's: its position), its ``custom_id``,
    the path it plays and its body."""

    number: int
    custom_id: str
    url: str
    body: dict[str, Any]

    def as_data(self) -> dict[str, Any]:
        return {"line": self.number, "custom_id": self.custom_id, "url": self.url, "body": self.body}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Line:
        return cls(data["line"], data["custom_id"], data["url"], data["body"])


@dataclass(frozen=True)
class LineError:
    """Why a batch's input is refused, in OpenAI's ``errors.data[]`` shape: a code, a message, the line (None for
    the whole file) and the parameter."""

    code: str
    message: str
    line: int | None = None
    param: str | None = None

    def as_data(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "param": self.param, "line": self.line}


def parse_lines(data: bytes, endpoint: str, limit: int = MAX_LINES) -> tuple[list[Line], list[LineError]]:
    """An OpenAI batch input file read line by line: each non-blank line an object with a unique ``custom_id``,
    ``method`` POST, ``url`` the batch's endpoint and an object ``body``. The requests, and every line's error
    (a batch with any fails whole, as OpenAI's does)."""
    lines: list[Line] = []
    errors: list[LineError] = []
    seen: set[str] = set()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            item = orjson.loads(raw)
        except orjson.JSONDecodeError:
            errors.append(LineError("invalid_json_line", "This line is not parseable as valid JSON.", number))
            continue
        if not isinstance(item, dict):
            errors.append(LineError("invalid_json_line", "This line is not a JSON object.", number))
            continue
        problem = _line_problem(item, endpoint, number, seen)
        if problem is not None:
            errors.append(problem)
            continue
        seen.add(item["custom_id"])
        lines.append(Line(number, item["custom_id"], item["url"], item["body"]))
    if not lines and not errors:
        errors.append(LineError("empty_file", "The batch input file is empty."))
    if len(lines) > limit:
        errors.append(LineError("too_many_requests", f"The file holds {len(lines)} requests; a batch takes {limit}."))
    return lines, errors


def _line_problem(item: dict[str, Any], endpoint: str, number: int, seen: set[str]) -> LineError | None:
    for name in ("custom_id", "method", "url", "body"):
        if name not in item:
            return LineError("missing_required_parameter", f"Missing required parameter: '{name}'.", number, name)
    custom_id, method, url, body = item["custom_id"], item["method"], item["url"], item["body"]
    if not isinstance(custom_id, str) or not custom_id:
        return LineError("invalid_value", "custom_id must be a non-empty string.", number, "custom_id")
    if custom_id in seen:
        message = (
            "The custom_id for this request is a duplicate of another request. "
            "The custom_id parameter must be unique for each request in a batch."
        )
        return LineError("duplicate_custom_id", message, number, "custom_id")
    if method != "POST":
        return LineError("invalid_method", f"The method '{str(method)[:20]}' is not POST.", number, "method")
    if url != endpoint:
        message = f"The URL '{str(url)[:200]}' does not match the batch endpoint '{endpoint}'."
        return LineError("invalid_url", message, number, "url")
    if not isinstance(body, dict):
        return LineError("invalid_value", "body must be a JSON object (the request's body).", number, "body")
    return None


def parse_message_requests(payload: Any, limit: int = MAX_MESSAGE_REQUESTS) -> list[Line]:
    """An Anthropic ``POST /v1/messages/batches`` body's requests (each ``custom_id`` and Messages ``params``), or
    :class:`WireError` naming the field as Anthropic does (``requests.0.custom_id: …``). What a request's params ask
    is checked when it is played, and an error there is that request's ``errored`` result."""
    if not isinstance(payload, dict):
        raise WireError("The body must be a JSON object with 'requests'", "requests")
    requests = payload.get("requests")
    if not isinstance(requests, list) or not requests:
        raise WireError("requests: a list of at least 1 request ({custom_id, params}) is required", "requests")
    if len(requests) > limit:
        raise WireError(f"requests: {len(requests)} requests; a batch takes at most {limit}", "requests")
    lines: list[Line] = []
    seen: set[str] = set()
    for i, item in enumerate(requests):
        if not isinstance(item, dict):
            raise WireError(f"requests.{i}: must be an object with custom_id and params", f"requests.{i}")
        custom_id, params = item.get("custom_id"), item.get("params")
        if not isinstance(custom_id, str) or not CUSTOM_ID.fullmatch(custom_id):
            message = f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            raise WireError(message, f"requests.{i}.custom_id")
        if custom_id in seen:
            message = f"requests.{i}.custom_id: '{custom_id}' is used by an earlier request; each must be unique"
            raise WireError(message, f"requests.{i}.custom_id")
        if not isinstance(params, dict):
            raise WireError(f"requests.{i}.params: Field required (the Messages request)", f"requests.{i}.params")
        seen.add(custom_id)
        lines.append(Line(i + 1, custom_id, ANTHROPIC_PATH, params))
    return lines


def scripted_outcome(catalog: Catalog, lines: list[Line], headers: dict[str, str]) -> BatchOutcome | None:
    """The outcome the batch's scenarios script (a scenario's ``batch``): the first line whose scenario has one
    decides. Lines are read as the endpoint reads them; one that is refused, or plays no scenario, scripts none."""
    named = headers.get(routes.SCENARIO_HEADER)
    for line in lines:
        route = routes.resolve("POST", line.url, headers)
        if isinstance(route, routes.Refusal):
            continue
        try:
            _, request = respond.read_request(route, orjson.dumps(line.body))
            if not isinstance(request, ChatRequest):
                continue
            scenario, _ = select_scenario(catalog, request, named)
        except (WireError, ScenarioNotFound):
            continue
        if scenario is not None and scenario.batch is not None:
            return scenario.batch
    return None


def step_of(headers: dict[str, str], default: float) -> float:
    """The seconds between a batch's states: the create request's ``X-Harness-Batch-Step`` (0: the first read finds
    it ended), else the server's default. Raises :class:`WireError` naming the header for a value that is no
    number of seconds in 0..3600."""
    raw = headers.get(STEP_HEADER)
    if raw is None:
        return default
    try:
        step = float(raw)
    except ValueError:
        step = math.nan
    if not 0 <= step <= MAX_STEP_S:
        raise WireError(f"{STEP_HEADER}: must be a number of seconds from 0 to {MAX_STEP_S:g}, not {raw[:40]!r}")
    return step


# ---------------------------------------------------------------------------------------------------------------
# The clock


@dataclass(frozen=True)
class Clock:
    """What a batch's state depends on: when it was created, the step between states, how it ends (``completed``,
    ``failed`` for an input refused or a scripted failure, ``expired``) and when a cancel was asked."""

    created_at: float
    step_s: float
    ending: str = "completed"
    cancelled_at: float | None = None

    def schedule(self) -> list[tuple[str, float]]:
        """Each state the batch goes through and when it begins (OpenAI's words)."""
        c, s = self.created_at, self.step_s
        if self.ending == "failed":
            steps = [("validating", c), ("failed", c + s)]
        elif self.ending == "expired":
            steps = [("validating", c), ("in_progress", c + s), ("expired", c + 2 * s)]
        else:
            steps = [("validating", c), ("in_progress", c + s), ("finalizing", c + 2 * s), ("completed", c + 3 * s)]
        if self.cancelled_at is not None:
            t = self.cancelled_at
            steps = [(name, at) for name, at in steps if at <= t] + [("cancelling", t), ("cancelled", t + s)]
        return steps


ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


@dataclass(frozen=True)
class Phase:
    """A batch's state at one moment: ``status`` (OpenAI's words), whether its lines are answered by then
    (``answers``: it reached ``in_progress``), and when each state reached began (``at``)."""

    status: str
    answers: bool
    at: dict[str, float] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.status in ENDED


def phase(clock: Clock, now: float, answered: bool = True) -> Phase:
    """The state at ``now``. ``answered`` False while the lines are still being answered (by another reader): the
    batch stays ``in_progress`` until they are."""
    reached = [(name, at) for name, at in clock.schedule() if at <= now] or clock.schedule()[:1]
    names = [name for name, _ in reached]
    answers = "in_progress" in names
    if answers and not answered:
        reached = reached[: names.index("in_progress") + 1]
    return Phase(reached[-1][0], answers, dict(reached))


def created(clock: Clock) -> Phase:
    """The state a create answers with, whatever the step (0 included: the first read finds the batch ended)."""
    return Phase("validating", False, {"validating": clock.created_at})


def cancellable(status: str) -> bool:
    """Whether a cancel is taken in this state (a batch that ended, or is cancelling already, keeps its state)."""
    return status in ("validating", "in_progress", "finalizing")


def check_metadata(value: Any) -> dict[str, str] | None:
    """A batch's ``metadata`` as OpenAI takes it (at most 16 pairs, keys up to 64 characters, string values up to
    512), or :class:`WireError` naming what is wrong."""
    if value is None:
        return None
    if not isinstance(value, dict) or len(value) > 16:
        raise WireError("Invalid 'metadata': an object of at most 16 key-value pairs.", "metadata")
    for key, item in value.items():
        if len(key) > 64 or not isinstance(item, str) or len(item) > 512:
            message = f"Invalid 'metadata.{key[:64]}': keys take up to 64 characters, values are strings of up to 512."
            raise WireError(message, "metadata")
    return value


def required_fields(payload: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """A JSON body's object, with each of ``names`` present, else :class:`WireError` naming the first missing."""
    if not isinstance(payload, dict):
        raise WireError("The request body must be a JSON object.")
    for name in names:
        if payload.get(name) in (None, ""):
            raise WireError(f"Missing required parameter: '{name}'.", name)
    return payload


def batch_model(lines: list[Line]) -> str | None:
    """The model a batch's lines ask for, when they all name the same one."""
    models = {line.body.get("model") for line in lines}
    found = models.pop() if len(models) == 1 else None
    return found if isinstance(found, str) else None
