"""Gemini on Vertex AI: Gemini's protocol (:mod:`~harnessweb.engine.wire.gemini`'s parser and encoders) at Vertex's
path, ``POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`` and
``:streamGenerateContent`` (``?alt=sse``), and the same under ``/v1beta1/``, which google-genai calls by default with
``vertexai=True``. Pure.

The model and whether to stream come from the path, as on Gemini's own. Vertex reads an OAuth access token
(``Authorization: Bearer``) where Gemini reads an API key; its errors take Google's format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.wire import gemini
from harnessweb.engine.wire.gemini import (
    REQUEST_ID_HEADER,
    encode_error,
    encode_failure,
    encode_model,
    encode_models,
    encode_reply,
    malformed,
)

__all__ = ["REQUEST_ID_HEADER", "encode_error", "encode_failure", "encode_model", "encode_models", "encode_reply",
           "malformed"]  # fmt: skip

PROTOCOL = "vertex"
LABEL = "Vertex AI Gemini"
PATH = "/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent"
# Both API versions (google-genai calls v1beta1), both methods: the model is a path segment, the method after its colon.
PATH_PATTERN = (
    r"/(?:v1beta1|v1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
    r"/publishers/google/models/(?P<param>[^/:]+):(?P<method>generateContent|streamGenerateContent)"
)


def parse_request(body: Any) -> ChatRequest:
    """A generateContent body, read by Gemini's parser (the path names the model: see :func:`path_fields`)."""
    return replace(gemini.parse_request(body), protocol=PROTOCOL)


def path_fields(model: str, method: str, project: str, location: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The model, whether to stream and how, as on Gemini's path (the project and location answer nothing)."""
    return gemini.path_fields(model, method, query)
