"""The request's limits and extras, honoured through the official SDKs: ``max_tokens`` (every protocol's name for it)
cuts the answer at that many tokens of the documented tokenisation with the protocol's "length" finish, ``stop``
sequences cut the text at the first one, ``n`` gives that many choices, ``logprobs`` gives deterministic
log-probabilities in the API's shape, usage counts follow the tokenisation, and instruction mode ends its stream
with one finish chunk (seed 004)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from google.genai import types

from harnessweb.engine import tokens
from harnessweb.engine.fallback import lorem, lorem_length
from harnessweb.testing.harness import Harness
from tests.sse import parse_sse

PROMPT = "Tell me a story"
USER = [{"role": "user", "content": PROMPT}]
LOREM = f"{lorem(lorem_length(PROMPT))} {PROMPT}"


def text_scenario(scenario_id: str, text: str, **turn: Any) -> dict[str, Any]:
    return {"id": scenario_id, "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": text}, **turn}]}


def test_it_tokenises_words_and_marks_and_joins_back() -> None:
    assert tokens.tokens("Hello, world!  ") == ["Hello", ",", " world", "!  "]
    assert tokens.count('{"city": "Oslo"}') == 9  # { " city " : " Oslo " }
    text = "Tabs\tand\nnew lines, é accents; 3.14 and snake_case. "
    assert "".join(tokens.tokens(text)) == text and tokens.count(text) == len(tokens.tokens(text))


# ---------------------------------------------------------------------------------------------------------------
# max_tokens


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens"])
def test_it_cuts_an_openai_answer_at_max_tokens(harness: Harness, name: str) -> None:
    client = harness.openai_client()
    reply = client.chat.completions.create(model="gpt-4o", messages=USER, **{name: 3})
    assert reply.choices[0].message.content == "lorem ipsum dolor"
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 3
    assert reply.usage.prompt_tokens == tokens.count(PROMPT) == 4
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=USER, stream=True, **{name: 3}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "lorem ipsum dolor"
    assert [c.choices[0].finish_reason for c in chunks][-1] == "length"


@pytest.mark.parametrize("stream", [False, True])
def test_it_cuts_an_anthropic_answer_at_max_tokens(harness: Harness, stream: bool) -> None:
    client = harness.anthropic_client()
    if stream:
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=6, messages=USER) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(model="claude-sonnet-4-6", max_tokens=6, messages=USER)
    assert message.content[0].text == "lorem ipsum dolor sit amet consectetur"
    assert (message.stop_reason, message.stop_sequence, message.usage.output_tokens) == ("max_tokens", None, 6)


def test_it_counts_thinking_and_arguments_against_the_budget(harness: Harness) -> None:
    response = {"kind": "tool-call", "reasoning": [{"text": "one two three"}],
                "tool_calls": [{"tool_name": "search", "arguments": {"query": "weather"}}]}  # fmt: skip
    harness.use_scenario({"id": "budget", "turns": [{"turn": 1, "response": response}]})
    harness.use_scenario("budget")
    message = harness.anthropic_client().messages.create(
        model="claude-sonnet-4-6", max_tokens=3, messages=[{"role": "user", "content": "budget"}]
    )
    assert [b.type for b in message.content] == ["thinking"] and message.stop_reason == "max_tokens"
    message = harness.anthropic_client().messages.create(
        model="claude-sonnet-4-6", max_tokens=5, messages=[{"role": "user", "content": "budget"}]
    )
    assert message.content[1].type == "tool_use" and message.content[1].input == {}  # its JSON was cut
    reply = harness.openai_client().chat.completions.create(
        model="gpt-4o", max_tokens=6, messages=[{"role": "user", "content": "budget"}]
    )
    # Three tokens of reasoning, then three of the arguments: the call's JSON is cut, as a real model's is.
    call = reply.choices[0].message.tool_calls[0]
    assert call.function.arguments == '{"query' and reply.choices[0].finish_reason == "length"


def test_it_serves_a_turn_authored_as_cut_whole(harness: Harness) -> None:
    long_text = "one two three four five six seven eight"
    harness.use_scenario(text_scenario("authored-cut", long_text, finish_reason="length"))
    client = harness.openai_client()
    whole = client.chat.completions.create(
        model="m", max_tokens=2, messages=[{"role": "user", "content": "authored-cut"}]
    )
    assert whole.choices[0].message.content == long_text and whole.choices[0].finish_reason == "length"
    harness.use_scenario(text_scenario("scripted", long_text))
    cut = client.chat.completions.create(model="m", max_tokens=2, messages=[{"role": "user", "content": "scripted"}])
    assert cut.choices[0].message.content == "one two" and cut.choices[0].finish_reason == "length"


def test_it_cuts_responses_and_gemini_answers_at_their_limits(harness: Harness) -> None:
    response = harness.openai_client().responses.create(model="gpt-4.1", input=PROMPT, max_output_tokens=4)
    assert response.output_text == "lorem ipsum dolor sit"
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    answer = harness.genai_client().models.generate_content(
        model="gemini-2.5-flash", contents=PROMPT, config=types.GenerateContentConfig(max_output_tokens=2)
    )
    assert answer.text == "lorem ipsum" and answer.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert answer.usage_metadata.candidates_token_count == 2


# ---------------------------------------------------------------------------------------------------------------
# stop sequences


def test_it_stops_at_the_first_stop_sequence_on_openai(harness: Harness) -> None:
    reply = harness.openai_client().chat.completions.create(model="gpt-4o", messages=USER, stop=["amet", "dolor"])
    assert reply.choices[0].message.content == "lorem ipsum " and reply.choices[0].finish_reason == "stop"
    assert reply.usage.completion_tokens == 2


@pytest.mark.parametrize("stream", [False, True])
def test_it_stops_at_a_stop_sequence_on_anthropic_and_names_it(harness: Harness, stream: bool) -> None:
    client = harness.anthropic_client()
    request = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "messages": USER, "stop_sequences": ["sit", "xyz"]}
    if stream:
        with client.messages.stream(**request) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**request)
    assert message.content[0].text == "lorem ipsum dolor "
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "sit")


def test_it_stops_a_scenario_text_at_a_stop_sequence(harness: Harness) -> None:
    harness.use_scenario(text_scenario("stops", "Step 1. Step 2. END more"))
    reply = harness.openai_client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "stops"}], stop="END"
    )
    assert reply.choices[0].message.content == "Step 1. Step 2. "


def test_it_stops_gemini_at_stop_sequences(harness: Harness) -> None:
    answer = harness.genai_client().models.generate_content(
        model="gemini-2.5-flash", contents=PROMPT, config=types.GenerateContentConfig(stop_sequences=["ipsum"])
    )
    assert answer.text == "lorem " and answer.candidates[0].finish_reason == types.FinishReason.STOP


def test_it_leaves_an_answer_without_the_stop_sequence_whole(harness: Harness) -> None:
    reply = harness.openai_client().chat.completions.create(model="gpt-4o", messages=USER, stop=["zebra"])
    assert reply.choices[0].message.content == LOREM and reply.choices[0].finish_reason == "stop"


# ---------------------------------------------------------------------------------------------------------------
# n choices


def test_it_gives_n_choices_each_its_own_deterministic_text(harness: Harness) -> None:
    client = harness.openai_client()
    reply = client.chat.completions.create(model="gpt-4o", messages=USER, n=3)
    texts = [c.message.content for c in reply.choices]
    assert [c.index for c in reply.choices] == [0, 1, 2] and texts[0] == LOREM
    assert len(set(texts)) == 3 and all(t.endswith(PROMPT) for t in texts)
    assert reply.usage.completion_tokens == sum(tokens.count(t) for t in texts)
    again = client.chat.completions.create(model="gpt-4o", messages=USER, n=3)
    assert [c.message.content for c in again.choices] == texts
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=USER, n=3, stream=True))
    streamed: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            streamed[choice.index] = streamed.get(choice.index, "") + (choice.delta.content or "")
    assert [streamed[i] for i in range(3)] == texts
    assert sum(1 for c in chunks for choice in c.choices if choice.finish_reason == "stop") == 3


def test_it_gives_every_choice_the_scripted_answer(harness: Harness) -> None:
    harness.use_scenario(text_scenario("two", "Scripted."))
    reply = harness.openai_client().chat.completions.create(
        model="m", messages=[{"role": "user", "content": "two"}], n=2
    )
    assert [c.message.content for c in reply.choices] == ["Scripted.", "Scripted."]
    answer = harness.genai_client().models.generate_content(
        model="gemini-2.5-flash", contents="two", config=types.GenerateContentConfig(candidate_count=2)
    )
    assert [c.content.parts[0].text for c in answer.candidates] == ["Scripted.", "Scripted."]


# ---------------------------------------------------------------------------------------------------------------
# logprobs


def test_it_gives_deterministic_logprobs_in_the_api_shape(harness: Harness) -> None:
    client = harness.openai_client()
    reply = client.chat.completions.create(model="gpt-4o", messages=USER, logprobs=True, top_logprobs=3)
    content = reply.choices[0].logprobs.content
    assert "".join(entry.token for entry in content) == reply.choices[0].message.content == LOREM
    for entry in content:
        assert -2.5 < entry.logprob <= 0 and entry.bytes == list(entry.token.encode())
        assert len(entry.top_logprobs) == 3 and entry.top_logprobs[0].token == entry.token
        values = [alt.logprob for alt in entry.top_logprobs]
        assert values == sorted(values, reverse=True) and values[0] == entry.logprob
    again = client.chat.completions.create(model="gpt-4o", messages=USER, logprobs=True, top_logprobs=3)
    assert again.choices[0].logprobs == reply.choices[0].logprobs
    plain = client.chat.completions.create(model="gpt-4o", messages=USER)
    assert plain.choices[0].logprobs is None


def test_it_streams_logprobs_chunk_by_chunk(harness: Harness) -> None:
    client = harness.openai_client()
    whole = client.chat.completions.create(model="gpt-4o", messages=USER, logprobs=True)
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=USER, logprobs=True, stream=True))
    streamed = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
    assert [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in whole.choices[0].logprobs.content]
    assert all(e.top_logprobs == [] for e in streamed)


# ---------------------------------------------------------------------------------------------------------------
# Instruction mode's single finish chunk (seed 004) and the server path


def test_it_ends_an_instruction_stream_with_one_finish_chunk(harness_server, transactional_db) -> None:
    instruction = (
        '<|instruction_start|>{"messages": [{"text_message": {"length": 3}}, '
        '{"tool_call": [{"name": "search", "args": {"q": "x"}}]}]}<|instruction_end|>'
    )
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": instruction}]}
    response = httpx2.post(
        f"{harness_server.url}/v1/chat/completions", json=body, headers={"authorization": "Bearer k"}
    )
    events = [data for _, data in parse_sse([response.content])]
    assert events[-1] == "[DONE]"
    choices = [c for e in events[:-1] for c in json.loads(e)["choices"]]
    assert {c["index"] for c in choices} == {0, 1}  # each message its own choice
    assert [c for c in choices if c.get("finish_reason")] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "stop"  # the last chunk before [DONE]


def test_it_honours_the_limits_on_the_server_too(oai, claude) -> None:
    reply = oai.chat.completions.create(model="gpt-4o", messages=USER, max_completion_tokens=2, n=2)
    assert [c.message.content for c in reply.choices][0] == "lorem ipsum"
    assert [c.finish_reason for c in reply.choices] == ["length", "length"]
    message = claude.messages.create(model="c", max_tokens=1024, messages=USER, stop_sequences=["dolor"])
    assert message.stop_sequence == "dolor" and message.content[0].text == "lorem ipsum "


def test_it_counts_tokens_with_the_same_tokenisation(claude) -> None:
    counted = claude.messages.count_tokens(model="c", system="Be brief.", messages=USER)
    assert counted.input_tokens == tokens.count("Be brief.") + tokens.count(PROMPT) == 7


def test_it_gives_the_responses_api_logprobs_when_it_includes_them(harness: Harness) -> None:
    client = harness.openai_client()
    asked = {"include": ["message.output_text.logprobs"], "top_logprobs": 2}
    response = client.responses.create(model="gpt-4.1", input=PROMPT, **asked)
    part = response.output[0].content[0]
    assert "".join(entry.token for entry in part.logprobs) == part.text == LOREM
    assert all(len(entry.top_logprobs) == 2 and entry.top_logprobs[0].token == entry.token for entry in part.logprobs)
    streamed = list(client.responses.create(model="gpt-4.1", input=PROMPT, stream=True, **asked))
    deltas = [lp for e in streamed if e.type == "response.output_text.delta" for lp in e.logprobs]
    assert [(d.token, d.logprob) for d in deltas] == [(e.token, e.logprob) for e in part.logprobs]
    plain = client.responses.create(model="gpt-4.1", input=PROMPT)
    assert plain.output[0].content[0].logprobs == []


def test_it_gives_legacy_completions_their_logprobs_object(harness: Harness) -> None:
    client = harness.openai_client()
    completion = client.completions.create(model="gpt-3.5-turbo-instruct", prompt=PROMPT, logprobs=3)
    choice = completion.choices[0]
    logprobs = choice.logprobs
    assert "".join(logprobs.tokens) == choice.text == LOREM
    assert len(logprobs.token_logprobs) == len(logprobs.tokens) == len(logprobs.text_offset)
    pairs = zip(logprobs.text_offset, logprobs.tokens, strict=True)
    assert all(choice.text[offset:].startswith(token) for offset, token in pairs)
    assert all(len(alts) == 3 and logprobs.tokens[i] in alts for i, alts in enumerate(logprobs.top_logprobs))
    stream = client.completions.create(model="gpt-3.5-turbo-instruct", prompt=PROMPT, logprobs=3, stream=True)
    streamed = [t for c in stream if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.tokens]
    assert streamed == logprobs.tokens


def test_it_gives_gemini_its_logprobs_result_when_asked(harness: Harness) -> None:
    config = types.GenerateContentConfig(response_logprobs=True, logprobs=2)
    answer = harness.genai_client().models.generate_content(model="gemini-2.5-flash", contents=PROMPT, config=config)
    candidate = answer.candidates[0]
    chosen = candidate.logprobs_result.chosen_candidates
    assert "".join(c.token for c in chosen) == answer.text == LOREM
    assert all(len(top.candidates) == 2 for top in candidate.logprobs_result.top_candidates)
    assert candidate.avg_logprobs == pytest.approx(sum(c.log_probability for c in chosen) / len(chosen), abs=1e-4)
    stream = harness.genai_client().models.generate_content_stream(model="gemini-2.5-flash", contents=PROMPT,
                                                                    config=config)  # fmt: skip
    streamed = [c.token for chunk in stream for c in chunk.candidates[0].logprobs_result.chosen_candidates]
    assert streamed == [c.token for c in chosen]
    plain = harness.genai_client().models.generate_content(model="gemini-2.5-flash", contents=PROMPT)
    assert plain.candidates[0].logprobs_result is None
