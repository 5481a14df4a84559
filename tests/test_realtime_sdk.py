"""OpenAI Realtime through the official SDK's async realtime client (``client.realtime.connect``), unmodified,
against the real server: a text session, function calling, audio in and out from a fixture, a failure
mid-response; each session recorded as a run whose turns are its responses."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from typing import Any

import openai
from websockets.exceptions import ConnectionClosedError

from tests.conftest import ROOT, LiveServer, make_scenario, recorded_run

AUDIO = (ROOT / "tests" / "fixtures" / "realtime" / "tone-440hz-250ms.pcm16").read_bytes()


def client(server: LiveServer, api_key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=api_key)


async def until_done(connection: Any) -> list[Any]:
    """The server events up to the response's ``response.done``."""
    events = []
    async for event in connection:
        events.append(event)
        if event.type == "response.done":
            return events
    raise AssertionError(f"the socket closed before response.done: {[e.type for e in events]}")


def of(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def test_a_text_session_plays_the_scenario_s_turn(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    make_scenario(
        "rt-text", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hello from the harness, by voice."}}]
    )

    run_id = str(uuid.uuid4())

    async def session() -> tuple[Any, list[Any]]:
        async with client(harness_server, api_key).realtime.connect(
            model="gpt-realtime", extra_headers={"X-Harness-Run": run_id}
        ) as connection:
            created = await connection.recv()
            await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            updated = await connection.recv()
            assert updated.type == "session.updated" and updated.session.output_modalities == ["text"]
            await connection.conversation.item.create(
                item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "rt-text"}]}
            )
            await connection.response.create()
            return created, await until_done(connection)

    created, events = asyncio.run(session())
    assert created.type == "session.created" and created.session.model == "gpt-realtime"
    assert [e.item.role for e in of(events, "conversation.item.done")][:1] == ["user"]
    assert "".join(e.delta for e in of(events, "response.output_text.delta")) == "Hello from the harness, by voice."
    assert of(events, "response.output_text.done")[0].text == "Hello from the harness, by voice."
    done = events[-1].response
    assert done.status == "completed" and done.output[0].content[0].text == "Hello from the harness, by voice."
    assert (
        done.usage.output_tokens > 0 and done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens
    )
    run = recorded_run(run_id, status="passed", events=4)
    assert run.protocol == "realtime" and run.scenario_id == "rt-text"
    kinds = ["message", "message", "request", "match", "validation", "response"]  # session.update, item.create
    assert [e.kind for e in run.events.order_by("seq")] == kinds


def connect(server: LiveServer, api_key: str, run_id: str, **headers: str) -> Any:
    return client(server, api_key).realtime.connect(
        model="gpt-realtime", extra_headers={"X-Harness-Run": run_id, **headers}
    )


def user_text(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def test_a_function_calling_session_gets_the_call_then_the_answer_to_its_output(
    harness_server: LiveServer, api_key: str, transactional_db: None, staff_client: Any
) -> None:
    make_scenario(
        "rt-tools",
        [
            {
                "turn": 1,
                "response": {
                    "kind": "tool-call",
                    "tool_calls": [
                        {"tool_name": "get_weather", "arguments": {"city": "Paris"}, "call_id": "call_paris"}
                    ],
                },
                "expected_tools": ["get_weather"],
            },
            {
                "turn": 2,
                "response": {"kind": "text", "assistant_text": "It is sunny in Paris."},
                "expect": {"tool_calls_answered": True},
            },
        ],
    )
    run_id = str(uuid.uuid4())

    async def session() -> tuple[list[Any], list[Any]]:
        async with connect(harness_server, api_key, run_id) as connection:
            await connection.recv()  # session.created
            await connection.session.update(
                session={"type": "realtime", "output_modalities": ["text"], "tools": [WEATHER_TOOL]}
            )
            await connection.conversation.item.create(item=user_text("rt-tools"))
            await connection.response.create()
            first = await until_done(connection)
            call = of(first, "response.function_call_arguments.done")[0]
            output = json.dumps({"sky": "sunny"})
            await connection.conversation.item.create(
                item={"type": "function_call_output", "call_id": call.call_id, "output": output}
            )
            await connection.response.create()
            return first, await until_done(connection)

    first, second = asyncio.run(session())
    call = of(first, "response.function_call_arguments.done")[0]
    assert (call.name, call.call_id, json.loads(call.arguments)) == ("get_weather", "call_paris", {"city": "Paris"})
    assert "".join(e.delta for e in of(first, "response.function_call_arguments.delta")) == call.arguments
    item = first[-1].response.output[0]
    assert (item.type, item.name, item.call_id, item.status) == (
        "function_call",
        "get_weather",
        "call_paris",
        "completed",
    )
    assert "".join(e.delta for e in of(second, "response.output_text.delta")) == "It is sunny in Paris."
    run = recorded_run(run_id, status="passed", events=8)
    assert sorted(run.turns_served) == [1, 2]
    validations = [e.data for e in run.events.filter(kind="validation").order_by("seq")]
    assert validations == [{"ok": True, "problem": ""}, {"ok": True, "problem": ""}]
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert "It is sunny in Paris." in page and "get_weather" in page
    assert "a valid request" not in page  # the run page reads the session's recorded items as its requests


def test_audio_in_is_transcribed_from_the_scenario_and_audio_out_streams_the_fixture(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    make_scenario(
        "rt-audio",
        [
            {
                "turn": 1,
                "input_transcript": "What does an A sound like?",
                "response": {"kind": "text", "assistant_text": "Like this."},
                "audio": base64.b64encode(AUDIO).decode(),
                "transcript": "Like this: an A at four hundred and forty hertz.",
                "expect": {"last_message_contains": "What does an A sound like?"},
            }
        ],
    )
    run_id = str(uuid.uuid4())

    async def session() -> list[Any]:
        async with connect(harness_server, api_key, run_id, **{"X-Harness-Scenario": "rt-audio"}) as connection:
            await connection.recv()  # session.created: audio out by default
            for at in range(0, len(AUDIO), 4000):
                await connection.input_audio_buffer.append(audio=base64.b64encode(AUDIO[at : at + 4000]).decode())
            await connection.input_audio_buffer.commit()
            events = []
            async for event in connection:
                events.append(event)
                if event.type == "conversation.item.input_audio_transcription.completed":
                    break
            await connection.response.create()
            return events + await until_done(connection)

    events = asyncio.run(session())
    assert of(events, "input_audio_buffer.committed")
    assert of(events, "conversation.item.input_audio_transcription.completed")[0].transcript == (
        "What does an A sound like?"
    )
    spoken = b"".join(base64.b64decode(e.delta) for e in of(events, "response.output_audio.delta"))
    assert spoken == AUDIO and len(of(events, "response.output_audio.delta")) == 3
    said = "".join(e.delta for e in of(events, "response.output_audio_transcript.delta"))
    assert said == "Like this: an A at four hundred and forty hertz."
    assert of(events, "response.output_audio_transcript.done")[0].transcript == said
    assert events[-1].response.output[0].content[0].type == "output_audio"
    assert not of(events, "response.output_text.delta")
    run = recorded_run(run_id, status="passed", events=4)
    assert run.events.get(kind="validation").data == {"ok": True, "problem": ""}


def test_a_network_error_mid_response_drops_the_socket_and_the_retry_is_answered(
    server: LiveServer, api_key: str, transactional_db: None
) -> None:
    text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
    turn = {"kind": "text", "assistant_text": text}
    make_scenario(
        "rt-drop",
        [{"turn": 1, "response": turn, "failures_before_success": 1, "failure_status": "network_error"}],
        pacing={"chunk_words": 2},
    )
    run_id = str(uuid.uuid4())

    async def attempt() -> list[Any]:
        events: list[Any] = []
        async with connect(server, api_key, run_id) as connection:
            await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            await connection.conversation.item.create(item=user_text("rt-drop"))
            await connection.response.create()
            try:
                async for event in connection:
                    events.append(event)
                    if event.type == "response.done":
                        break
            except ConnectionClosedError as exc:
                events.append(exc)
        return events

    dropped = asyncio.run(attempt())
    assert isinstance(dropped[-1], ConnectionClosedError) and dropped[-1].rcvd is None  # no close frame: cut
    partial = "".join(e.delta for e in of(dropped[:-1], "response.output_text.delta"))
    assert partial and text.startswith(partial) and partial != text
    answered = asyncio.run(attempt())
    assert answered[-1].type == "response.done" and answered[-1].response.status == "completed"
    assert "".join(e.delta for e in of(answered, "response.output_text.delta")) == text
    run = recorded_run(run_id, status="passed", events=9)
    injected = run.events.get(kind="failure_injected").data
    assert (injected["status"], injected["attempt"], injected["of"]) == ("network_error", 1, 1)


def test_a_rate_limit_is_an_error_event_in_the_api_s_shape_and_a_failed_response(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    turn = {"kind": "text", "assistant_text": "Finally."}
    make_scenario(
        "rt-limit", [{"turn": 1, "response": turn, "failures_before_success": 1, "failure_status": "rate_limit"}]
    )
    run_id = str(uuid.uuid4())

    async def session() -> tuple[list[Any], list[Any]]:
        async with connect(harness_server, api_key, run_id) as connection:
            await connection.conversation.item.create(item=user_text("rt-limit"))
            await connection.response.create()
            failed = await until_done(connection)
            await connection.response.create()
            return failed, await until_done(connection)

    failed, answered = asyncio.run(session())
    error = of(failed, "error")[0].error
    assert (error.type, error.code, error.message) == (
        "requests",
        "rate_limit_exceeded",
        "Rate limit exceeded (simulated)",
    )
    assert (
        failed[-1].response.status == "failed"
        and failed[-1].response.status_details.error.code == "rate_limit_exceeded"
    )
    assert answered[-1].response.status == "completed"


def test_a_bad_event_gets_an_error_naming_it_and_the_session_goes_on(
    harness_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    make_scenario("rt-bad", [{"turn": 1, "response": {"kind": "text", "assistant_text": "Still here."}}])

    async def session() -> tuple[Any, Any, list[Any]]:
        async with connect(harness_server, api_key, str(uuid.uuid4())) as connection:
            await connection.recv()
            await connection.send({"type": "conversation.item.create", "item": {"type": "message", "role": "user"}})
            missing = await connection.recv()
            await connection.send({"type": "input_audio_buffer.commit"})
            empty = await connection.recv()
            await connection.conversation.item.create(item=user_text("rt-bad"))
            await connection.response.create()
            return missing, empty, await until_done(connection)

    missing, empty, events = asyncio.run(session())
    assert missing.type == "error" and (missing.error.param, missing.error.type) == (
        "item.content",
        "invalid_request_error",
    )
    assert empty.error.code == "input_audio_buffer_commit_empty"
    assert events[-1].response.status == "completed"


def test_a_socket_without_a_key_is_refused_when_keys_are_required(
    harness_server: LiveServer, transactional_db: None
) -> None:
    keyless = openai.AsyncOpenAI(
        base_url=f"{harness_server.url}/v1", api_key="sk-unsent", default_headers={"Authorization": openai.Omit()}
    )

    async def session() -> list[Any]:
        events: list[Any] = []
        async with keyless.realtime.connect(
            model="gpt-realtime", extra_headers={"X-Harness-Require-Key": "1"}
        ) as connection:
            async for event in connection:
                events.append(event)
        return events

    events = asyncio.run(session())
    assert [e.type for e in events] == ["session.created", "error"]
    assert events[1].error.message.startswith("You didn't provide an API key.")


def test_a_paced_response_streams_its_deltas_apart_and_response_cancel_stops_it(
    paced_server: LiveServer, api_key: str, transactional_db: None
) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    make_scenario(
        "rt-paced",
        [{"turn": 1, "response": {"kind": "text", "assistant_text": words}}],
        pacing={"chunk_words": 1, "interval_ms": 100},
    )

    async def session() -> tuple[list[float], list[Any]]:
        async with connect(paced_server, api_key, str(uuid.uuid4())) as connection:
            await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
            await connection.conversation.item.create(item=user_text("rt-paced"))
            await connection.response.create()
            times, events = [], []
            async for event in connection:
                events.append(event)
                if event.type == "response.output_text.delta":
                    times.append(asyncio.get_running_loop().time())
                    if len(times) == 3:
                        await connection.response.cancel()
                if event.type == "response.done":
                    return times, events
        raise AssertionError("no response.done")

    times, events = asyncio.run(session())
    assert times[2] - times[0] >= 0.15  # paced: 100 ms between deltas
    assert events[-1].response.status == "cancelled"
    assert events[-1].response.status_details.reason == "client_cancelled"
    assert len(of(events, "response.output_text.delta")) < 10
