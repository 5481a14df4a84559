"""The protocols the endpoint speaks, each a module of pure functions on the engine's neutral shapes: a parser
(JSON body → :class:`~harnessweb.engine.exchange.ChatRequest`) and encoders
(:class:`~harnessweb.engine.exchange.Reply`, a failure or an error → the exact bytes).

Each names itself with ``PROTOCOL``, ``LABEL``, the ``PATH`` it is served at and the ``REQUEST_ID_HEADER`` its
responses carry, and offers the same functions with the same arguments: ``parse_request``, ``encode_reply``,
``encode_failure``, ``encode_error``, ``encode_model``, ``encode_models`` and ``malformed``. One whose requests can
ask for their answer to be kept (``ChatRequest.keep``: clients refer back to it by id) also offers ``answer_id``,
``response_object``, ``continued`` and ``encode_unknown_answer``.

A protocol whose path holds values (Gemini's model) gives a ``PATH_PATTERN`` with named groups and
``path_fields(**groups, query=…)``, the request fields they (and the query string) set. A new protocol is one more
module here, listed in ``WIRES``.
"""

from __future__ import annotations

import re
from types import ModuleType

from harnessweb.engine.wire import (
    anthropic,
    azure,
    azure_completions,
    bedrock,
    bedrock_claude,
    cohere,
    completions,
    gemini,
    harness,
    ollama,
    openai,
    responses,
    vertex,
    vertex_claude,
)

# OpenRouter (wire/openrouter.py) is OpenAI's protocol at its own path: a route of routes.py, not a protocol here.
WIRES: tuple[ModuleType, ...] = (
    openai, anthropic, responses, completions, gemini, azure, azure_completions, vertex, vertex_claude, cohere,
    bedrock, bedrock_claude, harness, ollama,
)  # fmt: skip
BY_NAME: dict[str, ModuleType] = {wire.PROTOCOL: wire for wire in WIRES}


def path_pattern(wire: ModuleType) -> str:
    """The regular expression of the paths a protocol is served at: its ``PATH_PATTERN`` where the path holds
    values (Gemini's model), else its ``PATH``."""
    return getattr(wire, "PATH_PATTERN", None) or re.escape(wire.PATH)
