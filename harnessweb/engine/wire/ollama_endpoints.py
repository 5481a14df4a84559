"""Ollama's endpoints beside chat and generate, as the ``ollama`` package calls them: ``POST /api/embed`` (``input``:
a string or a list, ``{"model", "embeddings", ...}`` back) and the older ``POST /api/embeddings`` (``prompt``,
``{"embedding"}`` back), with the same deterministic unit vectors as OpenAI's embeddings
(:mod:`harnessweb.engine.wire.embeddings`, a scenario's pinned ones first); ``GET /api/tags`` (the models, one per
scenario), ``POST /api/show`` (any model: the harness answers every name), ``GET /api/ps`` (nothing loaded) and
``GET /api/version``. Their errors are Ollama's (:mod:`harnessweb.engine.wire.ollama` serves these routes). Pure.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import orjson

from harnessweb.engine.exchange import short_id
from harnessweb.engine.wire import embeddings
from harnessweb.engine.wire.common import CREATED, Encoded, WireError, dumps

EMBED_PATH = "/api/embed"
EMBEDDINGS_PATH = "/api/embeddings"  # the older one
VERSION = "0.13.0"  # what GET /api/version says
DEFAULT_DIMENSIONS = 768  # nomic-embed-text's, the model Ollama's docs embed with
CREATED_AT = dt.datetime.fromtimestamp(CREATED, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
JSON_HEADERS = ((b"content-type", b"application/json; charset=utf-8"),)
NDJSON_HEADERS = ((b"content-type", b"application/x-ndjson"),)
LOAD_NS, PROMPT_TOKEN_NS = 1_000_000, 1_000_000  # a model load; each token of a prompt (as the chat's counts)
_DETAILS = {
    "parent_model": "",
    "format": "gguf",
    "family": "harness",
    "families": ["harness"],
    "parameter_size": "8B",
    "quantization_level": "Q4_K_M",
}


@dataclass(frozen=True)
class OllamaEmbedRequest(embeddings.EmbeddingRequest):
    """An embed body (``input``), or the older embeddings body (``prompt``: ``legacy``)."""

    legacy: bool = False


def _inputs(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return (raw,) if raw else ()  # Ollama loads the model for an empty input and embeds nothing
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return tuple(raw)
    raise WireError("input must be a string or an array of strings", "input")


def parse_embeddings(body: Any) -> OllamaEmbedRequest:
    """Read an embed body (``input``) or the older embeddings body (``prompt``); raises WireError naming the bad
    field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("model is required", "model")
    dimensions = body.get("dimensions")
    if dimensions is None:
        dimensions = DEFAULT_DIMENSIONS
    elif (
        isinstance(dimensions, bool)
        or not isinstance(dimensions, int)
        or not 1 <= dimensions <= embeddings.MAX_DIMENSIONS
    ):
        raise WireError(f"dimensions must be an integer from 1 to {embeddings.MAX_DIMENSIONS}", "dimensions")
    if "input" in body:
        return OllamaEmbedRequest(model, _inputs(body["input"]), dimensions, "float")
    if "prompt" in body:
        prompt = body["prompt"]
        if not isinstance(prompt, str):
            raise WireError("prompt must be a string", "prompt")
        return OllamaEmbedRequest(model, (prompt,) if prompt else (), dimensions, "float", legacy=True)
    raise WireError("input is required", "input")


def encode_embeddings(request: OllamaEmbedRequest, pins: Any = None) -> Encoded:
    """``{"model", "embeddings": [[...]], "total_duration", "load_duration", "prompt_eval_count"}`` in input order
    (the older endpoint: ``{"embedding": [...]}``); ``pins`` are the scenarios' pinned vectors by input text."""
    vectors = [list(embeddings.pinned_vector(text, request.dimensions, pins or {})) for text in request.inputs]
    if request.legacy:
        return Encoded(200, JSON_HEADERS, (dumps({"embedding": vectors[0] if vectors else []}),))
    used = sum(embeddings.tokens(text) for text in request.inputs)
    body = {
        "model": request.model,
        "embeddings": vectors,
        "total_duration": LOAD_NS + used * PROMPT_TOKEN_NS,
        "load_duration": LOAD_NS,
        "prompt_eval_count": used,
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def _listed(model_id: str) -> dict[str, Any]:
    """One model as ``/api/tags`` lists it (a digest of its name, a size that never changes)."""
    return {
        "name": model_id,
        "model": model_id,
        "modified_at": CREATED_AT,
        "size": 4_920_753_328,
        "digest": short_id(model_id, 64),
        "details": _DETAILS,
    }


def encode_models(ids: list[str]) -> Encoded:
    """``GET /api/tags``: ``{"models": [...]}``, one per scenario (the harness answers any name)."""
    return Encoded(200, JSON_HEADERS, (dumps({"models": [_listed(i) for i in ids]}),))


def encode_model(model_id: str) -> Encoded:
    """``POST /api/show``'s answer: the same for every model (the harness answers any name), saying it can chat,
    call tools and think."""
    body = {
        "license": "",
        "modelfile": f"# Modelfile served by the scenario harness\nFROM {model_id}\n",
        "parameters": "",
        "template": "{{ .Prompt }}",
        "details": _DETAILS,
        "model_info": {
            "general.architecture": "harness",
            "general.parameter_count": 8_000_000_000,
            "harness.context_length": 131072,
            "harness.embedding_length": DEFAULT_DIMENSIONS,
        },
        "capabilities": ["completion", "tools", "thinking"],
        "modified_at": CREATED_AT,
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))


def encode_answer(param: str, body: bytes) -> Encoded:
    """The small answers the path names: ``show`` (its body's ``model`` is required), ``ps`` and ``version``;
    raises WireError naming the bad field."""
    if param == "version":
        return Encoded(200, JSON_HEADERS, (dumps({"version": VERSION}),))
    if param == "ps":
        return Encoded(200, JSON_HEADERS, (b'{"models":[]}',))
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise WireError(f"The request body is not valid JSON: {exc}") from None
    model = payload.get("model") or payload.get("name") if isinstance(payload, dict) else None
    if not isinstance(model, str) or not model:
        raise WireError("model is required", "model")
    return encode_model(model)
