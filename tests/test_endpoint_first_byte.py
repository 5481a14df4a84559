"""A response that waits before its first body frame (``slow_first_byte``'s stall) sends its status line and headers
at once, then silence, from daphne (as ``make run`` starts it, through harnessweb/serve.py) and from uvicorn alike:
the client sees the headers long before the stall ends, as the README's failure table promises.

Measured on a raw socket, so no client library's buffering hides when the bytes arrive.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import LiveServer, make_scenario, start_server

STALL_MS = 1000
ANSWER = "Stalled, then whole."


@pytest.fixture(scope="module")
def uvicorn_server(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[LiveServer]:
    """uvicorn serving the same app on the test database, pacing off."""
    server = start_server(tmp_path_factory.mktemp("uvicorn"), {"HARNESS_PACING": "off"}, server="uvicorn")
    yield server
    server.process.terminate()
    server.process.wait(10)


@pytest.fixture(params=["daphne", "uvicorn"])
def server(request: pytest.FixtureRequest) -> LiveServer:
    return request.getfixturevalue("harness_server" if request.param == "daphne" else "uvicorn_server")


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


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_slow_first_byte_sends_the_headers_at_once(server: LiveServer, transactional_db: None, stream: bool) -> None:
    make_scenario("stall", [{"turn": 1, "failures_before_success": "always", "failure_status": "slow_first_byte",
                             "failure_retry_after_ms": STALL_MS,
                             "response": {"kind": "text", "assistant_text": ANSWER}}])  # fmt: skip
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": "stall"}]}
    headers_at, ended, received = timed_post(server.url, "/v1/chat/completions", body)
    assert received.startswith(b"HTTP/1.1 200 ")
    assert headers_at < 0.5, f"the headers came after {headers_at:.3f} s, with the body"
    assert ended >= STALL_MS / 1000 * 0.9, f"the answer came after {ended:.3f} s, before the stall ended"
    assert b"Stalled," in received and (b"[DONE]" in received) == stream
