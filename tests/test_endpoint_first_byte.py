"""A response that waits before its first body frame (``slow_first_byte``'s stall) sends its status line and headers
at once, then silence, from daphne (as ``make run`` starts it, through harnessweb/serve.py) and from uvicorn alike:
the client sees the headers long before the stall ends, on OpenAI's paths and Bedrock's, as the README's failure
tables promise.

Measured on a raw socket, so no client library's buffering hides when the bytes arrive.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import LiveServer, make_scenario

STALL_MS = 1000
ANSWER = "Stalled, then whole."


def timed_post(url: str, path: str, body: dict[str, Any]) -> tuple[float, float, bytes]:
    """POST over a raw socket: seconds until the end of the headers, seconds until the end of the response (the
    server closes the connection), and the bytes received."""
    parts = urlsplit(url)
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer sk-first-byte\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    received, headers_at = b"", None
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        started = time.perf_counter()
        sock.sendall(head.encode() + payload)
        while chunk := sock.recv(65536):
            received += chunk
            if headers_at is None and b"\r\n\r\n" in received:
                headers_at = time.perf_counter() - started
        ended = time.perf_counter() - started
    assert headers_at is not None, received
    return headers_at, ended, received


# Each protocol's path for a plain call and for a stream, and its body: the stall is the same for every wire, and
# the README's tables promise it for OpenAI's, Anthropic's and Gemini's SDKs and for Bedrock's alike.
PROTOCOLS = {
    "openai": (
        "/v1/chat/completions", "/v1/chat/completions",
        lambda stream: {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "stall"}]},
    ),
    "bedrock": (
        "/model/m/converse", "/model/m/converse-stream",
        lambda stream: {"messages": [{"role": "user", "content": [{"text": "stall"}]}]},
    ),
}  # fmt: skip


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_slow_first_byte_sends_the_headers_at_once(
    server: LiveServer, transactional_db: None, stream: bool, protocol: str
) -> None:
    make_scenario("stall", [{"turn": 1, "failures_before_success": "always", "failure_status": "slow_first_byte",
                             "failure_retry_after_ms": STALL_MS,
                             "response": {"kind": "text", "assistant_text": ANSWER}}])  # fmt: skip
    plain, streamed, body = PROTOCOLS[protocol]
    headers_at, ended, received = timed_post(server.url, streamed if stream else plain, body(stream))
    assert received.startswith(b"HTTP/1.1 200 "), received[:300]
    assert headers_at < 0.5, f"the headers came after {headers_at:.3f} s, with the body"
    assert ended >= STALL_MS / 1000 * 0.9, f"the answer came after {ended:.3f} s, before the stall ended"
    assert b"Stalled," in received
    if protocol == "openai":
        assert (b"[DONE]" in received) == stream
    else:
        assert (b"application/vnd.amazon.eventstream" in received) == stream
