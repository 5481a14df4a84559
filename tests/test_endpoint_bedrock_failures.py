"""Every failure kind a turn can script, served on Amazon Bedrock's paths by the real server and met by its official
clients with retries off: boto3's ``bedrock-runtime`` (``converse`` / ``converse_stream``) and
``anthropic.AnthropicBedrock`` (``messages.create`` / ``messages.stream``). What each raises is measured here, and the
README's Bedrock failure table is the same table (a row that drifts from what the clients do fails this test)."""

from __future__ import annotations

import anthropic
import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError

from harnessweb.engine.configured import FAILURE_KINDS
from tests.conftest import docs_text
from tests.test_endpoint_failure_kinds import ANSWER, CLIENT_TIMEOUT_S, failing

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"

# kind -> (what Bedrock sends, then what boto3 and AnthropicBedrock raise: "X" both ways, "X / Y" for a plain call /
# a streamed one; "answer" when the call returns the whole answer, "answer, empty" when it returns without raising
# but with no message: botocore hands back a body it cannot parse as ``{"message": …}``).
TABLE: dict[str, tuple[str, str, str]] = {
    "rate_limit": ("429 `ThrottlingException`; streamed, a `throttlingException` event",
                   "ThrottlingException / EventStreamError `throttlingException`", "RateLimitError / APIStatusError"),
    "model_error": (
        "500 `InternalServerException` when `failure_retryable` (default), else 424 `ModelErrorException`; "
        "streamed, a `modelStreamErrorException` event",
        "InternalServerException / EventStreamError `modelStreamErrorException`",
        "InternalServerError / APIStatusError",
    ),
    "auth_error": ("403 `UnrecognizedClientException`", "ClientError `UnrecognizedClientException`",
                   "PermissionDeniedError"),
    "permission_error": ("403 `AccessDeniedException`", "AccessDeniedException", "PermissionDeniedError"),
    "not_found": ("404 `ResourceNotFoundException`", "ResourceNotFoundException", "NotFoundError"),
    "bad_request": ("400 `ValidationException`; streamed, a `validationException` event",
                    "ValidationException / EventStreamError `validationException`", "BadRequestError / APIStatusError"),
    "request_too_large": (
        "400 `ValidationException` (Bedrock's answer to too long an input); streamed, a `validationException` event",
        "ValidationException / EventStreamError `validationException`", "BadRequestError / APIStatusError",
    ),
    "server_error": ("500 `InternalServerException`; streamed, an `internalServerException` event",
                     "InternalServerException / EventStreamError `internalServerException`",
                     "InternalServerError / APIStatusError"),
    "bad_gateway": ("502 `InternalServerException`; streamed, an `internalServerException` event",
                    "InternalServerException / EventStreamError `internalServerException`",
                    "InternalServerError / APIStatusError"),
    "unavailable": ("503 `ServiceUnavailableException`; streamed, a `serviceUnavailableException` event",
                    "ServiceUnavailableException / EventStreamError `serviceUnavailableException`",
                    "ServiceUnavailableError / APIStatusError"),
    "overloaded": ("503 `ServiceUnavailableException`; streamed, a `serviceUnavailableException` event",
                   "ServiceUnavailableException / EventStreamError `serviceUnavailableException`",
                   "ServiceUnavailableError / APIStatusError"),
    "timeout": (
        "nothing for `failure_retry_after_ms` (default 30 s), then 408 `ModelTimeoutException` (here: a client "
        "timeout shorter than that)",
        "ReadTimeoutError", "APITimeoutError",
    ),
    "network_error": ("the connection cut midway (mid-stream when streaming)",
                      "ConnectionClosedError / ProtocolError", "APIConnectionError / RemoteProtocolError"),
    "invalid_response": ("200 with a body no client can parse (streamed, a message whose checksum does not hold)",
                         "answer, empty / ChecksumMismatch", "JSONDecodeError / ChecksumMismatch"),
    "wrong_content_type": ("200, the answer as `text/plain`", "answer", "answer"),
    "missing_content_type": ("200, the answer with no `Content-Type`", "answer", "answer"),
    "invalid_json_in_stream": (
        "200, a message cut in the middle, so the framing breaks (a plain call: a body that is not JSON)",
        "answer, empty / ChecksumMismatch", "JSONDecodeError / ChecksumMismatch",
    ),
    "invalid_utf8": (
        "200, bytes that are not UTF-8 in the middle of the text (streamed, inside a message: its checksum fails)",
        "UnicodeDecodeError / ChecksumMismatch", "UnicodeDecodeError / ChecksumMismatch",
    ),
    "truncated_stream": (
        "200, the stream ends cleanly without its last event (`metadata`, or InvokeModel's `message_stop` chunk); "
        "a plain call's JSON body cut short",
        "answer, empty / answer", "JSONDecodeError / answer",
    ),
    "slow_first_byte": (
        "the status line and headers at once (from daphne as `make run` serves it, and from uvicorn), then nothing "
        "for `failure_retry_after_ms` (default 5 s), then the answer",
        "answer", "answer",
    ),
}  # fmt: skip
CLIENTS = ("boto3", "AnthropicBedrock")


def expected(kind: str, client: str, stream: bool) -> str:
    plain, _, streamed = TABLE[kind][1 + CLIENTS.index(client)].partition(" / ")
    return (streamed or plain) if stream else plain


def readme_row(kind: str) -> str:
    return f"| `{kind}` | {' | '.join(TABLE[kind])} |"


def _named(exc: Exception) -> str:
    """What a client raised, as the table names it: botocore's modelled exception class, else ``ClientError`` or
    ``EventStreamError`` with the code Bedrock sent."""
    if isinstance(exc, EventStreamError):
        return f"EventStreamError `{exc.response['Error']['Code']}`"
    if isinstance(exc, ClientError) and type(exc).__name__ == "ClientError":
        return f"ClientError `{exc.response['Error']['Code']}`"
    return type(exc).__name__


def call(client: str, url: str, scenario: str, stream: bool, timeout: float) -> str:
    """One call through the client, retries off: ``answer`` or the name of what it raised."""
    try:
        if client == "boto3":
            runtime = boto3.client("bedrock-runtime", endpoint_url=url, region_name="us-east-1",
                                   aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="fake-secret-key",
                                   config=Config(retries={"total_max_attempts": 1}, read_timeout=timeout))  # fmt: skip

            def name_scenario(request, **kwargs) -> None:
                request.headers["X-Harness-Scenario"] = scenario

            runtime.meta.events.register("before-sign.bedrock-runtime.*", name_scenario)
            messages = [{"role": "user", "content": [{"text": "hello"}]}]
            if stream:
                events = runtime.converse_stream(modelId=MODEL, messages=messages)["stream"]
                text = "".join(
                    e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e
                )
            else:
                output = runtime.converse(modelId=MODEL, messages=messages).get("output")
                if output is None:  # a body botocore could not parse, handed back as {"message": …}
                    return "answer, empty"
                text = output["message"]["content"][0]["text"]
        else:
            claude = anthropic.AnthropicBedrock(aws_access_key="AKIAEXAMPLE", aws_secret_key="fake-secret-key",
                                                aws_region="us-east-1", base_url=url, max_retries=0, timeout=timeout,
                                                default_headers={"X-Harness-Scenario": scenario})  # fmt: skip
            request = {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "hello"}]}
            if stream:
                with claude.messages.stream(**request) as events:
                    text = events.get_final_message().content[0].text
            else:
                text = claude.messages.create(**request).content[0].text
    except Exception as exc:  # noqa: BLE001 - what the client raises is the measurement
        return _named(exc)
    return "answer" if text == ANSWER else "answer, cut"


def test_it_covers_every_failure_kind() -> None:
    assert set(TABLE) == set(FAILURE_KINDS)


def test_it_keeps_the_readme_table_the_same_as_the_measured_one() -> None:
    readme = docs_text()
    missing = [kind for kind in TABLE if readme_row(kind) not in readme]
    assert not missing, "README rows differ for: " + ", ".join(missing) + "\n" + "\n".join(map(readme_row, missing))


@pytest.mark.parametrize("kind", sorted(FAILURE_KINDS))
def test_it_serves_each_failure_kind_as_the_table_says(harness_server, transactional_db, kind: str) -> None:
    scenario = failing(kind, "bedrock-fails")
    measured = {
        (client, stream): call(client, harness_server.url, scenario, stream, CLIENT_TIMEOUT_S.get(kind, 10.0))
        for client in CLIENTS
        for stream in (False, True)
    }
    wanted = {(client, stream): expected(kind, client, stream) for client in CLIENTS for stream in (False, True)}
    assert measured == wanted
