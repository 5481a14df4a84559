"""Cohere's v2 Embed (``POST /v2/embed``), as the ``cohere`` SDK's ``ClientV2.embed`` calls it: ``texts`` (or
``images``, or ``inputs``) in, ``{"id", "embeddings": {type: [[...]]}, "texts", "meta"}`` out, with each of the
``embedding_types`` asked for (``float``, ``int8``, ``uint8``, ``binary``, ``ubinary``, ``base64``) made from the same
deterministic unit vectors as OpenAI's embeddings (:mod:`harnessweb.engine.wire.embeddings`). Its errors are
Cohere's (:mod:`harnessweb.engine.wire.cohere` serves this route). Pure.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

from harnessweb.engine.exchange import short_id
from harnessweb.engine.wire import embeddings
from harnessweb.engine.wire.common import JSON_HEADERS, Encoded, WireError, dumps

PATH = "/v2/embed"
EMBEDDING_TYPES = ("float", "int8", "uint8", "binary", "ubinary", "base64")
INPUT_TYPES = ("search_document", "search_query", "classification", "clustering", "image")
OUTPUT_DIMENSIONS = (256, 512, 1024, 1536)
MAX_TEXTS = 96


def invalid(message: str, param: str) -> WireError:
    """Cohere's own wording: ``invalid request: …``, naming the field."""
    return WireError(f"invalid request: {message}", param)


def uuid_of(seed: str) -> str:
    """A UUID, as Cohere's ids are, derived from ``seed``."""
    h = short_id(seed, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@dataclass(frozen=True)
class EmbedRequest(embeddings.EmbeddingRequest):
    """An Embed body: the texts (or images, or inputs) to embed, and the ``embedding_types`` wanted."""

    types: tuple[str, ...] = ("float",)


def _dimensions(model: str, asked: Any) -> int:
    if asked is None:  # each model's own: Embed v4's 1536, the v3 models' 1024 (384 for their light ones)
        return 1536 if "v4" in model else 384 if "light" in model else 1024
    if not isinstance(asked, int) or isinstance(asked, bool) or asked not in OUTPUT_DIMENSIONS:
        raise invalid(f"output_dimension must be one of {', '.join(map(str, OUTPUT_DIMENSIONS))}", "output_dimension")
    return asked


def _inputs(body: dict[str, Any]) -> tuple[str, ...]:
    """What to embed: ``texts``, ``images`` (data URIs, each embedded by its text) or ``inputs`` (each the joined
    text of its content items)."""
    for name in ("texts", "images"):
        raw = body.get(name)
        if raw is not None:
            if not isinstance(raw, list) or not raw or not all(isinstance(t, str) and t for t in raw):
                raise invalid(f"{name} must be a non-empty list of non-empty strings", name)
            return tuple(raw)
    raw = body.get("inputs")
    if not isinstance(raw, list) or not raw:
        raise invalid("one of texts, images or inputs must be a non-empty list", "texts")
    found = []
    for i, item in enumerate(raw):
        content = item.get("content") if isinstance(item, dict) else None
        if not isinstance(content, list) or not content:
            raise invalid(f"inputs[{i}].content must be a non-empty list", f"inputs[{i}].content")
        parts = [c.get("text") or (c.get("image_url") or {}).get("url") for c in content if isinstance(c, dict)]
        if not all(isinstance(p, str) and p for p in parts) or len(parts) != len(content):
            raise invalid(f"inputs[{i}].content items must be text or image_url", f"inputs[{i}].content")
        found.append("\n".join(parts))
    return tuple(found)


def parse_embeddings(body: Any) -> EmbedRequest:
    """Read an Embed body; raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("invalid request: the body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model must be a non-empty string", "model")
    if body.get("input_type") not in INPUT_TYPES:
        raise invalid(f"input_type must be one of {', '.join(INPUT_TYPES)}", "input_type")
    inputs = _inputs(body)
    if len(inputs) > MAX_TEXTS:
        raise invalid(f"at most {MAX_TEXTS} texts may be embedded in one call", "texts")
    types = body.get("embedding_types") or ["float"]
    if not isinstance(types, list) or not all(t in EMBEDDING_TYPES for t in types):
        raise invalid(f"embedding_types must be a list of {', '.join(EMBEDDING_TYPES)}", "embedding_types")
    return EmbedRequest(model, inputs, _dimensions(model, body.get("output_dimension")), "float", tuple(types))


def _as(kind: str, values: tuple[float, ...]) -> Any:
    """One vector as an embedding type: the floats; int8/uint8 scaled to their range; binary/ubinary one bit per
    dimension (positive: 1), packed eight to a byte; base64 the float32 bytes, little-endian."""
    if kind == "float":
        return list(values)
    if kind in ("int8", "uint8"):
        scale = 127 / (max(map(abs, values), default=0.0) or 1.0)
        signed = [max(-128, min(127, round(v * scale))) for v in values]
        return signed if kind == "int8" else [v + 128 for v in signed]
    if kind in ("binary", "ubinary"):
        bits = [1 if v > 0 else 0 for v in values]
        packed = [int("".join(map(str, bits[i : i + 8])).ljust(8, "0"), 2) for i in range(0, len(bits), 8)]
        return packed if kind == "ubinary" else [b - 128 for b in packed]
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def encode_embeddings(request: EmbedRequest, pins: Any = None) -> Encoded:
    """``{"id", "embeddings": {type: [...]}, "texts", "meta"}``, in input order; ``pins`` are the scenarios' pinned
    vectors by input text (an authored vector is sent as authored)."""
    vectors = [embeddings.pinned_vector(text, request.dimensions, pins or {}) for text in request.inputs]
    used = sum(embeddings.tokens(text) for text in request.inputs)
    body = {
        "id": uuid_of("\x1e".join((request.model, *request.inputs))),
        "embeddings": {kind: [_as(kind, v) for v in vectors] for kind in request.types},
        "texts": list(request.inputs),
        "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": used}},
        "response_type": "embeddings_by_type",
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))
