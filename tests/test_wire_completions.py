"""Legacy text completions (harnessweb/engine/wire/completions.py): the prompt as one user message, text_completion
choices out, streamed as the real API streams them."""

from __future__ import annotations

import orjson
import pytest

from harnessweb.engine.exchange import Block, Reply, Usage
from harnessweb.engine.wire import completions
from harnessweb.engine.wire.common import WireError

REPLY = Reply(
    blocks=(Block(type="reasoning", text="hidden"), Block(type="text", text="one two three")),
    finish="stop",
    usage=Usage(4, 3, 7),
    chunk_words=2,
    id_seed="seed",
)


def events(body: bytes) -> list:
    return [line[6:] for line in body.decode().split("\n\n") if line.startswith("data: ")]


def test_it_reads_the_prompt_as_one_user_message() -> None:
    request = completions.parse_request({"model": "m", "prompt": ["a", "b"], "stream": True, "temperature": 0.5})
    assert [(m.role, m.text) for m in request.messages] == [("user", "a\nb")]
    assert (request.turn, request.stream, request.temperature, request.protocol) == (1, True, 0.5, "completions")


@pytest.mark.parametrize("prompt", [None, 3, [], [{"x": 1}]])
def test_it_refuses_a_prompt_it_cannot_read(prompt) -> None:
    with pytest.raises(WireError) as caught:
        completions.parse_request({"model": "m", "prompt": prompt})
    assert caught.value.param == "prompt"


def test_it_answers_the_text_only() -> None:
    request = completions.parse_request({"model": "gpt-3.5-turbo-instruct", "prompt": "x"})
    body = orjson.loads(completions.encode_reply(REPLY, request).body)
    assert body["object"] == "text_completion" and body["id"].startswith("cmpl-")
    assert body["choices"] == [{"text": "one two three", "index": 0, "logprobs": None, "finish_reason": "stop"}]
    assert body["usage"] == {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}


def test_it_streams_chunks_then_the_finish_then_usage_then_done() -> None:
    request = completions.parse_request(
        {"model": "m", "prompt": "x", "stream": True, "stream_options": {"include_usage": True}}
    )
    data = events(completions.encode_reply(REPLY, request).body)
    chunks = [orjson.loads(d) for d in data[:-1]]
    assert [c["choices"][0]["text"] for c in chunks[:3]] == ["one two", " three", ""]
    assert [c["choices"][0]["finish_reason"] for c in chunks[:3]] == [None, None, "stop"]
    assert chunks[3]["choices"] == [] and chunks[3]["usage"]["total_tokens"] == 7
    assert data[-1] == "[DONE]"
