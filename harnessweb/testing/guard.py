"""Clients the code under test builds itself: requests to the hosts the harness serves (OpenAI, Anthropic, Gemini)
are answered in-process by the test's harness (in server mode, sent to its server, naming the test's run),
requests to another real provider's host are refused and fail the test, and every other host (a local server,
say) is left alone."""

from __future__ import annotations

import os
from typing import Any

from harnessweb.testing.harness import Harness
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


def is_real_provider(host: str) -> bool:
    if host in PROVIDER_HOSTS:
        return True
    return host.endswith(PROVIDER_SUFFIXES) and ("bedrock" in host or not host.endswith(".amazonaws.com"))


def route_default_clients(monkeypatch: Any, harness: Harness) -> None:
    """Patch the default transports of httpx and httpx2 for this test (``monkeypatch`` undoes it)."""
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


def _refuse(lib: Any, harness: Harness, request: Any) -> Exception:
    host = request.url.host
    harness.blocked.append(host)
    message = f"The harness refused a request to the real provider host {host}: it does not serve it"
    return lib.ConnectError(message, request=request)


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
