"""Azure OpenAI's chat completions: OpenAI's protocol, served at ``/openai/deployments/{deployment}/chat/completions``
(with its ``?api-version=``), where the deployment names the model (Azure's bodies carry none). The ``openai`` SDK's
``AzureOpenAI`` client calls it.

The rest of Azure's front door (a required ``api-key`` or Entra token, Azure's error format, its embeddings and
completions, the ``/openai/v1/`` routes) is not served yet: requests are answered and errors written as OpenAI's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessweb.engine.wire.openai import (
    REQUEST_ID_HEADER,
    encode_error,
    encode_failure,
    encode_model,
    encode_models,
    encode_reply,
    malformed,
    parse_request,
)

__all__ = [
    "REQUEST_ID_HEADER",
    "encode_error",
    "encode_failure",
    "encode_model",
    "encode_models",
    "encode_reply",
    "malformed",
    "parse_request",
]

PROTOCOL = "azure"
LABEL = "Azure OpenAI"
PATH = "/openai/deployments/{deployment}/chat/completions"
PATH_PATTERN = r"/openai/deployments/(?P<param>[^/]+)/chat/completions"


def path_fields(deployment: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
    """The deployment is the model: the body names none."""
    return {"model": deployment, "model_missing": False}
