"""Amazon Bedrock's protocols, pure: the AWS event-stream framing and its checksums (decoded by botocore's own
``EventStreamBuffer``), Converse and ConverseStream (parsed by botocore's own response parsers against the
bedrock-runtime service model), Claude through InvokeModel, Bedrock's errors, the routes and the SigV4 key."""

from __future__ import annotations

import base64
import struct
import zlib

import orjson
import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from botocore.loaders import Loader
from botocore.model import ServiceModel
from botocore.parsers import EventStreamJSONParser, RestJSONParser

from harnessweb.engine import keys, respond, routes
from harnessweb.engine.exchange import Block, ChatRequest, Failure, Reply, Usage
from harnessweb.engine.stream_summary import summarize
from harnessweb.engine.wire import bedrock, bedrock_claude, eventstream
from harnessweb.engine.wire.common import WireError

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"
SERVICE = ServiceModel(Loader().load_service_model("bedrock-runtime", "service-2"))
REPLY = Reply(
    (
        Block("reasoning", text="Check the weather", signature="c2lnbmVk"),
        Block("text", text="Looking it up for you now"),
        Block("tool_call", call_id="call_7", name="get_weather", arguments='{"city":"Paris"}', derived_id=True),
    ),
    "tool_calls",
    Usage(11, 9, 20),
    chunk_words=3,
)
SIGNED = (
    "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20261124/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date, Signature=" + "0f" * 32
)


def read(path: str, body: object) -> ChatRequest:
    route = routes.resolve("POST", path, {})
    assert isinstance(route, routes.Route) and route.kind == "play"
    _, request = respond.read_request(route, orjson.dumps(body))
    assert isinstance(request, ChatRequest)
    return request


def decoded(body: bytes) -> list:
    buffer = EventStreamBuffer()
    buffer.add_data(body)
    return list(buffer)


def parsed_stream(body: bytes, shape: str = "ConverseStreamOutput") -> list[dict]:
    """Each event as boto3 hands it to a program: botocore's event-stream parser on the service's shape."""
    return [EventStreamJSONParser().parse(m.to_response_dict(), SERVICE.shape_for(shape)) for m in decoded(body)]


def http_parsed(encoded, operation: str = "Converse") -> dict:
    headers = {k.decode(): v.decode() for k, v in encoded.headers}
    response = {"status_code": encoded.status, "headers": headers, "body": encoded.body}
    return RestJSONParser().parse(response, SERVICE.operation_model(operation).output_shape)


# -- the framing -------------------------------------------------------------------------------------------------


def test_it_frames_a_message_with_both_checksums_as_botocore_reads_them() -> None:
    frame = eventstream.event("messageStart", b'{"role":"assistant"}')
    total, headers_length, prelude_crc = struct.unpack(">III", frame[:12])
    assert total == len(frame) and prelude_crc == zlib.crc32(frame[:8])
    assert struct.unpack(">I", frame[-4:])[0] == zlib.crc32(frame[:-4])
    assert frame[12:13] == bytes((len(":event-type"),)) and frame[13:24] == b":event-type" and frame[24] == 7
    (message,) = decoded(frame)
    assert message.headers == {":event-type": "messageStart", ":content-type": "application/json",
                               ":message-type": "event"}  # fmt: skip
    assert message.payload == b'{"role":"assistant"}' and 12 + headers_length + 20 + 4 == total
    assert list(eventstream.messages(frame)) == [(message.headers, message.payload)]


def test_it_refuses_a_message_whose_checksum_does_not_hold_as_botocore_does() -> None:
    frame = bytearray(eventstream.event("contentBlockStop", b'{"contentBlockIndex":0}'))
    frame[-10] ^= 0x01  # one bit of the payload
    with pytest.raises(ChecksumMismatch):
        decoded(bytes(frame))
    with pytest.raises(eventstream.FramingError, match="message checksum mismatch"):
        list(eventstream.messages(bytes(frame)))
    assert eventstream.is_eventstream(bytes(frame)) and not eventstream.is_eventstream(b'{"output":{}}')
    # A body that ends inside a message yields the whole ones before it, as a client waits for the rest.
    two = eventstream.event("messageStart", b"{}") + bytes(frame)[:20]
    assert [h[":event-type"] for h, _ in eventstream.messages(two)] == ["messageStart"]


# -- Converse ----------------------------------------------------------------------------------------------------


def test_it_reads_the_model_and_streaming_from_the_percent_encoded_path() -> None:
    body = {"messages": [{"role": "user", "content": [{"text": "hello"}]}]}
    plain = read("/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse", body)
    assert (plain.protocol, plain.model, plain.stream, plain.model_missing) == ("bedrock", MODEL, False, False)
    streamed = read(f"/model/{MODEL}/converse-stream", body)
    assert (streamed.model, streamed.stream) == (MODEL, True)
    assert routes.play_wire(f"/model/{MODEL}/converse") is bedrock
    # An inference profile's ARN as the model id: boto3 percent-encodes its slash, the server decodes it.
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0"
    assert read(f"/model/{arn}/converse-stream", body).model == arn
    assert read(f"/model/{arn.replace('/', '%2F')}/invoke", INVOKE).model == arn
    assert routes.is_provider_path("/model/x/converse") and routes.error_wire("/model/x/nothing", {}) is bedrock


def test_it_reads_a_conversation_with_tools_tool_results_and_reasoning() -> None:
    body = {
        "system": [{"text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"text": "weather?"}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Check it", "signature": "sig"}}},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1",
                                                         "content": [{"json": {"sky": "clear"}}, {"text": "warm"}]}}]},
        ],
        "inferenceConfig": {"maxTokens": 300, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]},
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_weather", "inputSchema": {"json": {"type": "object"}}}}],
                       "toolChoice": {"tool": {"name": "get_weather"}}},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    }  # fmt: skip
    request = read(f"/model/{MODEL}/converse", body)
    assert [(m.role, m.text) for m in request.messages] == [
        ("user", "weather?"),
        ("assistant", ""),
        ("tool", '{"sky":"clear"}\nwarm'),
    ]
    thinking = request.messages[1].thinking[0]
    assert (thinking.text, thinking.signature) == ("Check it", "sig")
    assert thinking.where == "messages.1.content.0.reasoningContent.reasoningText"
    assert (request.system, request.tools, request.temperature, request.top_p) == (
        "Be brief.",
        ("get_weather",),
        0.2,
        0.9,
    )
    assert (request.max_tokens, request.stop, request.forced_tool) == (300, ("END",), "get_weather")
    assert request.tool_schemas == (("get_weather", '{"type":"object"}'),) and request.reasoning_enabled


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        ({}, "messages", "Value at 'messages' failed to satisfy constraint: Member must have length greater"),
        ({"messages": [{"role": "system", "content": []}]}, "messages.0.role", "enum value set: [user, assistant]"),
        ({"messages": [{"role": "assistant", "content": [{"text": "hi"}]}]}, "messages.0.role",
         "A conversation must start with a user message."),
        ({"messages": [{"role": "user", "content": "hi"}]}, "messages.0.content", "Member must be a list"),
        ({"messages": [{"role": "user", "content": [{"text": "hi"}]}], "inferenceConfig": {"maxTokens": 0}},
         "inferenceConfig.maxTokens", "greater than or equal to 1"),
        ({"messages": [{"role": "user", "content": [{"text": "hi"}]}], "toolConfig": {"tools": [{"toolSpec": {}}]}},
         "toolConfig.tools.0.toolSpec.name", "Member must not be null"),
    ],
)  # fmt: skip
def test_it_refuses_a_bad_body_naming_the_field(body, param, message) -> None:
    with pytest.raises(WireError) as caught:
        read(f"/model/{MODEL}/converse", body)
    assert caught.value.param == param and message in caught.value.message


def test_it_writes_a_converse_response_botocore_parses() -> None:
    encoded = bedrock.encode_reply(REPLY, ChatRequest(protocol="bedrock", model=MODEL))
    assert encoded.headers == ((b"content-type", b"application/json"),)
    assert orjson.loads(encoded.body) == {
        "output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Check the weather", "signature": "c2lnbmVk"}}},
            {"text": "Looking it up for you now"},
            {"toolUse": {"toolUseId": "tooluse_7", "name": "get_weather", "input": {"city": "Paris"}}}]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 11, "outputTokens": 9, "totalTokens": 20},
        "metrics": {"latencyMs": 0},
    }  # fmt: skip
    parsed = http_parsed(encoded)
    assert parsed["stopReason"] == "tool_use" and parsed["usage"]["totalTokens"] == 20
    assert parsed["output"]["message"]["content"][2]["toolUse"]["input"] == {"city": "Paris"}


def test_it_streams_converse_events_botocore_parses_in_order() -> None:
    encoded = bedrock.encode_reply(REPLY, ChatRequest(protocol="bedrock", model=MODEL, stream=True))
    assert encoded.headers == ((b"content-type", b"application/vnd.amazon.eventstream"),)
    assert len(encoded.frames) == len(encoded.pieces) == len(decoded(encoded.body))
    events = parsed_stream(encoded.body)
    assert events == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"text": "Check the weather"}}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"signature": "c2lnbmVk"}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "Looking it up"}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"text": " for you now"}, "contentBlockIndex": 1}},
        {"contentBlockStop": {"contentBlockIndex": 1}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "tooluse_7", "name": "get_weather"}},
                               "contentBlockIndex": 2}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city":"Paris"}'}}, "contentBlockIndex": 2}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 11, "outputTokens": 9, "totalTokens": 20}, "metrics": {"latencyMs": 0}}},
    ]  # fmt: skip
    assert [p.text for p in encoded.pieces if p is not None] == [
        "Check the weather", "Looking it up", " for you now", "get_weather", '{"city":"Paris"}'
    ]  # fmt: skip


def test_it_reads_back_its_own_stream_and_a_broken_one() -> None:
    encoded = bedrock.encode_stream(REPLY)
    summary = summarize(encoded.body, headers=[(k.decode(), v.decode()) for k, v in encoded.headers])
    assert (summary.protocol, summary.text, summary.thinking, summary.stop_reason) == (
        "bedrock", "Looking it up for you now", "Check the weather", "tool_use"
    )  # fmt: skip
    assert summary.thinking_blocks[0].signature == "c2lnbmVk" and summary.usage["totalTokens"] == 20
    cut = summarize(b"".join(encoded.frames[:-1]))  # no metadata event: the stream never ended
    assert not cut.has_done and cut.text == "Looking it up for you now"
    broken = bedrock.malformed(True)
    assert summarize(broken.body).stream_error == "event stream: message checksum mismatch in the message at byte 0"


# -- errors ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "status", "code"),
    [
        (Failure("rate_limit", "Too many requests", True, 2000), 429, "ThrottlingException"),
        (Failure("auth_error", "The security token included in the request is invalid.", False, None), 403,
         "UnrecognizedClientException"),
        (Failure("model_error", "boom", False, None), 424, "ModelErrorException"),
        (Failure("model_error", "boom", True, None), 500, "InternalServerException"),
        (Failure("overloaded", "busy", True, None), 503, "ServiceUnavailableException"),
        (Failure("rate_limit", "teapot", True, None, http_status=418), 418, "ValidationException"),
    ],
)  # fmt: skip
def test_it_sends_failures_in_bedrocks_error_shape_botocore_reads(failure, status, code) -> None:
    encoded = bedrock.encode_failure(failure, "req_1")
    assert encoded.status == status and orjson.loads(encoded.body) == {"message": failure.message}
    assert dict(encoded.headers)[b"x-amzn-errortype"].startswith(code.encode() + b":http://internal.amazon.com/")
    assert http_parsed(encoded)["Error"] == {"Code": code, "Message": failure.message}
    if failure.retry_after_ms:
        assert dict(encoded.headers)[b"retry-after"] == b"2"


def test_it_sends_a_streamed_failure_as_an_exception_event() -> None:
    encoded = bedrock.encode_stream_failure(Failure("rate_limit", "Too many tokens", True, None))
    assert encoded is not None and encoded.status == 200
    (message,) = decoded(encoded.body)
    assert message.headers[":message-type"] == "exception"
    error = EventStreamJSONParser().parse(message.to_response_dict(), SERVICE.shape_for("ConverseStreamOutput"))
    assert error["Error"] == {"Code": "throttlingException", "Message": "Too many tokens"}
    # Refused before any stream opens: a kind no stream event names, or an HTTP status the scenario sets.
    assert bedrock.encode_stream_failure(Failure("auth_error", "no", False, None)) is None
    assert bedrock.encode_stream_failure(Failure("rate_limit", "x", True, None, http_status=429)) is None
    request = ChatRequest(protocol="bedrock", model=MODEL, stream=True)
    decision = respond.Decision("scenario", "s", 1, REPLY)
    out = respond.failure_outgoing(bedrock, Failure("server_error", "oops", True, None), decision, request, "r", 0)
    assert out.encoded.status == 200 and decoded(out.encoded.body)[0].headers[":exception-type"] == (
        "internalServerException"
    )
    summary = summarize(out.encoded.body)
    assert summary.timeline == ["error"] and summary.error.type == "internalServerException"


# -- Claude through InvokeModel ----------------------------------------------------------------------------------

INVOKE = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def test_it_reads_an_anthropic_body_with_the_model_from_the_path() -> None:
    request = read(f"/model/{MODEL}/invoke", INVOKE)
    assert (request.protocol, request.model, request.stream, request.max_tokens) == ("bedrock_claude", MODEL, False, 64)
    assert read(f"/model/{MODEL}/invoke-with-response-stream", INVOKE).stream
    assert routes.play_wire(f"/model/{MODEL}/invoke-with-response-stream") is bedrock_claude


@pytest.mark.parametrize(
    ("body", "param", "detail"),
    [
        ({k: v for k, v in INVOKE.items() if k != "anthropic_version"}, "anthropic_version",
         "#: required key [anthropic_version] not found"),
        ({**INVOKE, "model": MODEL}, "model", "#: extraneous key [model] is not permitted"),
        ({**INVOKE, "max_tokens": None}, "max_tokens", "#: max_tokens: Field required (an integer)"),
    ],
)  # fmt: skip
def test_it_refuses_an_invoke_body_in_bedrocks_words(body, param, detail) -> None:
    with pytest.raises(WireError) as caught:
        read(f"/model/{MODEL}/invoke", body)
    assert caught.value.param == param
    assert caught.value.message == f"Malformed input request: {detail}, please reformat your input and try again."


def test_it_sends_claudes_message_with_bedrocks_token_headers() -> None:
    encoded = bedrock_claude.encode_reply(REPLY, ChatRequest(protocol="bedrock_claude", model=MODEL))
    headers = dict(encoded.headers)
    assert (
        headers[b"x-amzn-bedrock-input-token-count"] == b"11" and headers[b"x-amzn-bedrock-output-token-count"] == b"9"
    )
    message = orjson.loads(encoded.body)
    assert message["type"] == "message" and message["model"] == MODEL and message["stop_reason"] == "tool_use"


def test_it_streams_claudes_events_as_base64_chunks() -> None:
    encoded = bedrock_claude.encode_reply(REPLY, ChatRequest(protocol="bedrock_claude", model=MODEL, stream=True))
    assert dict(encoded.headers)[b"content-type"] == b"application/vnd.amazon.eventstream"
    events = parsed_stream(encoded.body, "ResponseStream")
    payloads = [orjson.loads(event["chunk"]["bytes"]) for event in events]  # botocore decodes the base64 blob
    kinds = [p["type"] for p in payloads]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"] and "ping" not in kinds
    assert payloads[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] == 9
    raw = orjson.loads(decoded(encoded.body)[0].payload)["bytes"]
    assert orjson.loads(base64.b64decode(raw))["message"]["model"] == MODEL
    assert len(encoded.frames) == len(encoded.pieces) == len(events)
    summary = summarize(encoded.body)
    assert summary.text == "Looking it up for you now" and summary.has_done and summary.stop_reason == "tool_use"


# -- the key -----------------------------------------------------------------------------------------------------


def test_it_fingerprints_the_access_key_id_of_a_sigv4_signature() -> None:
    key = keys.presented({"authorization": SIGNED, "x-amz-date": "20261124T000000Z"})
    assert key == keys.Key("authorization", keys.fingerprint("AKIAEXAMPLE"))
    other = SIGNED.replace("0f" * 32, "1e" * 32).replace("20261124", "20261125")
    assert keys.presented({"authorization": other}) == key  # each request's signature differs, the key does not


def test_it_refuses_a_missing_or_malformed_signature_when_keys_must_arrive() -> None:
    signed = {"authorization": SIGNED, "x-amz-date": "20261124T000000Z"}
    assert keys.refusal("bedrock", signed) is None
    assert keys.refusal("bedrock_claude", {"authorization": "Bearer bedrock-api-key"}) is None
    assert keys.refusal("bedrock", {"x-api-key": "k"}) == (403, "Missing Authentication Token")
    status, message = keys.refusal("bedrock", {"authorization": "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/x"})
    assert status == 403 and message.startswith("Authorization header requires 'Signature' parameter.")
    assert "'X-Amz-Date' or a 'Date' header" in message
    refused = bedrock.encode_error(403, message)
    assert http_parsed(refused)["Error"]["Code"] == "IncompleteSignatureException"
    missing = bedrock.encode_error(403, "Missing Authentication Token")
    assert http_parsed(missing)["Error"]["Code"] == "MissingAuthenticationTokenException"


def test_it_names_the_run_from_an_access_key_id() -> None:
    run = "5f0c6b7e-8d1a-4c2b-9e3f-0a1b2c3d4e5f"
    header = SIGNED.replace("AKIAEXAMPLE", f"harness-run-{run}")
    assert str(keys.run_named({"authorization": header})) == run


def test_it_calls_headers_it_cannot_read_a_framing_error() -> None:
    frame = eventstream.message(((":event-type", "chunk"),), b"{}")
    lying = bytearray(frame)
    lying[12] = 200  # a header name longer than the headers: the checksums still hold once recomputed
    lying[8:12] = struct.pack(">I", zlib.crc32(bytes(lying[:8])))
    lying[-4:] = struct.pack(">I", zlib.crc32(bytes(lying[:-4])))
    with pytest.raises(eventstream.FramingError, match="unreadable headers|not a string"):
        list(eventstream.messages(bytes(lying)))
    assert summarize(bytes(lying)).stream_error.startswith("event stream: ")
