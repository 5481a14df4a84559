"""VCR cassettes on the wire, pure: what a request naming a cassette gets (replay, record, refuse, or for a scenario's
own cassette the scenario, by mode and strictness: :func:`outcome`, the one rule of the server's endpoint and the
plugin's in-process transport), which recorded interaction answers it (method, path, body), the bytes it replays,
what a request that matches none is told, and a forwarded exchange written down as a cassette with its secrets
redacted.

A cassette is the dict of the shared fixtures' format (``{version, test_name, recorded_at, interactions: [{request:
{method, url, headers, body?}, response: {status, headers, body_chunks | body_chunks_base64}}]}``), checked
(:mod:`harnessweb.engine.cassette_format`) before it comes here.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from harnessweb.engine.redaction import redact, redact_json, redact_text, redact_url, secrets_in_text

MODES = ("playback", "record", "auto")
VERSION = "1.0"
# Headers that describe one connection or one encoding of the body, not the answer: the server sending the replay
# frames it itself (a recorded ``Transfer-Encoding: chunked`` or ``Content-Length`` would be sent twice or be
# wrong), and a recorded body is already decoded, so its ``Content-Encoding`` no longer holds.
CONNECTION_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        "content-encoding",
    }
)
MAX_DIFFERENCES = 5


def parse_mode(value: str) -> str:
    """``HARNESS_VCR_MODE`` read: playback (the default), record or auto; anything else is a ValueError."""
    mode = (value or "playback").strip().lower()
    if mode not in MODES:
        raise ValueError(f"HARNESS_VCR_MODE must be one of {', '.join(MODES)}, not {value!r}")
    return mode


def cassette_names(name: str) -> tuple[str, ...]:
    """The stored names a header's value may mean: as given, and with or without ``.json``."""
    name = name.strip()
    stem = name[: -len(".json")] if name.lower().endswith(".json") else name
    return tuple(dict.fromkeys((name, f"{stem}.json", stem)))


def file_name(name: str) -> str:
    """The file name a recorded cassette is stored under: the name, ending in ``.json``."""
    name = name.strip()
    return name if name.lower().endswith(".json") else f"{name}.json"


# -- what a request naming a cassette gets ----------------------------------------------------------------------------


def plan(mode: str, *, exists: bool, record: bool, strict: bool, fallback: bool = False) -> str:
    """What answers a request that names a cassette: ``replay`` it, ``record`` a new interaction from the upstream,
    let the engine answer (``engine``), or ``missing`` (a 404 naming the cassette).

    ``record`` is the ``X-Harness-Record`` header: it records whatever the mode. Otherwise the mode says, as the
    seed's ``VCR_MODE``: playback replays, record records, auto replays a cassette that exists and records one that
    does not. A cassette that is not stored, in playback, is a 404: a request that names a cassette gets that
    cassette or an error, never another answer. Only a scenario's own cassette (``fallback``) leaves a cassette not
    stored to the scenario, unless strict (``VCR_STRICT``: fail where the others fall through; see
    :func:`on_mismatch` for a request that matches no interaction).
    """
    if record or mode == "record":
        return "record"
    if exists:
        return "replay"
    if mode == "auto":
        return "record"
    return "engine" if fallback and not strict else "missing"


def on_mismatch(mode: str, *, strict: bool, fallback: bool = False) -> str:
    """What a request gets when the cassette it names has no interaction that matches it (bodies compared as parsed
    JSON: key order and spacing ignored): ``refuse`` (a 400 showing the request, the closest recorded one and the
    field paths where they differ) when strict, and in playback; not strict, auto mode forwards it to the upstream
    (``record``: the new interaction is added to the cassette), and a scenario's own cassette (``fallback``) in
    playback leaves it to the scenario (``engine``)."""
    if strict:
        return "refuse"
    if mode == "auto":
        return "record"
    return "engine" if fallback else "refuse"


@dataclass(frozen=True)
class Outcome:
    """What a request naming a cassette gets (:func:`outcome`): ``replay`` (the recorded response), ``record``
    (forward it and add the exchange to the cassette ``name``), ``engine`` (a scenario's cassette with nothing for
    it: the scenario answers), or ``refuse`` (an error: ``status``, ``message``, and ``param`` the header to name)."""

    action: str
    name: str
    replay: Replay | None = None
    status: int = 0
    message: str = ""
    param: str | None = None


def outcome(
    name: str,
    stored: tuple[str, Mapping[str, Any]] | str | None,
    method: str,
    path: str,
    body: bytes,
    *,
    mode: str,
    strict: bool,
    record: bool = False,
    header: str | None = None,
    fallback: bool = False,
    where: str = "",
) -> Outcome:
    """The one rule the server's endpoint and the plugin's in-process transport answer a request naming a cassette
    by: ``stored`` is the cassette found under ``name`` as ``(its name, the cassette)``, None when none is, or a
    message when what is stored is not a cassette; ``where`` says where it was looked for (the 404's end);
    ``header`` names the header that named it, ``fallback`` a scenario's own cassette (:func:`plan`)."""
    if isinstance(stored, str):
        return Outcome("refuse", name, status=400, message=stored, param=header)
    action = plan(mode, exists=stored is not None, record=record, strict=strict, fallback=fallback)
    if action == "missing":
        return Outcome("refuse", name, status=404, message=f"Cassette '{name}' is not stored: {where}", param=header)
    if action != "replay" or stored is None:
        return Outcome(action, stored[0] if stored else name)
    stored_name, cassette = stored
    sent = read_body(body)
    index = find(cassette, method, path, sent)
    if index is not None:
        return Outcome("replay", stored_name, replay=replay(cassette["interactions"][index]))
    then = on_mismatch(mode, strict=strict, fallback=fallback)
    if then == "refuse":
        return Outcome(
            "refuse", stored_name, status=400, message=mismatch_message(stored_name, cassette, method, path, sent)
        )
    return Outcome(then, stored_name)


# -- matching --------------------------------------------------------------------------------------------------------


def request_path(url: str) -> str:
    """The path of a recorded URL (host and query are not compared: the harness is not the provider's host, and the
    query may hold a redacted key)."""
    return (urlsplit(url).path or "/").rstrip("/") or "/"


def read_body(raw: bytes) -> Any:
    """A request body as a cassette holds it: the JSON value, else the text, else None when empty."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _recorded_body(request: Mapping[str, Any]) -> tuple[bool, Any]:
    # A hand-written cassette may leave the body out: then any body matches (it was not recorded).
    if request.get("body") is not None:
        return True, request["body"]
    if request.get("body_text") is not None:
        return True, request["body_text"]
    return False, None


def differences(recorded: Mapping[str, Any], method: str, path: str, body: Any) -> list[str]:
    """Where a request differs from a recorded one (empty: it matches): method, path, then the body, JSON value by
    JSON value (``0`` and ``0.0`` are equal, key order does not count). The query is not compared, and the body
    is compared redacted, as it was recorded: a key in it (or a secret parameter) matches its marker."""
    found = []
    if str(recorded.get("method", "")).upper() != method.upper():
        found.append(f"method: recorded {recorded.get('method')}, sent {method}")
    recorded_path = request_path(str(recorded.get("url", "")))
    if recorded_path != (path.rstrip("/") or "/"):
        found.append(f"path: recorded {recorded_path}, sent {path}")
    has_body, recorded_body = _recorded_body(recorded)
    if has_body:
        found.extend(_diff(recorded_body, redact_json(body), "body"))
    return found


def _diff(recorded: Any, sent: Any, where: str) -> list[str]:
    if isinstance(recorded, dict) and isinstance(sent, dict):
        found = []
        for key in sorted(recorded.keys() | sent.keys(), key=str):
            if key not in sent:
                found.append(f"{where}.{key}: recorded {_short(recorded[key])}, not sent")
            elif key not in recorded:
                found.append(f"{where}.{key}: not recorded, sent {_short(sent[key])}")
            else:
                found.extend(_diff(recorded[key], sent[key], f"{where}.{key}"))
        return found
    if isinstance(recorded, list) and isinstance(sent, list) and len(recorded) == len(sent):
        return [d for i, (r, s) in enumerate(zip(recorded, sent, strict=True)) for d in _diff(r, s, f"{where}[{i}]")]
    if recorded == sent and type(recorded) is type(sent) or _same_number(recorded, sent):
        return []
    return [f"{where}: recorded {_short(recorded)}, sent {_short(sent)}"]


def _same_number(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def find(cassette: Mapping[str, Any], method: str, path: str, body: Any) -> int | None:
    """The index of the first interaction that matches the request (method, path, body), or None."""
    for index, interaction in enumerate(cassette.get("interactions", ())):
        if not differences(interaction["request"], method, path, body):
            return index
    return None


def mismatch_message(name: str, cassette: Mapping[str, Any], method: str, path: str, body: Any) -> str:
    """What a request that matches no interaction is told: the request, the closest recorded one (fewest
    differences, the first on a tie) and where they differ."""
    interactions = list(cassette.get("interactions", ()))
    scored = [(len(differences(i["request"], method, path, body)), n) for n, i in enumerate(interactions)]
    _, index = min(scored)
    closest = interactions[index]["request"]
    found = differences(closest, method, path, body)
    shown = "; ".join(found[:MAX_DIFFERENCES]) + (
        f"; and {len(found) - MAX_DIFFERENCES} more" if len(found) > MAX_DIFFERENCES else ""
    )
    has_body, recorded_body = _recorded_body(closest)
    return (
        f"No interaction of cassette '{name}' ({len(interactions)} recorded) matches this request "
        f"(matched on method, path and body). Sent: {method} {path} {_short(redact_json(body), 400)}. "
        f"Closest recorded: #{index} {closest.get('method')} {closest.get('url')} "
        f"{_short(recorded_body, 400) if has_body else '(body not recorded)'}. Differs at: {shown}"
    )


# -- replaying -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """A recorded response ready to send: status, headers (the connection's own left out) and the body chunks, as
    recorded, one frame each."""

    status: int
    headers: tuple[tuple[bytes, bytes], ...]
    chunks: tuple[bytes, ...]


def header_bytes(value: str) -> bytes:
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8")


def sendable_headers(headers: Iterable[tuple[str, str]]) -> tuple[tuple[bytes, bytes], ...]:
    """Response headers as the harness sends them on: all but the connection's own (:data:`CONNECTION_HEADERS`)."""
    return tuple(
        (header_bytes(name.lower()), header_bytes(value))
        for name, value in headers
        if name.lower() not in CONNECTION_HEADERS
    )


def replay(interaction: Mapping[str, Any]) -> Replay:
    """The recorded response of an interaction: ``body_chunks`` as UTF-8, or ``body_chunks_base64`` decoded."""
    response = interaction["response"]
    if response.get("body_chunks_base64") is not None:
        chunks = tuple(base64.b64decode(chunk) for chunk in response["body_chunks_base64"])
    else:
        chunks = tuple(chunk.encode("utf-8") for chunk in response.get("body_chunks") or ())
    return Replay(int(response["status"]), sendable_headers(response.get("headers", ())), chunks)


# -- recording -------------------------------------------------------------------------------------------------------


def recorded_request(
    method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes, secrets: Collection[str]
) -> dict[str, Any]:
    """A forwarded request as a cassette holds it: URL and headers redacted, the body as JSON (or ``body_text``)."""
    request: dict[str, Any] = {"method": method, "url": redact_url(url), "headers": redact(headers, secrets)}
    value = read_body(body)
    if isinstance(value, str):
        request["body_text"] = redact_text(value)
    elif value is not None:
        request["body"] = redact_json(value)
    return request


def recorded_response(
    status: int, headers: Iterable[tuple[str, str]], chunks: Iterable[bytes], secrets: Collection[str]
) -> dict[str, Any]:
    """An upstream response as a cassette holds it: headers redacted, the chunks as received (key shapes redacted;
    a key split between chunks joins them), as text when every one is UTF-8, else ``body_chunks_base64`` (binary
    frames, such as Bedrock's event stream, are kept as they are: their checksums cover the bytes)."""
    chunks = [chunk for chunk in chunks if chunk]
    response: dict[str, Any] = {"status": status, "headers": redact(headers, secrets)}
    try:
        texts = [redact_text(chunk.decode("utf-8")) for chunk in chunks]
        if secrets_in_text("".join(texts)):  # a key split between two chunks: kept as one chunk, redacted
            texts = [redact_text("".join(texts))]
        response["body_chunks"] = texts
    except UnicodeDecodeError:
        response["body_chunks_base64"] = [base64.b64encode(chunk).decode("ascii") for chunk in chunks]
    return response


def with_interaction(
    cassette: Mapping[str, Any] | None, name: str, interaction: dict[str, Any], recorded_at: str
) -> dict[str, Any]:
    """The cassette with a newly recorded interaction: it replaces a recorded one its request matches (recording
    again refreshes an answer), else it is added at the end (a conversation's later requests)."""
    interactions = list(cassette.get("interactions", ())) if cassette else []
    request = interaction["request"]
    has_body, body = _recorded_body(request)
    same = find(
        {"interactions": interactions}, request["method"], request_path(request["url"]), body if has_body else None
    )
    if same is not None and _recorded_body(interactions[same]["request"])[0] == has_body:
        interactions[same] = interaction
    else:
        interactions.append(interaction)
    stem = name[: -len(".json")] if name.lower().endswith(".json") else name
    return {"version": VERSION, "test_name": stem, "recorded_at": recorded_at, "interactions": interactions}


def dump(cassette: Mapping[str, Any]) -> bytes:
    """A cassette's bytes as stored: indented JSON, as the shared fixtures are written."""
    return orjson.dumps(cassette, option=orjson.OPT_INDENT_2)
