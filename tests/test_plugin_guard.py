"""The guard while a harness is active: every way out to a known provider host (httpx, urllib, requests, aiohttp,
boto3's bedrock-runtime, a raw socket, a gRPC channel) is answered by the harness or refused naming the host and how
to point the client at the harness, and fails the test. The network here is closed anyway, so each throwaway test
asserts the refusal itself (its type or message), never merely that the connection failed."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import asyncio
import socket
import urllib.request

import pytest

from harnessweb.testing.guard import ProviderRefused

OPENAI = "The harness refused a request to the real provider host api.openai.com"


def test_urllib(harness):
    with pytest.raises(ProviderRefused) as info:
        urllib.request.urlopen("https://api.openai.com/v1/models", timeout=5)
    assert str(info.value).startswith(OPENAI + " (name resolution): use harness.openai_client()")
    assert "base_url=harness.base_url + '/v1' after harness.serve()" in str(info.value)


def test_requests(harness):
    import requests

    with pytest.raises(ProviderRefused, match="real provider host api.openai.com") as info:
        requests.post("https://API.openai.com./v1/chat/completions", json={}, timeout=5)
    assert info.value.host == "api.openai.com"


def test_aiohttp(harness):
    import aiohttp

    async def ask():
        async with aiohttp.ClientSession() as session:
            async with session.get("https://api.anthropic.com/v1/models") as response:
                return await response.text()

    with pytest.raises(ProviderRefused, match="host api.anthropic.com .*use harness.anthropic_client()"):
        asyncio.run(ask())


def test_boto3_bedrock_converse(harness):
    import boto3
    import botocore.exceptions

    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y",
    )
    with pytest.raises(botocore.exceptions.HTTPClientError) as info:
        client.converse(modelId="anthropic.claude-3-haiku", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    assert isinstance(info.value.kwargs["error"], ProviderRefused)
    assert "real provider host bedrock-runtime.us-east-1.amazonaws.com (name resolution)" in str(info.value)
    assert "endpoint_url=harness.base_url" in str(info.value)


def test_raw_socket(harness):
    with pytest.raises(ProviderRefused, match="api.mistral.ai"):
        socket.create_connection(("api.mistral.ai", 443), timeout=5)


def test_grpc_channel(harness):
    import grpc

    with pytest.raises(ProviderRefused, match="generativelanguage.googleapis.com .gRPC channel; use the client.s REST"):
        grpc.secure_channel("generativelanguage.googleapis.com:443", grpc.ssl_channel_credentials())
    with pytest.raises(ProviderRefused, match="us-central1-aiplatform.googleapis.com"):
        grpc.aio.insecure_channel("dns:///us-central1-aiplatform.googleapis.com:443")


def test_google_grpc_client(harness):
    from google.ai import generativelanguage_v1beta as glm
    from google.auth.credentials import AnonymousCredentials

    with pytest.raises(ProviderRefused, match="generativelanguage.googleapis.com"):
        glm.GenerativeServiceClient(credentials=AnonymousCredentials())


def test_httpx_names_the_way_back(harness):
    import httpx

    with pytest.raises(httpx.ConnectError, match="host api.groq.com .httpx.: the harness does not serve it"):
        httpx.get("https://api.groq.com/openai/v1/models")


def test_other_hosts_and_served_httpx_are_left_alone(harness):
    assert socket.getaddrinfo("localhost", 80)
    assert grpc_channel_to_localhost()
    import openai

    reply = openai.OpenAI().chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert reply.choices[0].message.content


def test_the_judge_is_let_through(harness):
    from harnessweb.testing.outbound import letting_through

    with letting_through(), pytest.raises(OSError):  # the closed network's own error, not a refusal
        socket.getaddrinfo("api.openai.com", 443)


def grpc_channel_to_localhost():
    import grpc

    grpc.insecure_channel("localhost:50051").close()
    return True
"""


@pytest.mark.parametrize("proxy", [False, True])
def test_every_client_kind_is_refused_naming_the_host(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, proxy: bool
) -> None:
    for variable in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    if proxy:  # behind a proxy a client resolves only the proxy's name: the guard sends provider hosts direct
        monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    pytester.makepyfile(test_guard=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    # Each refused test passes its own assertions, then the harness fails it at teardown, naming the host.
    result.assert_outcomes(passed=10, errors=8)
    for host in (
        "api.openai.com",
        "api.anthropic.com",
        "bedrock-runtime.us-east-1.amazonaws.com",
        "api.mistral.ai",
        "generativelanguage.googleapis.com",
        "api.groq.com",
    ):
        result.stdout.fnmatch_lines([f"*harness: a request to the real provider host {host}*"])
    errors = [line for line in result.stdout.lines if line.startswith("ERROR ")]
    assert not [line for line in errors if "left_alone" in line or "let_through" in line], errors
