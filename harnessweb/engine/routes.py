"""Which part of the fake provider a request reaches: a method and path → a :class:`Route`, or a refusal (404 for a
path nothing serves, 405 for a method a path does not take) that names what is served. Pure.

Every path under ``/v1/``, ``/v1beta/``, ``/v1beta1/`` (Vertex AI's), ``/openai/`` (Azure's), ``/v2/``
(Cohere's), ``/model/`` (Amazon Bedrock's) and ``/harness/`` (the harness's own) comes here (and, under the REST
API's ``/api/``, only OpenRouter's ``/api/v1/`` and Ollama's exact paths, also under ``/ollama/``), so a client that
calls something we do not serve gets JSON in its provider's error format, never an HTML page.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import parse_qs

from harnessweb.engine import wire
from harnessweb.engine.wire import (
    anthropic,
    azure,
    bedrock,
    cohere,
    gemini,
    harness,
    media,
    ollama,
    openai,
    openrouter,
    responses,
    transcription,
    vertex,
    vertex_claude,
)

PREFIXES = ("/v1/", "/v1beta/", "/openai/", "/v1beta1/", "/v2/", "/model/", "/harness/")  # … the npm provider's
# Under /api/, the dashboard's REST API's prefix, only these exact paths are the fake provider's: Ollama's native API
# (also under /ollama/, for a host given with that path) and OpenRouter's /api/v1/.
OLLAMA_PATHS = ("/api/chat", "/api/generate", "/api/embed", "/api/embeddings", "/api/tags", "/api/show", "/api/ps",
                "/api/version")  # fmt: skip
SHARED_PREFIXES = ("/api/v1/", "/ollama/")
# What the fake endpoints read from a request beyond the provider's own protocol, for the server and the plugin alike.
RUN_HEADER = "x-harness-run"  # the run a request belongs to
SCENARIO_HEADER = "x-harness-scenario"  # the scenario it plays
UNMATCHED_HEADER = "x-harness-unmatched"  # "error": a 404 rather than the lorem when nothing matches
RUN_KEY_PREFIX = "harness-run-"  # an API key naming the run, for programs that build their own clients
CASSETTE_HEADER = "x-harness-cassette"  # the stored cassette that answers (replayed, or recorded as the mode says)
RECORD_HEADER = "x-harness-record"  # record the exchange with the real provider as this cassette
REQUIRE_KEY_HEADER = "x-harness-require-key"  # "1": the key must arrive where the provider reads it


@dataclass(frozen=True)
class Route:
    """``kind`` says what answers (``play``: a protocol plays the engine; ``models``, ``model``, ``count_tokens``,
    ``embeddings``, ``kept_response``, ``answer``: small endpoints, the last one its wire's ``encode_answer(param,
    body)``; ``BATCH_KINDS``: the Files and Batch APIs); ``wire`` is the protocol whose format the answer and its
    errors take; ``param`` what the path names (a model or response id); ``fields`` the request fields the path
    sets (Gemini's model and streaming; an ``answer``'s: the keyword arguments its wire's ``answer_fields(headers)``
    gives, the images' base URL); ``keys`` the provider whose key headers it reads and whose refusal it
    answers, when not its wire's (Azure's ``/openai/v1/`` routes play OpenAI's protocols behind Azure's keys)."""

    kind: str
    wire: ModuleType
    param: str = ""
    fields: tuple[tuple[str, Any], ...] = ()
    keys: ModuleType | None = None

    @property
    def provider(self) -> ModuleType:
        """The protocol whose keys the route reads (``keys.READS``) and whose format its key refusal takes."""
        return self.keys or self.wire


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    wire: ModuleType


# (method, path pattern, kind, protocol), in the order the 404 lists them.
# A protocol of None takes the format the request's headers ask for (see error_wire).
_TABLE: tuple[tuple[str, str, str, ModuleType | None], ...] = (
    # Before the protocols: Claude on Vertex counts tokens at what its play route would read as a model.
    ("POST", vertex_claude.COUNT_TOKENS_PATTERN, "count_tokens", vertex_claude),
    *(("POST", wire.path_pattern(module), "play", module) for module in wire.WIRES),
    ("POST", re.escape("/v1/messages/count_tokens"), "count_tokens", anthropic),
    ("POST", re.escape("/v1/embeddings"), "embeddings", openai),
    ("POST", re.escape(cohere.EMBED_PATH), "embeddings", cohere),
    # Azure OpenAI beside its chat completions (a wire of its own): a deployment's embeddings, and the v1 routes.
    ("POST", r"/openai/deployments/(?P<param>[^/]+)/embeddings", "embeddings", azure),
    ("POST", re.escape("/openai/v1/chat/completions"), "play", openai),
    ("POST", re.escape("/openai/v1/responses"), "play", responses),
    ("GET", re.escape("/v1/models"), "models", None),
    ("GET", r"/v1/models/(?P<param>[^/:]+)", "model", None),
    ("GET", r"/v1beta/models", "models", gemini),
    ("GET", r"/v1beta/models/(?P<param>[^/:]+)", "model", gemini),
    ("GET", r"/v1/responses/(?P<param>[^/]+)", "kept_response", responses),
    # OpenAI's Files and Batch APIs, Anthropic's Message Batches (BATCH_KINDS: runs_app/batches/consumer.py).
    ("POST", re.escape("/v1/files"), "files", openai),
    ("GET", re.escape("/v1/files"), "files", openai),
    ("GET", r"/v1/files/(?P<param>[^/]+)", "file", openai),
    ("DELETE", r"/v1/files/(?P<param>[^/]+)", "file", openai),
    ("GET", r"/v1/files/(?P<param>[^/]+)/content", "file_content", openai),
    ("POST", re.escape("/v1/batches"), "batches", openai),
    ("GET", re.escape("/v1/batches"), "batches", openai),
    ("GET", r"/v1/batches/(?P<param>[^/]+)", "batch", openai),
    ("POST", r"/v1/batches/(?P<param>[^/]+)/cancel", "batch_cancel", openai),
    ("POST", re.escape("/v1/messages/batches"), "batches", anthropic),
    ("GET", re.escape("/v1/messages/batches"), "batches", anthropic),
    ("GET", r"/v1/messages/batches/(?P<param>[^/]+)", "batch", anthropic),
    ("DELETE", r"/v1/messages/batches/(?P<param>[^/]+)", "batch", anthropic),
    ("POST", r"/v1/messages/batches/(?P<param>[^/]+)/cancel", "batch_cancel", anthropic),
    ("GET", r"/v1/messages/batches/(?P<param>[^/]+)/results", "batch_results", anthropic),
    # Ollama beside its chat and generate; an ``answer`` is a small one its protocol makes from the path's word.
    ("POST", re.escape(ollama.EMBED_PATH), "embeddings", ollama),
    ("POST", re.escape(ollama.EMBEDDINGS_PATH), "embeddings", ollama),
    ("GET", re.escape("/api/tags"), "models", ollama),
    ("POST", r"/api/(?P<param>show)", "answer", ollama),
    ("GET", r"/api/(?P<param>ps)", "answer", ollama),
    ("GET", r"/api/(?P<param>version)", "answer", ollama),
    # OpenRouter: OpenAI's protocol with its extras.
    ("POST", re.escape(openrouter.PATH), "play", openrouter),
    ("GET", re.escape("/api/v1/models"), "models", openrouter),
    # OpenAI's images, played like a chat (a turn's image fixture, else drawn from the prompt), its speech and image
    # files (answers drawn from the request), and its transcriptions, played like a chat.
    ("POST", r"/v1/images/(?P<param>generations)", "play", media),
    ("GET", r"/v1/images/files/(?P<param>[^/]+)", "answer", media),
    ("POST", r"/v1/audio/(?P<param>speech)", "answer", media),
    ("POST", r"/v1/audio/(?P<param>transcriptions)", "play", transcription),
    ("POST", r"/v1/audio/(?P<param>translations)", "play", transcription),
)


def _shown(pattern: str) -> str:
    """A route's pattern as people read it: ``/v1/models/{id}``."""
    shown = re.sub(r"\(\?P<param>([a-z]+)\)", r"\1", pattern)  # a param that is one word: Ollama's /api/show
    shown = re.sub(r"\(\?P<param>[^)]*\)", "{id}", shown)
    shown = re.sub(r"\(\?:([^)]*)\)", lambda m: m.group(1).split("|")[-1], shown)
    shown = re.sub(r"\(\?P<method>([^)]*)\)", lambda m: m.group(1).split("|")[0], shown)
    shown = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", shown)  # Vertex's {project}, {location}
    return shown.replace("\\", "")


SERVED = tuple(f"{method} {_shown(pattern)}" for method, pattern, *_ in _TABLE)
_COMPILED = tuple((method, re.compile(pattern), kind, protocol) for method, pattern, kind, protocol in _TABLE)


def template(method: str, path: str) -> str:
    """The served route a request matches, as people read it (``GET /v1/models/{id}``), or ``"other"``: a label
    that stays one of a few (a metric's), whatever ids the paths hold."""
    path = _unprefixed(path.rstrip("/") or "/")
    shown = (
        s for (m, pattern, *_), s in zip(_COMPILED, SERVED, strict=True) if m == method and pattern.fullmatch(path)
    )
    return next(shown, "other")


def play_wire(path: str) -> ModuleType | None:
    """The protocol a path's requests are played in (its ``play`` route's), or None: how a recorded request is read
    back (the run page, the judge's transcript, a cassette's protocol)."""
    path = _unprefixed(path.rstrip("/") or "/")
    return next((p for _, pattern, kind, p in _COMPILED if kind == "play" and pattern.fullmatch(path)), None)


BATCH_KINDS = frozenset({"files", "file", "file_content", "batches", "batch", "batch_cancel", "batch_results"})
BATCH_PREFIXES = ("/v1/files", "/v1/batches", "/v1/messages/batches")


def is_batch_path(path: str) -> bool:
    """Whether a provider path is the Files or Batch APIs' (their own consumer answers it): a prefix test, as the
    ASGI router's hot path takes; the route table says the rest."""
    return path.startswith(BATCH_PREFIXES)


def is_provider_path(path: str) -> bool:
    """Whether a path belongs to the fake provider (the ASGI router sends it here, not to Django)."""
    if path.startswith(PREFIXES) or path.rstrip("/") in ("/v1", "/v1beta"):
        return True
    return path.startswith(SHARED_PREFIXES) or path.rstrip("/") in OLLAMA_PATHS


def _unprefixed(path: str) -> str:
    """Ollama's paths under ``/ollama`` (a host given with a path keeps it) are its paths."""
    return path.removeprefix(ollama.PREFIX) if path.startswith(ollama.PREFIX + "/api/") else path


def error_wire(path: str, headers: Mapping[str, str]) -> ModuleType:
    """The protocol whose format a request expects (of its errors, and of a model list): Google's under
    ``/v1beta/``, for a ``models/…:method`` path or from a Google client (``/v1/models`` is both OpenAI's and
    Gemini's), Anthropic's when it says ``anthropic-version`` or calls a Messages path, Azure's under ``/openai/``,
    else OpenAI's. On Vertex AI's paths (``/projects/…``), Anthropic's for Claude's publisher, else Google's.
    Cohere's under ``/v2/`` or from its SDK (``X-Fern-SDK-Name: cohere``: its models are listed under ``/v1/``).
    Amazon Bedrock's under ``/model/``. OpenRouter's under ``/api/v1/``, Ollama's under ``/api/`` and ``/ollama/``."""
    if path.startswith("/api/v1/"):
        return openrouter
    if path.startswith(("/api/", "/ollama/")):
        return ollama
    if re.match(r"/v1(?:beta1)?/projects/", path):
        return vertex_claude if "/publishers/anthropic/" in path else vertex
    if path.startswith("/v2/") or headers.get("x-fern-sdk-name") == "cohere":  # Cohere's API, or its SDK
        return cohere
    if path.startswith("/model/"):  # Amazon Bedrock's runtime: Converse and InvokeModel alike
        return bedrock
    if path.startswith("/harness/"):  # the harness's own protocol (the npm package's AI SDK provider)
        return harness
    google_client = "x-goog-api-key" in headers or "x-goog-api-client" in headers
    if path.startswith("/v1beta/") or re.match(r"/v1/models/[^/]+:", path) or google_client:
        return gemini
    if "anthropic-version" in headers or path.startswith(anthropic.PATH):
        return anthropic
    if path.startswith("/openai/"):
        return azure
    return openai


def resolve(method: str, path: str, headers: Mapping[str, str], query: str = "") -> Route | Refusal:
    """The route for a request (``query`` its query string), or why it has none."""
    path = _unprefixed(path.rstrip("/") or "/")
    allowed = []
    for route_method, pattern, kind, protocol in _COMPILED:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        if route_method != method:
            allowed.append(route_method)
            continue
        groups = match.groupdict()
        param = groups.pop("param", None) or ""
        fields = (
            tuple(protocol.path_fields(param, **groups, query=parse_qs(query)).items())
            if kind == "play" and hasattr(protocol, "path_fields")
            else ()
        )
        if kind in ("answer", "play") and hasattr(protocol, "answer_fields"):  # what it reads of the headers (a host)
            fields = (*fields, *protocol.answer_fields(headers).items())
        # Azure's gateway reads Azure's keys on every route under /openai/, whatever protocol the route plays.
        keys = azure if path.startswith("/openai/") else None
        return Route(kind, protocol or error_wire(path, headers), param, fields, keys)
    if allowed:
        message = f"Method {method} not allowed on {path}; use {' or '.join(allowed)}"
        return Refusal(405, message, error_wire(path, headers))
    near = nearest(path, SERVED)
    hint = f" Did you mean {near}?" if near else ""
    served = "; ".join(SERVED)
    message = f"Nothing is served at {method} {path}.{hint} Served here: {served}"
    return Refusal(404, message, error_wire(path, headers))


def nearest(path: str, served: Sequence[str], cutoff: float = 0.8) -> str | None:
    """The served route (``"METHOD /shown/{param}"``) whose path a mistyped ``path`` comes closest to, or None when
    none is close: ``/v1/chat/completion`` → ``POST /v1/chat/completions``. A ``{param}`` matches whatever the path
    has in its place, so ``/v1/model/gpt-4o`` is near ``GET /v1/models/{id}``."""
    asked = path.strip("/").split("/")
    best, best_ratio = None, cutoff
    for route in served:
        shown = route.partition(" ")[2].strip("/").split("/")
        if abs(len(shown) - len(asked)) > 1:
            continue
        # The path with each segment a {param} stands for put as the route shows it (a Gemini model before ":").
        aligned = [_as_shown(segment, pattern) for segment, pattern in zip(asked, shown, strict=False)]
        ratio = difflib.SequenceMatcher(None, "/".join(aligned + asked[len(shown) :]), "/".join(shown)).ratio()
        if ratio > best_ratio:
            best, best_ratio = route, ratio
    return best


def _as_shown(segment: str, pattern: str) -> str:
    if not pattern.startswith("{"):
        return segment
    param, _brace, action = pattern.partition("}")
    _, colon, asked = segment.partition(":")
    if action.startswith(":"):  # {id}:generateContent: the model is what comes before the colon
        return f"{param}}}:{asked}" if colon else segment
    return f"{param}}}" if not action and not colon else segment
