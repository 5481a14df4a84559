"""Azure OpenAI's chat completions: OpenAI's protocol, served at ``/openai/deployments/{deployment}/chat/completions``
(with its ``?api-version=``), where the deployment names the model (Azure's bodies carry none). The ``openai`` SDK's
``AzureOpenAI`` client calls it.

Its errors take Azure's format, ``{"error": {"code", "message"}}``. The route table serves Azure's embeddings
(``/openai/deployments/{deployment}/embeddings``) and its v1 routes (``/openai/v1/chat/completions``,
``/openai/v1/responses``: OpenAI's protocols with the model in the body) beside it, and a deployment's legacy
``/completions`` is a wire of its own (:mod:`harnessweb.engine.wire.azure_completions`). The key is read from the
``api-key`` header or an Entra bearer token (``Authorization``); when keys must arrive, a request with neither gets
Azure's 401 (:mod:`harnessweb.engine.keys`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessweb.engine.exchange import ChatRequest, Failure
from harnessweb.engine.wire import openai
from harnessweb.engine.wire.common import JSON_HEADERS, Encoded, dumps, failure_http_status, retry_headers
from harnessweb.engine.wire.openai import REQUEST_ID_HEADER, encode_model, encode_models, encode_reply, malformed

__all__ = ["REQUEST_ID_HEADER", "encode_model", "encode_models", "encode_reply", "malformed"]

PROTOCOL = "azure"
LABEL = "Azure OpenAI"
PATH = "/openai/deployments/{deployment}/chat/completions"
PATH_PATTERN = r"/openai/deployments/(?P<param>[^/]+)/chat/completions"


def parse_request(body: Any) -> ChatRequest:
    """A Chat Completions body, whatever ``model`` it carries (clients send the deployment's name, or null): the
    path names the model."""
    if isinstance(body, dict):
        body = {key: value for key, value in body.items() if key != "model"}
    return openai.parse_request(body)


def path_fields(deployment: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The deployment is the model: the body names none."""
    return {"model": deployment, "model_missing": False}


# Azure's codes where they are not the status itself (as its recorded errors carry them).
_CODES = {400: "BadRequest", 404: "DeploymentNotFound", 500: "InternalServerError"}


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
    """An error in Azure's format, ``{"error": {"code", "message"}}`` (``param`` is named in the message, as Azure's
    own errors do)."""
    error: dict[str, Any] = {"code": code or _CODES.get(status, str(status)), "message": message}
    if param and param not in message:
        error["message"] = f"{message} ({param})"
    error.update(extra or {})
    return Encoded(status, JSON_HEADERS + headers, (dumps({"error": error}),))


def encode_failure(failure: Failure, request_id: str = "") -> Encoded:
    """A simulated HTTP failure as Azure sends it."""
    return encode_error(
        failure_http_status(failure), failure.message, extra=failure.error, headers=tuple(retry_headers(failure))
    )
