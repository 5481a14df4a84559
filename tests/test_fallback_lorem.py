"""The lorem fallback's text, pinned: the words, their order and the lengths every answer without a scenario gets,
so that a faster way of building it can never change a byte of what clients receive."""

from __future__ import annotations

import hashlib

import pytest

from harnessweb.engine.exchange import ChatRequest, Message
from harnessweb.engine.fallback import LOREM_WORDS, lorem, lorem_length, lorem_reply


def _word_by_word(count: int) -> str:
    """The definition: the word list, cycled, one space between words."""
    return " ".join(LOREM_WORDS[i % len(LOREM_WORDS)] for i in range(count))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def test_lorem_is_the_word_list_cycled_for_every_length_up_to_three_thousand_words() -> None:
    for count in range(3001):
        assert lorem(count) == _word_by_word(count), count


@pytest.mark.parametrize(
    ("count", "digest", "length"),
    [
        (0, "e3b0c44298fc1c14", 0),
        (1, "3400bb495c3f8c4c", 5),
        (2, "5e2bf57d3f40c4b6", 11),
        (68, "8ae841ed63e77d05", 429),
        (69, "bfe69795f1727973", 437),
        (70, "96c93466285df8f1", 443),
        (138, "68a90f9b85b1576e", 875),
        (500, "0b33f56273f168d1", 3173),
        (501, "00939178b3692c3b", 3179),
        (1234, "7cc08747c979fc66", 7835),
    ],
)
def test_lorem_text_is_pinned(count: int, digest: str, length: int) -> None:
    text = lorem(count)
    assert (_digest(text), len(text)) == (digest, length)


def test_lorem_of_no_words_or_fewer_is_empty() -> None:
    assert lorem(0) == lorem(-1) == lorem(-500) == ""


@pytest.mark.parametrize(
    ("message", "words", "digest", "usage"),
    [
        ("test", 496, "bca67c9ab09f2efe", (1, 497, 498)),
        ("Summarise this", 430, "d74e017985cd8b5e", (2, 432, 434)),
        ("hi", 63, "91a9009825cb53ba", (1, 64, 65)),
        ("", 32, "cc7dd6dd6d9e1301", (0, 32, 32)),
        ("ünïcödé ✓", 190, "a4a2f148e3eb082d", (2, 192, 194)),
    ],
)
def test_lorem_reply_text_and_usage_are_pinned(message: str, words: int, digest: str, usage: tuple) -> None:
    messages = (Message("user", message),) if message else ()
    reply = lorem_reply(ChatRequest(protocol="llm", model="m", messages=messages), False, "key")
    assert lorem_length(message) == words
    (block,) = reply.blocks
    assert block.text == (f"{_word_by_word(words)} {message}" if message else _word_by_word(words))
    assert _digest(block.text) == digest
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.total_tokens) == usage
