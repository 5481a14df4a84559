"""OpenAI embeddings (``POST /v1/embeddings``): deterministic unit vectors from the input text, the same on every
machine and run, so a retrieval test ranks documents the same way every time.

A vector is SHA-256 in counter mode over the text, read as 32-bit integers mapped to [-1, 1], normalised to length
1 and rounded to float32: what ``encoding_format: base64`` carries (little-endian), which the ``openai`` SDK asks
for by default. Pure.
"""

from __future__ import annotations

import array
import base64
import hashlib
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harnessweb.engine.wire.common import JSON_HEADERS, Encoded, WireError, dumps

DEFAULT_DIMENSIONS = 1536
MAX_DIMENSIONS = 8192
MAX_INPUTS = 2048


@dataclass(frozen=True)
class EmbeddingRequest:
    model: str
    inputs: tuple[str, ...]
    dimensions: int
    encoding_format: str  # "float" or "base64"


def _text(item: Any, where: str) -> str:
    if isinstance(item, str):
        return item
    # Token arrays: the ids stand for the text they encode; the same ids give the same vector.
    if isinstance(item, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in item):
        return " ".join(map(str, item))
    raise WireError(f"{where} must be a string or an array of token ids", where)


def parse_request(body: Any) -> EmbeddingRequest:
    """Read an embeddings body; raises WireError naming the bad field."""
    if not isinstance(body, dict):
        raise WireError("The request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise WireError("you must provide a model parameter", "model")
    raw = body.get("input")
    if isinstance(raw, str) or (isinstance(raw, list) and raw and all(isinstance(t, int) for t in raw)):
        inputs = (_text(raw, "input"),)
    elif isinstance(raw, list) and raw:
        inputs = tuple(_text(item, f"input[{i}]") for i, item in enumerate(raw))
    else:
        raise WireError("input must be a string or a non-empty array", "input")
    if len(inputs) > MAX_INPUTS:
        raise WireError(f"input must have at most {MAX_INPUTS} items", "input")
    if any(text == "" for text in inputs):
        raise WireError("input must not contain empty strings", "input")
    dimensions = body.get("dimensions", DEFAULT_DIMENSIONS)
    if dimensions is None:
        dimensions = DEFAULT_DIMENSIONS
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 1 <= dimensions <= MAX_DIMENSIONS:
        raise WireError(f"dimensions must be an integer from 1 to {MAX_DIMENSIONS}", "dimensions")
    encoding_format = body.get("encoding_format") or "float"
    if encoding_format not in ("float", "base64"):
        raise WireError("encoding_format must be 'float' or 'base64'", "encoding_format")
    return EmbeddingRequest(model, inputs, dimensions, encoding_format)


@lru_cache(maxsize=4096)
def vector(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> tuple[float, ...]:
    """The unit vector of ``text`` (float32 values), the same on every machine."""
    seed = hashlib.sha256(text.encode("utf-8")).digest()
    words = []
    counter = 0
    while len(words) < dimensions:
        block = hashlib.sha256(seed + counter.to_bytes(4, "little")).digest()
        words.extend(struct.unpack("<8I", block))
        counter += 1
    raw = [w / 0x7FFFFFFF - 1.0 for w in words[:dimensions]]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return tuple(array.array("f", (x / norm for x in raw)))


def tokens(text: str) -> int:
    """The tokens an input counts for in usage: its words (at least one)."""
    return max(1, len(text.split()))


def pinned_vector(text: str, dimensions: int, pins: Mapping[str, Any]) -> tuple[float, ...]:
    """The vector a scenario pins for ``text`` (its own, or the deterministic one of the text it is ``same_as``),
    else the deterministic one."""
    pin = pins.get(text)
    if pin is None:
        return vector(text, dimensions)
    if pin.same_as is not None:
        return pinned_vector(pin.same_as, dimensions, {k: v for k, v in pins.items() if k != text})
    return tuple(array.array("f", pin.vector))


def encode_embeddings(request: EmbeddingRequest, pins: Mapping[str, Any] | None = None) -> Encoded:
    """The ``list`` of ``embedding`` objects, in input order, with usage; ``pins`` are the scenarios' pinned
    vectors by input text (an authored vector is sent as authored, whatever ``dimensions`` asks)."""
    data = []
    for index, text in enumerate(request.inputs):
        values = pinned_vector(text, request.dimensions, pins or {})
        if request.encoding_format == "base64":
            embedding: Any = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
        else:
            embedding = list(values)
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    used = sum(tokens(text) for text in request.inputs)
    body = {
        "object": "list",
        "data": data,
        "model": request.model,
        "usage": {"prompt_tokens": used, "total_tokens": used},
    }
    return Encoded(200, JSON_HEADERS, (dumps(body),))
