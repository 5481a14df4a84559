"""A ``websocket.close``'s reason reaches the client under daphne (``harnessweb/daphne_ws.py``): daphne 4.2 drops
it, so a failure a scenario scripts on Gemini Live reached google-genai without its message. Proved through
``harness serve --tls`` (daphne through ``harnessweb.serve``, as ``make run``) with google-genai's live client and a
raw ``websockets`` client, and on the protocol itself for what the server never sends (long reasons, no reason)."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
import websockets
from google import genai
from google.genai import errors, types

from harnessweb import daphne_ws
from harnessweb.engine.wire.gemini_live import PATH
from tests.test_live_gemini_sdk import served_tls

MESSAGE = "Quota exceeded for gemini-live-2.5-flash: retry in 30 s (scripted)."
REASON = f"RESOURCE_EXHAUSTED: {MESSAGE}"
SCENARIOS = [
    {
        "id": "live-quota",
        "turns": [
            {
                "turn": 1,
                "response": {"kind": "text", "assistant_text": "Never said."},
                "failures_before_success": 5,
                "failure_status": "rate_limit",
                "failure_message": MESSAGE,
            }
        ],
    }
]


@pytest.fixture(scope="module")
def daphne_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with served_tls(tmp_path_factory.mktemp("close-reason"), SCENARIOS) as line:
        yield line


def test_google_genai_s_api_error_carries_the_scripted_failure_under_daphne(
    daphne_tls: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", daphne_tls["ca"])
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=daphne_tls["url"]))
    config = types.LiveConnectConfig(response_modalities=[types.Modality.TEXT])

    async def session() -> errors.APIError:
        async with client.aio.live.connect(model="gemini-live-2.5-flash", config=config) as live:
            await live.send_client_content(
                turns={"role": "user", "parts": [{"text": "live-quota"}]}, turn_complete=True
            )
            with pytest.raises(errors.APIError) as raised:
                async for _ in live.receive():
                    pass
            return raised.value

    error = asyncio.run(session())

    assert error.code == 1000
    assert error.details == REASON
    assert MESSAGE in str(error)


def test_a_raw_websocket_client_reads_the_reason_in_the_close_frame(daphne_tls: dict[str, Any]) -> None:
    url = daphne_tls["url"].replace("https://", "wss://") + PATH + "?key=test-key"

    async def session() -> websockets.ConnectionClosed:
        context = ssl.create_default_context(cafile=daphne_tls["ca"])
        async with websockets.connect(url, ssl=context) as socket:
            await socket.send(json.dumps({"setup": {"model": "models/gemini-live-2.5-flash"}}))
            assert "setupComplete" in json.loads(await socket.recv())
            turn = {"turns": [{"role": "user", "parts": [{"text": "live-quota"}]}], "turnComplete": True}
            await socket.send(json.dumps({"clientContent": turn}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await socket.recv()
            return closed.value

    closed = asyncio.run(session())

    assert closed.rcvd is not None
    assert (closed.rcvd.code, closed.rcvd.reason) == (1000, REASON)


def test_a_refusal_s_reason_reaches_the_client_too(daphne_tls: dict[str, Any]) -> None:
    url = daphne_tls["url"].replace("https://", "wss://") + PATH + "?key=test-key"

    async def session() -> websockets.ConnectionClosed:
        async with websockets.connect(url, ssl=ssl.create_default_context(cafile=daphne_tls["ca"])) as socket:
            await socket.send(json.dumps({"clientContent": {"turns": []}}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await socket.recv()
            return closed.value

    closed = asyncio.run(session())

    assert closed.rcvd is not None and closed.rcvd.reason == "clientContent: the first message must be setup."


class Recorded(daphne_ws.ReasonedWebSocketProtocol):
    """The protocol without a connection: what it would put in the close frame."""

    def __init__(self, state: int) -> None:  # (autobahn's own __init__ needs a factory and a transport)
        self.state = state
        self.closes: list[tuple[int | None, str | None]] = []
        self.rejected = False

    def sendClose(self, code: int | None = None, reason: str | None = None) -> None:  # noqa: N802
        self.closes.append((code, reason))

    def serverReject(self) -> None:  # noqa: N802
        self.rejected = True


def test_a_reason_longer_than_a_close_frame_holds_is_cut_at_a_character_boundary() -> None:
    protocol = Recorded(Recorded.STATE_OPEN)
    reason = "é" * 100  # 200 bytes of UTF-8: 61 whole characters fit in 123 bytes

    protocol.handle_reply({"type": "websocket.close", "code": 4003, "reason": reason})

    assert protocol.closes == [(4003, "é" * 61)]
    assert len(protocol.closes[0][1].encode()) <= 123  # type: ignore[union-attr]
    assert daphne_ws.close_reason("x" * 122 + "€") == "x" * 122  # (a 3-byte character across the limit)


def test_a_close_without_a_reason_is_daphne_s_own() -> None:
    protocol = Recorded(Recorded.STATE_OPEN)

    protocol.handle_reply({"type": "websocket.close", "code": 4000})
    protocol.handle_reply({"type": "websocket.close", "reason": ""})
    protocol.handle_reply({"type": "websocket.close", "reason": "Bye."})

    assert protocol.closes == [(4000, None), (1000, None), (1000, "Bye.")]


def test_a_socket_not_accepted_yet_is_still_refused_over_http() -> None:
    protocol = Recorded(Recorded.STATE_CONNECTING)

    protocol.handle_reply({"type": "websocket.close", "code": 1000, "reason": "Not for you."})

    assert protocol.rejected and protocol.closes == []


def test_install_makes_daphne_s_factory_build_the_subclass(monkeypatch: pytest.MonkeyPatch) -> None:
    from daphne import ws_protocol

    monkeypatch.setattr(ws_protocol.WebSocketFactory, "protocol", ws_protocol.WebSocketProtocol)

    daphne_ws.install()

    assert ws_protocol.WebSocketFactory.protocol is daphne_ws.ReasonedWebSocketProtocol
