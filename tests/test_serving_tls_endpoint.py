"""``harness serve --tls`` with a ``:`` in ``HARNESS_TLS_DIR`` (or an IPv6 interface): the endpoint string daphne gets
quotes each value, so Twisted's parser reads the certificate's path and the interface whole, and the server answers
HTTPS."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest
from twisted.internet import reactor
from twisted.internet.endpoints import SSL4ServerEndpoint, serverFromString

from harnessweb.serving import certificates, tls_endpoint
from tests.test_live_gemini_sdk import served_tls

SCENARIOS = [{"id": "hello", "turns": [{"turn": 1, "response": {"kind": "text", "assistant_text": "Hi."}}]}]


@pytest.mark.parametrize("interface", ["127.0.0.1", "::1"])
def test_twisted_reads_the_quoted_endpoint_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interface: str):
    monkeypatch.setenv("HARNESS_TLS_DIR", str(tmp_path / "certs:a\\b"))
    _, server_pem = certificates("127.0.0.1")
    assert ":" in server_pem
    endpoint = serverFromString(reactor, tls_endpoint(8443, interface, server_pem))
    assert isinstance(endpoint, SSL4ServerEndpoint)
    assert (endpoint._port, endpoint._interface) == (8443, interface)


def test_serve_tls_answers_https_from_a_folder_with_a_colon(tmp_path: Path):
    folder = tmp_path / "tls:dir"
    folder.mkdir()
    with served_tls(folder, SCENARIOS) as line:
        assert ":" in Path(line["ca"]).parent.parent.name
        answer = httpx.get(f"{line['url']}/v1/models", verify=ssl.create_default_context(cafile=line["ca"]), timeout=20)
        assert answer.status_code == 200 and "hello" in answer.text
