"""OpenRouter (``POST /api/v1/chat/completions``, ``GET /api/v1/models``), as the ``openai`` SDK given OpenRouter's
base URL and litellm's ``openrouter/`` call it: OpenAI's Chat Completions protocol, parsed and encoded by
:mod:`~harnessweb.engine.wire.openai` (the request stays an ``openai`` one; its ``family`` says OpenRouter), with
OpenRouter's extras. Pure.

The extras: ``provider`` routing preferences, ``models`` (fallbacks), ``transforms`` and ``usage`` are checked and
accepted (kept with the request's other parameters); the answer names its ``provider``; its ``usage`` carries
``cost`` (USD, from the shipped price table over genai-prices' list, :mod:`harnessweb.engine.pricing`; ``null``
for a model neither prices), ``is_byok`` and the token details, as OpenRouter always sends them; ``usage: {"include":
true}`` also adds the usage chunk to a stream, as ``stream_options.include_usage`` does. Errors are OpenRouter's
``{"error": {"code": status, "message", "metadata"}}``. The ``X-Title`` and ``HTTP-Referer`` headers an app names
itself with are recorded with the request's other headers.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any

import orjson

from harnessweb.engine import tokens
from harnessweb.engine.exchange import ChatRequest, Failure, Reply
from harnessweb.engine.price_catalog import catalog_price
from harnessweb.engine.pricing import PriceTable, cost_of, read_prices
from harnessweb.engine.wire import openai
from harnessweb.engine.wire.common import (
    CREATED,
    JSON_HEADERS,
    Encoded,
    WireError,
    dumps,
    failure_http_status,
    retry_headers,
)

PROTOCOL = "openrouter"
LABEL = "OpenRouter"
PATH = "/api/v1/chat/completions"
REQUEST_ID_HEADER = openai.REQUEST_ID_HEADER
PROVIDER = "Harness"  # the upstream provider an answer names
malformed = openai.malformed
_PREFERENCES = {"order": list, "only": list, "ignore": list, "quantizations": list, "allow_fallbacks": bool,
                "require_parameters": bool, "data_collection": str, "sort": str, "max_price": dict,
                "zdr": bool}  # fmt: skip


def _check(body: dict[str, Any]) -> None:
    """OpenRouter's own fields, each of its type (a preference it does not know is accepted, as OpenRouter does)."""
    provider = body.get("provider")
    if provider is not None:
        if not isinstance(provider, dict):
            raise WireError("provider must be an object", "provider")
        for name, kind in _PREFERENCES.items():
            if provider.get(name) is not None and not isinstance(provider[name], kind):
                raise WireError(f"provider.{name} must be a {kind.__name__}", f"provider.{name}")
    for name in ("models", "transforms"):
        value = body.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise WireError(f"{name} must be an array of strings", name)
    usage = body.get("usage")
    if usage is not None and not (isinstance(usage, dict) and isinstance(usage.get("include", False), bool)):
        raise WireError("usage must be an object whose include is a boolean", "usage.include")


def parse_request(body: Any) -> ChatRequest:
    """Read a Chat Completions body with OpenRouter's extras; raises WireError naming the bad field."""
    request = openai.parse_request(body)
    _check(body)
    asked_usage = isinstance(body.get("usage"), dict) and body["usage"].get("include") is True
    return replace(request, include_usage=request.include_usage or asked_usage)


@cache
def _prices() -> PriceTable:
    return PriceTable(read_prices().rows(), fallback=catalog_price)


def cost(model: str, usage: dict[str, Any]) -> float | None:
    """What an answer costs in USD, or None when no price names its model (OpenRouter's ``vendor/model`` ids are
    priced by the model's own name too: ``openai/gpt-4o`` as ``gpt-4o``)."""
    for name in (model, model.partition("/")[2]):
        if name and _prices().find(name) is not None:
            usd = cost_of(name, usage, _prices()).usd
            return float(usd.quantize(Decimal("1e-12"))) if usd is not None else None
    return None


def _usage(usage: dict[str, Any], model: str, reply: Reply) -> dict[str, Any]:
    return {
        **usage,
        "cost": cost(model, usage),
        "is_byok": False,
        "prompt_tokens_details": {"cached_tokens": 0},
        "cost_details": {"upstream_inference_cost": None},
        "completion_tokens_details": {"reasoning_tokens": tokens.count(reply.reasoning)},
    }


@lru_cache(maxsize=1024)
def _encoded(reply: Reply, model: str, stream: bool, include_usage: bool, logprobs: int | None) -> Encoded:
    request = ChatRequest(openai.PROTOCOL, model, stream=stream, include_usage=include_usage, logprobs=logprobs)
    encoded = openai.encode_reply(reply, request)
    if not stream:
        body = orjson.loads(encoded.body)
        body = {**body, "provider": PROVIDER, "usage": _usage(body["usage"], model, reply)}
        return replace(encoded, frames=(dumps(body),))
    frames = list(encoded.frames)
    for i, frame in enumerate(frames[:-1]):  # every chunk but [DONE]
        chunk = orjson.loads(frame.removeprefix(b"data: "))
        chunk["provider"] = PROVIDER
        if chunk.get("usage"):
            chunk["usage"] = _usage(chunk["usage"], model, reply)
        frames[i] = b"data: " + dumps(chunk) + b"\n\n"
    return replace(encoded, frames=tuple(frames))


def encode_reply(reply: Reply, request: ChatRequest) -> Encoded:
    """OpenAI's answer with OpenRouter's fields: the ``provider`` on each object, ``cost`` in the usage; cached, since
    a turn's bytes never change."""
    return _encoded(reply, request.model, request.stream, request.include_usage, request.logprobs)


def encode_error(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    request_id: str = "",
) -> Encoded:
    """An error in OpenRouter's format: ``{"error": {"code": status, "message", "metadata"}}`` (the field it names
    in ``metadata.param``)."""
    metadata = {key: value for key, value in (("param", param), ("error_code", code)) if value}
    error: dict[str, Any] = {"code": status, "message": message, "metadata": metadata or None, **(extra or {})}
    return Encoded(status, JSON_HEADERS + headers, (dumps({"error": error}),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as OpenRouter sends it, with the retry headers a scenario gives."""
    headers = list(retry_headers(failure))
    return encode_error(failure_http_status(failure), failure.message, extra=failure.error, headers=tuple(headers))


def _model(model_id: str) -> dict[str, Any]:
    price = _prices().find(model_id) or _prices().find(model_id.partition("/")[2])
    per_token = {"prompt": "0", "completion": "0"}
    if price is not None:
        per_token = {"prompt": str(price.input / 1_000_000), "completion": str(price.output / 1_000_000)}
    return {
        "id": model_id,
        "canonical_slug": model_id,
        "name": model_id,
        "created": CREATED,
        "description": "A scenario of the harness.",
        "context_length": 131072,
        "architecture": {
            "modality": "text->text",
            "input_modalities": ["text"],
            "output_modalities": ["text"],
            "tokenizer": "Other",
            "instruct_type": None,
        },  # fmt: skip
        "pricing": per_token,
        "top_provider": {"context_length": 131072, "max_completion_tokens": None, "is_moderated": False},
        "per_request_limits": None,
        "supported_parameters": [
            "tools",
            "tool_choice",
            "response_format",
            "structured_outputs",
            "reasoning",
            "max_tokens",
            "stop",
            "temperature",
            "top_p",
        ],  # fmt: skip
    }


def encode_model(model_id: str) -> Encoded:
    """One model, as ``/api/v1/models`` lists it."""
    return Encoded(200, JSON_HEADERS, (dumps({"data": _model(model_id)}),))


def encode_models(ids: list[str]) -> Encoded:
    """``GET /api/v1/models``: ``{"data": [...]}``, one per scenario (the harness answers any name)."""
    return Encoded(200, JSON_HEADERS, (dumps({"data": [_model(i) for i in ids]}),))
