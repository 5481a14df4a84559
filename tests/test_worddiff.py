"""The word diff (runs_app/live/worddiff.py): segments, the two sides, and a prompt's passage closest to a fragment."""

from __future__ import annotations

from runs_app.live.worddiff import closest_passage, differs, sides, tokens, word_diff


def test_it_marks_a_changed_word_whole():
    assert word_diff("You are a travel agent.", "You are a weather agent.") == [
        ("equal", "You are a "),
        ("delete", "travel"),
        ("insert", "weather"),
        ("equal", " agent."),
    ]


def test_it_gives_both_texts_back_from_the_segments():
    old, new = "Plan a trip\nto Lisbon, in May.", "Plan two trips to  Porto, in May!"
    segments = word_diff(old, new)
    assert "".join(text for op, text in segments if op != "insert") == old
    assert "".join(text for op, text in segments if op != "delete") == new


def test_it_keeps_whitespace_and_marks_as_units():
    assert tokens("a  b,c\n") == ["a", "  ", "b", ",", "c", "\n"]


def test_it_says_when_nothing_changed():
    segments = word_diff("same text", "same text")
    assert segments == [("equal", "same text")] and not differs(segments)
    assert word_diff("", "") == [] and not differs([])


def test_it_diffs_against_an_empty_side():
    assert word_diff("", "new words") == [("insert", "new words")]
    assert word_diff("old words", "") == [("delete", "old words")]


def test_it_splits_the_segments_into_two_sides():
    left, right = sides(word_diff("a b c", "a x c"))
    assert left == [("equal", "a "), ("delete", "b"), ("equal", " c")]
    assert right == [("equal", "a "), ("insert", "x"), ("equal", " c")]


def test_it_keeps_markup_as_plain_text_for_the_template_to_escape():
    segments = word_diff("hello", "<script>alert(1)</script>")
    assert "".join(text for op, text in segments if op != "delete") == "<script>alert(1)</script>"


def test_it_finds_the_passage_of_a_prompt_closest_to_a_fragment():
    prompt = "Be brief. You are a helpful weather agent for Paris. Never mention the harness."
    assert closest_passage(prompt, "You are a weather assistant") == "You are a helpful weather agent"
    assert closest_passage(prompt, "zzz qqq") == ""
    assert closest_passage("", "anything") == ""


def test_it_joins_changed_words_separated_by_a_space_alone():
    assert word_diff("It is sunny all week.", "It is rainy every day.") == [
        ("equal", "It is "),
        ("delete", "sunny all week"),
        ("insert", "rainy every day"),
        ("equal", "."),
    ]
