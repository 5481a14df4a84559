"""Our error bodies against the recorded ones, compared by JSON shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harnessweb.engine.wire import anthropic as anthropic_wire
from harnessweb.engine.wire import gemini as gemini_wire
from harnessweb.engine.wire import openai as openai_wire
from tests.wire_cassettes_helpers import ERRORS, body_chunks, header, interaction_of, protocol_of

# The recorded requests name a model the SDK warns about; that warning is about the recordings, not the endpoint.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


# ---------------------------------------------------------------------------------------------------------------
# Error bodies


def keys_tree(value: Any) -> Any:
    """The JSON shape: object keys, recursively (values reduced to None)."""
    if isinstance(value, dict):
        return {k: keys_tree(v) for k, v in value.items()}
    return None


@pytest.mark.parametrize(("name", "index"), ERRORS)
def test_it_answers_error_bodies_of_the_recorded_shape(name, index):
    interaction = interaction_of(name, index)
    response = interaction["response"]
    recorded = json.loads(b"".join(body_chunks(response)))
    status = response["status"]
    if protocol_of(interaction) == "gemini":
        ours = json.loads(gemini_wire.encode_error(status, "message").body)
        assert keys_tree(ours) == keys_tree(recorded)
        assert (ours["error"]["code"], ours["error"]["status"]) == (
            recorded["error"]["code"],
            recorded["error"]["status"],
        )
    elif protocol_of(interaction) == "anthropic":
        ours = json.loads(anthropic_wire.encode_error(status, "message", request_id="req_test").body)
        real = keys_tree(recorded)
        if header(response["headers"], "request-id") is None:
            # Hand-written: the real API's errors (the recorded 400s, with their request-id header) always carry
            # the request_id at the top as well.
            real["request_id"] = None
        assert keys_tree(ours) == real
        assert ours["error"]["type"] == recorded["error"]["type"]
    else:
        ours = json.loads(openai_wire.encode_error(status, "message", code="code").body)
        assert ours.keys() == recorded.keys() == {"error"}
        if name.startswith("azure_"):
            # Azure's own error object is {code, message}; the endpoint speaks OpenAI's, of which that is a subset
            # (the openai SDK reads message and code from either).
            assert set(recorded["error"]) <= set(ours["error"])
        else:
            assert keys_tree(ours) == keys_tree(recorded)
