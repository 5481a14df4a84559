"""Runs: how requests join them, what each records, and what bad input gets."""

import concurrent.futures
import uuid

import anthropic
import httpx2
import openai
import pytest

from harnessweb.engine.redaction import marker
from runs_app.models import Run, RunEvent
from tests.conftest import make_scenario, recorded_run, wait_for

TWO_TURNS = [
    {"turn": 1, "response": {"kind": "text", "assistant_text": "first"}},
    {"turn": 2, "response": {"kind": "text", "assistant_text": "second"}},
]


def ask(client: openai.OpenAI, scenario_id: str, *history: str, **kwargs):
    messages = [{"role": "user", "content": scenario_id}]
    for text in history:
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "go on"}]
    return client.chat.completions.with_raw_response.create(model="m", messages=messages, **kwargs)


def test_it_keeps_one_conversation_in_one_run_until_its_last_turn(oai):
    make_scenario("two-turns", TWO_TURNS)
    first = ask(oai, "two-turns")
    run_id = first.headers["x-harness-run"]
    assert recorded_run(run_id).status == "running"
    second = ask(oai, "two-turns", "first")
    assert second.headers["x-harness-run"] == run_id
    assert second.parse().choices[0].message.content == "second"
    run = recorded_run(run_id, status="passed")
    assert run.finished_at is not None and run.turns_served == [1, 2]


def test_it_starts_a_new_run_when_a_conversation_replays_a_served_turn(oai):
    make_scenario("replayed", TWO_TURNS)
    first = ask(oai, "replayed").headers["x-harness-run"]
    again = ask(oai, "replayed").headers["x-harness-run"]
    assert first != again
    assert recorded_run(again, events=4).scenario_id == "replayed"


def test_it_never_shares_a_run_between_api_keys(harness_server, transactional_db):
    make_scenario("shared-prompt", TWO_TURNS)
    clients = [openai.OpenAI(base_url=f"{harness_server.url}/v1", api_key=f"sk-{uuid.uuid4().hex}") for _ in range(2)]
    runs = {ask(c, "shared-prompt").headers["x-harness-run"] for c in clients}
    assert len(runs) == 2


def test_it_pins_a_request_to_the_run_it_names(oai):
    make_scenario("pinned", TWO_TURNS)
    run_id = str(uuid.uuid4())
    first = ask(oai, "pinned", extra_headers={"X-Harness-Run": run_id})
    # Even a replayed turn stays in the named run.
    again = ask(oai, "pinned", extra_headers={"X-Harness-Run": run_id})
    assert first.headers["x-harness-run"] == again.headers["x-harness-run"] == run_id
    assert recorded_run(run_id, events=8).events.filter(kind="response").count() == 2


def test_it_refuses_a_run_header_that_is_not_a_uuid(oai):
    with pytest.raises(openai.BadRequestError) as caught:
        ask(oai, "anything", extra_headers={"X-Harness-Run": "run-42"})
    assert caught.value.body["param"] == "x-harness-run"
    assert "must be a UUID" in caught.value.body["message"]


def test_it_records_the_request_with_secrets_redacted_and_a_response_summary(oai, api_key):
    make_scenario(
        "recorded",
        [
            {
                "turn": 1,
                "response": {
                    "kind": "tool-call",
                    "assistant_text": "calling",
                    "tool_calls": [{"tool_name": "lookup", "arguments": {"q": 1}}],
                },
            }
        ],
    )
    raw = ask(oai, "recorded", stream=True, extra_headers={"Cookie": "session=abc"})
    list(raw.parse())
    run = recorded_run(raw.headers["x-harness-run"], events=4)
    request = run.events.get(kind="request")
    assert request.data["headers"]["authorization"] == f"Bearer {marker(api_key)}"
    assert request.data["headers"]["cookie"] == marker("session=abc")
    assert api_key not in str(list(RunEvent.objects.filter(run=run).values_list("data", flat=True)))
    assert request.data["body"]["messages"] == [{"role": "user", "content": "recorded"}]
    match = run.events.get(kind="match")
    assert match.data["scenario"] == "recorded" and match.turn == 1
    summary = run.events.get(kind="response").data
    assert summary["text"] == "calling"
    assert summary["tool_calls"][0]["name"] == "lookup"
    assert summary["finish_reason"] == "tool_calls"
    assert summary["usage"] == {"input_tokens": 1, "output_tokens": 8, "total_tokens": 9}  # counted
    assert summary["chunks"] >= 2 and summary["ttfb_ms"] is not None and summary["duration_ms"] >= summary["ttfb_ms"]
    assert list(run.events.values_list("seq", flat=True)) == [1, 2, 3, 4]


def test_it_records_a_client_that_hangs_up_mid_stream(paced_server, transactional_db):
    make_scenario(
        "hangup",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": " ".join(["w"] * 40)}}],
        pacing={"chunk_words": 1, "interval_ms": 50},
    )
    with httpx2.stream(
        "POST",
        f"{paced_server.url}/v1/chat/completions",
        timeout=10,
        json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "hangup"}]},
    ) as response:
        run_id = response.headers["x-harness-run"]
        for line in response.iter_lines():
            if '"content":"w' in line:
                break
    event = wait_for(lambda: RunEvent.objects.filter(run_id=run_id, kind="client_disconnected").first())
    assert event.data["after_ms"] < 2000


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"model": "m"}', "messages"),
        (b'{"model": "m", "messages": []}', "messages"),
        (b'{"model": "m", "messages": [{"role": "wizard", "content": "x"}]}', "messages[0].role"),
        (b'{"model": "m", "messages": [{"role": "user", "content": 5}]}', "messages[0].content"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}', "temperature"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "stream"),
    ],
)
def test_it_answers_bad_openai_input_with_a_400_naming_the_problem(harness_server, transactional_db, body, expected):
    before = Run.objects.count()
    response = httpx2.post(
        f"{harness_server.url}/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert expected in error["message"] or expected == error["param"]
    assert error["type"] == "invalid_request_error"
    assert Run.objects.count() == before


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"\xff\xfe", "not valid JSON"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}', "max_tokens"),
        (b'{"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}', "messages.0.role"),
        (
            b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"text": "x"}]}]}',
            "messages.0.content.0",
        ),
    ],
)
def test_it_answers_bad_anthropic_input_in_anthropic_format(harness_server, transactional_db, body, expected):
    response = httpx2.post(f"{harness_server.url}/v1/messages", content=body)
    assert response.status_code == 400
    payload = response.json()
    assert payload["type"] == "error" and payload["error"]["type"] == "invalid_request_error"
    assert expected in payload["error"]["message"]


def test_it_refuses_a_body_over_five_megabytes_with_413(harness_server, transactional_db):
    big = b'{"model": "m", "messages": [{"role": "user", "content": "' + b"x" * (5 * 1024 * 1024) + b'"}]}'
    response = httpx2.post(f"{harness_server.url}/v1/messages", content=big)
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "request_too_large"
    streamed = httpx2.post(f"{harness_server.url}/v1/chat/completions", content=iter([big[:1000], big[1000:]]))
    assert streamed.status_code == 413


def test_it_answers_405_for_the_wrong_method(harness_server, transactional_db):
    assert httpx2.get(f"{harness_server.url}/v1/chat/completions").status_code == 405
    assert httpx2.post(f"{harness_server.url}/v1/models").status_code == 405


def test_it_plays_the_lorem_fallback_byte_for_byte_the_same_on_both_protocols(harness_server, transactional_db):
    for path, body in [
        (
            "/v1/chat/completions",
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Hi\nReason: yes"}]},
        ),
        (
            "/v1/messages",
            {"model": "m", "max_tokens": 9, "stream": True, "messages": [{"role": "user", "content": "Hi"}]},
        ),
        ("/v1/messages", {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Hi\nReason: x"}]}),
    ]:
        first = httpx2.post(f"{harness_server.url}{path}", json=body, headers={"x-api-key": "a"})
        second = httpx2.post(f"{harness_server.url}{path}", json=body, headers={"x-api-key": "b"})
        assert first.status_code == 200
        assert first.content == second.content
        assert first.headers["x-harness-run"] != second.headers["x-harness-run"]


def test_it_plays_lorem_through_the_sdks_with_the_echo_and_reasoning(oai, claude):
    prompt = "Summarise the plan\nReason: think first"
    text = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    message = text.choices[0].message
    assert message.content.endswith(prompt) and message.model_extra["reasoning"].endswith(prompt)
    words = len(message.content.removesuffix(prompt).split())
    assert 5 <= words <= 500
    claude_message = claude.messages.create(model="m", max_tokens=2048, messages=[{"role": "user", "content": prompt}])
    assert [b.type for b in claude_message.content] == ["thinking", "text"]
    assert claude_message.content[1].text == message.content


def test_it_follows_an_instruction_block_on_both_protocols(oai, claude):
    instruction = (
        'Please <|instruction_start|>{"id_message": "MSG-7", "reasoning": {"length": 4}, "messages": ['
        '{"text_message": {"length": 6}}, {"tool_call": [{"name": "search", "args": {"q": "llm"}}]}]}'
        "<|instruction_end|> ignored text"
    )
    streamed = list(
        oai.chat.completions.create(model="m", messages=[{"role": "user", "content": instruction}], stream=True)
    )
    texts = {}
    for chunk in streamed:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
    assert texts[0].split()[0] == "MSG-7" and texts[0].split()[-1] == "MSG-7" and len(texts[0].split()) == 8
    calls = [c for ch in streamed for choice in ch.choices if choice.index == 1 for c in choice.delta.tool_calls or []]
    assert calls[0].function.name == "search"
    message = claude.messages.create(model="m", max_tokens=2048, messages=[{"role": "user", "content": instruction}])
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert len(message.content[0].thinking.split()) == 6 and message.content[2].input == {"q": "llm"}


@pytest.mark.backends
def test_it_counts_concurrent_retries_atomically(harness_server, transactional_db):
    """Eight simultaneous attempts at a turn that fails three times: exactly three fail, five succeed."""
    make_scenario(
        "contended",
        [
            {
                "turn": 1,
                "failures_before_success": 3,
                "failure_status": "model_error",
                "response": {"kind": "text", "assistant_text": "ok"},
            }
        ],
    )
    run_id = str(uuid.uuid4())

    def attempt(_: int) -> int:
        return httpx2.post(
            f"{harness_server.url}/v1/chat/completions",
            timeout=20,
            headers={"X-Harness-Run": run_id},
            json={"model": "m", "messages": [{"role": "user", "content": "contended"}]},
        ).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = sorted(pool.map(attempt, range(8)))
    assert statuses == [200] * 5 + [500] * 3
    wait_for(lambda: RunEvent.objects.filter(run_id=run_id, kind="response").count() == 8)
    assert RunEvent.objects.filter(run_id=run_id, kind="failure_injected").count() == 3


@pytest.mark.backends
def test_it_counts_retries_atomically_across_server_processes(harness_server, tmp_path, transactional_db):
    from tests.conftest import running_server

    with running_server(tmp_path, {"HARNESS_PACING": "off"}) as second:
        make_scenario(
            "contended-processes",
            [
                {
                    "turn": 1,
                    "failures_before_success": 4,
                    "failure_status": "rate_limit",
                    "failure_retry_after_ms": 10,
                    "response": {"kind": "text", "assistant_text": "ok"},
                }
            ],
        )
        run_id = str(uuid.uuid4())
        urls = [harness_server.url, second.url] * 5

        def attempt(url: str) -> int:
            return httpx2.post(
                f"{url}/v1/chat/completions",
                timeout=20,
                headers={"X-Harness-Run": run_id},
                json={"model": "m", "messages": [{"role": "user", "content": "contended-processes"}]},
            ).status_code

        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            statuses = sorted(pool.map(attempt, urls))
        assert statuses == [200] * 6 + [429] * 4


def test_it_uses_the_anthropic_error_shape_for_anthropic_failures(claude):
    make_scenario(
        "claude-429",
        [
            {
                "turn": 1,
                "failures_before_success": 1,
                "failure_status": "rate_limit",
                "failure_retry_after_ms": 10,
                "response": {"kind": "text", "assistant_text": "x"},
            }
        ],
    )
    with pytest.raises(anthropic.RateLimitError) as caught:
        claude.with_options(max_retries=0).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "claude-429"}]
        )
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "rate_limit_error"


def test_it_gives_anthropic_errors_the_request_id_of_their_header(harness_server, transactional_db):
    response = httpx2.post(f"{harness_server.url}/v1/messages", json={"model": "m", "messages": []})
    assert response.status_code == 400
    assert response.json()["request_id"] == response.headers["request-id"]
    assert response.json()["request_id"].startswith("req_")
    assert response.headers["x-should-retry"] == "false"


def test_it_opens_a_tool_call_stream_with_the_role_on_the_tool_call_delta(oai):
    make_scenario(
        "tool-first",
        [{"turn": 1, "response": {"kind": "tool-call", "tool_calls": [{"tool_name": "lookup", "arguments": {}}]}}],
    )
    chunks = list(
        oai.chat.completions.create(model="m", stream=True, messages=[{"role": "user", "content": "tool-first"}])
    )
    first = chunks[0].choices[0].delta
    assert first.role == "assistant" and first.content is None and first.tool_calls[0].function.name == "lookup"
