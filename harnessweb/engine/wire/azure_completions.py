"""Azure OpenAI's legacy text completions: OpenAI's completions protocol (:mod:`harnessweb.engine.wire.completions`)
served at ``/openai/deployments/{deployment}/completions`` (with its ``?api-version=``), where the deployment names
the model, and Azure's error format (:mod:`harnessweb.engine.wire.azure`). The ``openai`` SDK's
``AzureOpenAI().completions`` calls it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessweb.engine.exchange import ChatRequest
from harnessweb.engine.wire import completions
from harnessweb.engine.wire.azure import encode_error, encode_failure
from harnessweb.engine.wire.completions import REQUEST_ID_HEADER, encode_model, encode_models, encode_reply, malformed

__all__ = ["REQUEST_ID_HEADER", "encode_error", "encode_failure", "encode_model", "encode_models", "encode_reply"]
__all__ += ["malformed"]

PROTOCOL = "azure_completions"
LABEL = "Azure OpenAI Completions (legacy)"
PATH = "/openai/deployments/{deployment}/completions"
PATH_PATTERN = r"/openai/deployments/(?P<param>[^/]+)/completions"


def parse_request(body: Any) -> ChatRequest:
    """A completions body, whatever ``model`` it carries (the SDK sends the deployment's name): the path names the
    model."""
    if isinstance(body, dict):
        body = {**body, "model": "deployment"}  # read as OpenAI's, then the path's deployment replaces it
    return completions.parse_request(body)


def path_fields(deployment: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The deployment is the model."""
    return {"model": deployment, "model_missing": False}
