"""The engine's small pieces: the stable hash, lorem lengths, word chunks, tool names, ids and thinking signatures."""

from __future__ import annotations

import re

import pytest

from harnessweb.engine.exchange import sanitize_tool_name, short_id, sign_thinking, word_chunks
from harnessweb.engine.fallback import LOREM_WORDS, lorem, lorem_length, stable_hash
from tests.playback_helpers import KEY

# ---------------------------------------------------------------------------------------------------------------
# Helpers: hashing, chunking, names


def test_it_pins_stable_hash_to_fnv1a_signed_32_bit_values():
    # These values define lorem lengths across releases: they must never change.
    assert stable_hash("") == -2128831035  # 0x811C9DC5
    assert stable_hash("a") == -468965076  # 0xE40C292C
    assert stable_hash("foobar") == -1080231576  # 0xBF9CF968
    assert stable_hash("hello") == 1335831723
    assert stable_hash("héllo") == 1252296000


def test_it_keeps_stable_hash_within_signed_32_bits():
    for text in ["", "x", "hello world", "ünïcödé ✓", "a" * 1000]:
        assert -(2**31) <= stable_hash(text) < 2**31


def test_it_computes_lorem_length_from_the_stable_hash():
    assert lorem_length("foobar") == 5 + 1080231576 % 496 == 125
    assert lorem_length("hello") == 64
    assert lorem_length("") == 32
    for text in ["", "a", "hello", "x" * 50, "Reason: y"]:
        assert 5 <= lorem_length(text) <= 500


def test_it_repeats_the_lorem_word_list_when_more_words_are_needed():
    words = lorem(len(LOREM_WORDS) + 3).split(" ")
    assert words[:5] == ["lorem", "ipsum", "dolor", "sit", "amet"]
    assert words[len(LOREM_WORDS) :] == ["lorem", "ipsum", "dolor"]
    assert lorem(0) == ""
    assert lorem(1) == "lorem"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "one",
        "one two three four five six seven",
        "   leading spaces",
        "trailing spaces   ",
        "   ",
        "\n",
        "many   spaces\tand\ttabs  between   words",
        "line one\nline two\n\nline four\n",
        "\n\nReason: think hard\n",
        "ünïcödé wörds — with dashes ✓ and 中文 字符 and emoji 🎉🎉",
        "non\u00a0breaking\u00a0spaces and\u2003em spaces",
        "\r\nwindows\r\nline endings\r\n",
    ],
)
@pytest.mark.parametrize("words", [1, 2, 5, 1000])
def test_it_splits_word_chunks_that_join_back_to_the_exact_text(text, words):
    chunks = word_chunks(text, words)
    assert "".join(chunks) == text
    assert all(chunks)
    for chunk in chunks[:-1]:
        assert len(chunk.split()) == words
    if chunks:
        assert 0 < len(chunks[-1].split()) <= words or not text.split()


def test_it_keeps_leading_whitespace_with_the_following_word_and_trailing_with_the_last():
    assert word_chunks("  a  b\n\nc d e f g  ", 2) == ["  a  b", "\n\nc d", " e f", " g  "]
    assert word_chunks("", 5) == []
    assert word_chunks("   ", 5) == ["   "]


def test_it_sanitises_tool_names_to_provider_characters():
    assert sanitize_tool_name("web.search") == "web_search"
    assert sanitize_tool_name("  fs/read file  ") == "fs_read_file"
    assert sanitize_tool_name("ok_name-1") == "ok_name-1"
    assert sanitize_tool_name("tööl") == "t__l"


def test_it_derives_short_ids_deterministically():
    assert short_id("seed") == short_id("seed")
    assert re.fullmatch(r"[0-9a-f]{24}", short_id("seed"))
    assert short_id("seed") != short_id("seed2")
    assert len(short_id("seed", 8)) == 8


def test_it_signs_thinking_deterministically_per_text_and_key():
    signature = sign_thinking("thought", KEY)
    assert signature == sign_thinking("thought", KEY)
    assert signature != sign_thinking("thought!", KEY)
    assert signature != sign_thinking("thought", "other-key")
    assert re.fullmatch(r"[A-Za-z0-9+/]{43}=", signature)
