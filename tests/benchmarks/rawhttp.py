"""Raw HTTP for the benchmarks: a request's bytes, a response read back and un-chunked, one fetch."""

from __future__ import annotations

import socket

HOST = "127.0.0.1"
PATH = "/v1/chat/completions"


# -- raw HTTP -----------------------------------------------------------------------------------------------------


def request_bytes(port: int, body: bytes) -> bytes:
    """HTTP/1.0, as ab sends it: a streamed answer without Content-Length ends when the server closes."""
    head = (
        f"POST {PATH} HTTP/1.0\r\nHost: {HOST}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nAccept: */*\r\n\r\n"
    )
    return head.encode() + body


def dechunk(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


def parse_response(raw: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body (de-chunked: uvicorn answers HTTP/1.0 with chunked encoding too)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1]) if lines and lines[0].startswith("HTTP/") else 0
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip().lower(), value.strip()))
    if ("transfer-encoding", "chunked") in headers:
        body = dechunk(body)
    return status, headers, body


def fetch(port: int, body: bytes, timeout: float = 10) -> tuple[int, list[tuple[str, str]], bytes, int]:
    """One request; also returns the length of the body as sent on the wire (what ab calls Document Length)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(request_bytes(port, body))
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    raw = b"".join(chunks)
    return (*parse_response(raw), len(raw.partition(b"\r\n\r\n")[2]))
