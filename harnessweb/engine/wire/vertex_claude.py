"""Claude on Vertex AI: Anthropic's Messages (:mod:`~harnessweb.engine.wire.anthropic`'s parser and encoders) at
Vertex's path, ``POST /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict``
and ``:streamRawPredict`` (and under ``/v1beta1/``), as ``anthropic.AnthropicVertex`` calls them. Pure.

The path names the model (``claude-sonnet-4@20250514``), the body none; the body carries ``anthropic_version``
(``vertex-2023-10-16``) in place of the ``anthropic-version`` header, and says whether to stream. Vertex reads an
OAuth access token (``Authorization: Bearer``); errors take Anthropic's format. The route table serves
``count-tokens:rawPredict`` beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.wire import anthropic
from harnessweb.engine.wire.anthropic import (
    REQUEST_ID_HEADER,
    answer_id,
    continued,
    encode_error,
    encode_failure,
    encode_model,
    encode_models,
    encode_reply,
    encode_unknown_answer,
    malformed,
    response_object,
)
from harnessweb.engine.wire.common import WireError

__all__ = ["REQUEST_ID_HEADER", "answer_id", "continued", "encode_error", "encode_failure", "encode_model",
           "encode_models", "encode_reply", "encode_unknown_answer", "malformed", "response_object"]  # fmt: skip

PROTOCOL = "vertex_claude"
LABEL = "Claude on Vertex AI"
PATH = "/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict"
_MODELS = r"/(?:v1beta1|v1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/publishers/anthropic/models/"
PATH_PATTERN = _MODELS + r"(?P<param>[^/:]+):(?P<method>rawPredict|streamRawPredict)"
COUNT_TOKENS_PATTERN = _MODELS + "count-tokens:rawPredict"  # ``messages.count_tokens``: Anthropic's count_tokens body


def parse_request(body: Any) -> ChatRequest:
    """A Messages body with ``anthropic_version`` and whatever ``model`` it carries (the path names the model: see
    :func:`path_fields`); raises WireError naming the bad field."""
    if isinstance(body, dict):
        version = body.get("anthropic_version")
        if not isinstance(version, str) or not version:
            raise WireError("anthropic_version: Field required", "anthropic_version")
        body = {**body, "model": "-"}  # a stand-in the path's model replaces
    return replace(anthropic.parse_request(body), protocol=PROTOCOL, model="")


def path_fields(model: str, method: str, project: str, location: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The model is the path's; the body says whether to stream (``streamRawPredict`` is where clients send it)."""
    return {"model": model}
