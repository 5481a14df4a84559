"""Clients the code under test builds itself: requests to the hosts the harness serves (OpenAI, Anthropic, Gemini)
are answered in-process by the test's harness (in server mode, sent to its server, naming the test's run),
requests to another real provider's host are refused and fail the test, and every other host (a local server,
say) is left alone.

Every way out is covered: httpx and httpx2 at their transports (answered or refused), any other client (urllib,
requests, boto3, aiohttp, a raw socket) at name resolution (``socket.getaddrinfo``), and gRPC, which resolves
names in its own C core, when a channel to a provider host is made. A refusal names the host and says how to
point the client at the harness; the harness keeps the host and the plugin fails the test on it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
from typing import Any
from urllib.parse import urlsplit

from harnessweb.testing.harness import Harness
from harnessweb.testing.outbound import let_through
from harnessweb.testing.transport import library, transports

SERVED_HOSTS = frozenset({"api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com"})
PROVIDER_HOSTS = frozenset(
    {
        "api.mistral.ai", "api.cohere.com", "api.cohere.ai", "api.groq.com", "api.together.xyz", "api.together.ai",
        "api.deepseek.com", "api.x.ai", "openrouter.ai", "api.perplexity.ai", "api.fireworks.ai",
        "api.replicate.com", "api-inference.huggingface.co", "router.huggingface.co", "api.ai21.com",
        "aiplatform.googleapis.com", "bedrock-runtime.amazonaws.com",
    }
)  # fmt: skip
PROVIDER_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", "-aiplatform.googleapis.com",
                     ".amazonaws.com", ".services.ai.azure.com")  # fmt: skip
# Default clients want a key before they send anything; a test needs none of its own.
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


class ProviderRefused(RuntimeError):
    """A connection to a real provider's host, refused by the harness. Not an ``OSError`` on purpose: clients
    wrap those as network failures (dropping this message) and retry them."""

    def __init__(self, host: str, how: str) -> None:
        super().__init__(refusal(host, how))
        self.host = host


def is_real_provider(host: str) -> bool:
    if host in PROVIDER_HOSTS:
        return True
    return host.endswith(PROVIDER_SUFFIXES) and ("bedrock" in host or not host.endswith(".amazonaws.com"))


def is_guarded(host: str) -> bool:
    """Whether a host is a provider's the harness answers or refuses (never one it leaves alone)."""
    return host in SERVED_HOSTS or is_real_provider(host)


def hint(host: str) -> str:
    """How to point a client at the harness instead of ``host``."""
    after = "after harness.serve(), for a client not built on httpx"
    if host == "api.openai.com":
        return f"use harness.openai_client(), or base_url=harness.base_url + '/v1' {after}"
    if host == "api.anthropic.com":
        return f"use harness.anthropic_client(), or base_url=harness.base_url {after}"
    if host == "generativelanguage.googleapis.com":
        return f"use harness.genai_client(), or the REST endpoint harness.base_url {after}"
    if "bedrock" in host:
        return "after harness.serve(), give the client endpoint_url=harness.base_url (boto3, AnthropicBedrock)"
    if host.startswith("api.cohere."):
        return "use harness.cohere_client(), or base_url=harness.base_url after harness.serve()"
    if "azure.com" in host:
        return "after harness.serve(), give the client azure_endpoint=harness.base_url"
    if "aiplatform" in host:
        return "after harness.serve(), give the client the REST endpoint harness.base_url (Vertex AI)"
    return "the harness does not serve it: give an OpenAI-compatible client base_url=harness.base_url + '/v1'"


def refusal(host: str, how: str = "") -> str:
    """The refusal's message: the host, the way out it took, and how to point the client at the harness."""
    via = f" ({how})" if how else ""
    return f"The harness refused a request to the real provider host {host}{via}: {hint(host)}"


def route_default_clients(monkeypatch: Any, harness: Harness) -> None:
    """Patch the default transports of httpx and httpx2, name resolution and gRPC's channels for this test
    (``monkeypatch`` undoes it)."""
    for variable in KEY_VARIABLES:
        if not os.environ.get(variable):
            monkeypatch.setenv(variable, "harness-test-key")
    for name in ("httpx2", "httpx"):
        try:
            lib = library(name)
        except ImportError:
            continue
        sync, async_ = transports(lib)
        _patch(monkeypatch, lib, harness, sync(harness), async_(harness))
    _guard_resolution(monkeypatch, harness)
    _guard_grpc(monkeypatch, harness)
    if any(os.environ.get(v) for v in PROXY_VARIABLES):
        # A client sent through a proxy resolves the proxy's name, never the provider's: provider hosts go direct.
        for variable in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(variable, ",".join(filter(None, (os.environ.get(variable), _no_proxy_hosts()))))


@functools.cache
def _no_proxy_hosts() -> str:
    """The provider hosts as ``NO_PROXY`` entries. It has no wildcards, so Bedrock's regional hosts are named one by
    one (from botocore's endpoint data, once per process and only behind a proxy): the rest of AWS keeps its proxy."""
    hosts = [*SERVED_HOSTS, *PROVIDER_HOSTS, *(s.lstrip("-") for s in PROVIDER_SUFFIXES if s != ".amazonaws.com")]
    if importlib.util.find_spec("botocore") is not None:
        import botocore.session

        regions = botocore.session.get_session().get_available_regions("bedrock")
        hosts += [
            f"{service}.{region}.amazonaws.com" for region in regions for service in ("bedrock-runtime", "bedrock")
        ]
    return ",".join([*hosts, *(host + "." for host in hosts)])  # a name written with its root dot too


def _refuse(lib: Any, harness: Harness, request: Any) -> Exception:
    host = request.url.host
    harness.blocked.append(host)
    return lib.ConnectError(refusal(host, lib.__name__), request=request)


def _host_of(host: Any) -> str:
    if isinstance(host, bytes | bytearray):
        host = bytes(host).decode("ascii", "replace")
    return host.lower().rstrip(".") if isinstance(host, str) else ""


def _guard_resolution(monkeypatch: Any, harness: Harness) -> None:
    """Refuse resolving a provider's name: every client not on httpx (urllib, requests, boto3, aiohttp through
    asyncio's resolver, a raw socket) looks the host up through ``socket`` before it connects."""
    for name in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
        original = getattr(socket, name)

        def guarded(host: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            found = _host_of(host)
            if is_guarded(found) and not let_through():
                harness.blocked.append(found)
                raise ProviderRefused(found, "name resolution")
            return _original(host, *args, **kwargs)

        monkeypatch.setattr(socket, name, guarded)


def _grpc_host(target: str) -> str:
    """The host a gRPC target names (``host:port``, ``dns:///host:port``, ``dns://authority/host``)."""
    rest = target.removeprefix("dns:")
    if rest.startswith("//"):
        rest = rest[2:].partition("/")[2]
    try:
        return _host_of(urlsplit("//" + rest).hostname or "")
    except ValueError:
        return ""


def _guard_grpc(monkeypatch: Any, harness: Harness) -> None:
    """Refuse a gRPC channel to a provider's host when it is made: gRPC resolves names in its own C core, and the
    harness speaks no gRPC (Google's clients have a REST transport)."""
    if importlib.util.find_spec("grpc") is None:
        return
    import grpc
    import grpc.aio

    for module in (grpc, grpc.aio):
        for name in ("secure_channel", "insecure_channel"):
            original = getattr(module, name)

            def channel(target: str, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                host = _grpc_host(str(target))
                if is_guarded(host) and not let_through():
                    harness.blocked.append(host)
                    raise ProviderRefused(host, "gRPC channel; use the client's REST transport")
                return _original(target, *args, **kwargs)

            monkeypatch.setattr(module, name, channel)


def _to_server(lib: Any, harness: Harness, request: Any) -> bool:
    """In server mode, send a default client's request to the harness server instead, naming the test's run."""
    server = getattr(harness, "server", None)
    if server is None:
        return False
    target = lib.URL(server.url)
    request.url = request.url.copy_with(scheme=target.scheme, host=target.host, port=target.port)
    request.headers["Host"] = target.netloc.decode()
    request.headers["X-Harness-Run"] = str(harness.run_id)
    return True


def _patch(monkeypatch: Any, lib: Any, harness: Harness, sync: Any, async_: Any) -> None:
    original = lib.HTTPTransport.handle_request
    original_async = lib.AsyncHTTPTransport.handle_async_request

    def handle_request(self: Any, request: Any) -> Any:
        host = request.url.host
        if host in SERVED_HOSTS:
            if _to_server(lib, harness, request):
                return original(self, request)
            return sync.handle_request(request)
        if is_real_provider(host):
            raise _refuse(lib, harness, request)
        return original(self, request)

    async def handle_async_request(self: Any, request: Any) -> Any:
        host = request.url.host
        if host in SERVED_HOSTS:
            if _to_server(lib, harness, request):
                return await original_async(self, request)
            return await async_.handle_async_request(request)
        if is_real_provider(host):
            raise _refuse(lib, harness, request)
        return await original_async(self, request)

    monkeypatch.setattr(lib.HTTPTransport, "handle_request", handle_request)
    monkeypatch.setattr(lib.AsyncHTTPTransport, "handle_async_request", handle_async_request)
