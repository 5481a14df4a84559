"""An uploaded conversation normalised to one shape (runs_app/ci/messages.py): OpenAI's and Anthropic's messages,
tool calls and tool results, secrets redacted, and what cannot be read named by its field. No database."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runs_app.ci.messages import MessageError, detect_format, digest, normalise

OPENAI = [
    {"role": "system", "content": "You make grocery lists."},
    {"role": "user", "content": "Create a grocery list with eggs and milk"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "generate_ui", "arguments": '{"items": ["eggs", "milk"]}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "https://x.test/u/abc"},
    {"role": "assistant", "content": "Here it is: /u/abc"},
]

ANTHROPIC = [
    {"role": "user", "content": "Create a grocery list with eggs and milk"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "A list page.", "signature": "sig"},
            {"type": "text", "text": "Making it."},
            {"type": "tool_use", "id": "toolu_1", "name": "generate_ui", "input": {"items": ["eggs", "milk"]}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "/u/abc"}]}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Here it is: /u/abc"}]},
]


def test_it_normalises_openai_messages_with_tool_calls_and_results() -> None:
    messages = normalise(OPENAI)

    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert {m["format"] for m in messages} == {"openai"}
    call = {"type": "tool_call", "id": "call_1", "name": "generate_ui", "arguments": {"items": ["eggs", "milk"]}}
    assert messages[2]["parts"] == [call]
    result = {"type": "tool_result", "tool_call_id": "call_1", "content": "https://x.test/u/abc", "is_error": False}
    assert messages[3]["parts"] == [result]
    assert messages[4]["parts"] == [{"type": "text", "text": "Here it is: /u/abc"}]


def test_it_normalises_anthropic_messages_to_the_same_shape() -> None:
    messages = normalise(ANTHROPIC, system="You make grocery lists.")

    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert {m["format"] for m in messages} == {"anthropic"}
    assert messages[0]["parts"] == [{"type": "text", "text": "You make grocery lists."}]
    assert messages[2]["parts"] == [
        {"type": "reasoning", "text": "A list page."},
        {"type": "text", "text": "Making it."},
        {"type": "tool_call", "id": "toolu_1", "name": "generate_ui", "arguments": {"items": ["eggs", "milk"]}},
    ]
    # A user message of tool results alone is the tool's, as in OpenAI's shape.
    assert messages[3]["parts"] == [{"type": "tool_result", "tool_call_id": "toolu_1", "content": "/u/abc",
                                     "is_error": False}]  # fmt: skip
    # The two shapes of one conversation tell the same story, part for part.
    assert [m["parts"] for m in normalise(OPENAI)][4] == messages[4]["parts"]


def test_it_tells_the_shape_from_the_messages() -> None:
    assert detect_format(ANTHROPIC) == "anthropic"
    assert detect_format(OPENAI) == "openai"
    assert detect_format([{"role": "user", "content": "hi"}]) == "openai"
    assert detect_format([{"role": "user", "content": "hi"}], "anthropic") == "anthropic"


def test_it_keeps_arguments_that_are_not_json_as_sent() -> None:
    message = {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{oops"}}]}
    assert normalise([message])[0]["parts"][0]["arguments"] == "{oops"


def test_it_redacts_keys_in_text_and_arguments() -> None:
    key = "sk-proj-" + "a1B2c3D4" * 6
    call = {"id": "c", "function": {"name": "f", "arguments": {"api_key": key}}}
    messages = normalise([{"role": "user", "content": f"my key is {key}"}, {"role": "assistant", "tool_calls": [call]}])
    assert key not in str(messages)
    assert "[REDACTED" in messages[0]["parts"][0]["text"]


@pytest.mark.parametrize(
    ("messages", "loc", "words"),
    [
        ([{"content": "no role"}], ("body", 0, "role"), "must be one of"),
        ([{"role": "wizard", "content": "x"}], ("body", 0, "role"), "'wizard'"),
        ([{"role": "user"}], ("body", 0, "content"), "needs content"),
        ([{"role": "user", "content": 42}], ("body", 0, "content"), "must be a string"),
        ([{"role": "tool", "content": "x"}], ("body", 0, "tool_call_id"), "names the tool call"),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}],
            ("body", 0, "tool_calls", 0, "function", "name"),
            "the tool's name",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}],
            ("body", 0, "content", 0, "tool_use_id"),
            "names the tool call",
        ),
        ([{"role": "user", "content": [{"type": "text", "text": 3}]}], ("body", 0, "content", 0, "text"), "string"),
        ("not a list", ("body",), "list of messages"),
        # A tool message in a conversation that is otherwise in Anthropic's shape.
        (
            [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
             {"role": "tool", "tool_call_id": "t", "content": "x"}],
            ("body", 1, "role"),
            "anthropic shape",
        ),
    ],
)  # fmt: skip
def test_it_names_the_field_of_a_message_it_cannot_read(messages, loc, words) -> None:
    with pytest.raises(MessageError) as caught:
        normalise(messages)
    assert caught.value.loc == loc
    assert words in caught.value.message


def test_the_same_message_has_the_same_digest() -> None:
    first, again = normalise(OPENAI), normalise(OPENAI)
    assert [digest(m) for m in first] == [digest(m) for m in again]
    assert digest(first[1]) != digest(first[4])


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(["user", "tool", "tool_use"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "type", "text", "tool_calls", "function", "name", "arguments", "id",
                         "tool_call_id", "tool_use_id", "input", "source", "image_url", "is_error"]),
        inner, max_size=5),
    max_leaves=20,
)  # fmt: skip


@given(messages=st.lists(JSON, max_size=4), system=JSON)
@settings(max_examples=300, deadline=None)
def test_whatever_is_sent_it_normalises_or_names_the_field(messages, system) -> None:
    try:
        result = normalise(messages, system=system)
    except MessageError as exc:
        assert exc.loc[0] == "body" and exc.message
    else:
        assert all(m["role"] in ("system", "user", "assistant", "tool") for m in result)
        assert all(isinstance(p, dict) and p["type"] for m in result for p in m["parts"])
