"""Routing: the fake provider endpoints go straight to their consumer, everything else to Django."""

from typing import Any

from channels.routing import ProtocolTypeRouter

from runs_app.consumers import FakeEndpointConsumer

FAKE_ENDPOINT_PATHS = frozenset({"/v1/chat/completions", "/v1/messages", "/v1/models"})


def build_application(django_asgi_app: Any) -> ProtocolTypeRouter:
    fake_endpoint = FakeEndpointConsumer.as_asgi()

    async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
        # A set lookup instead of URL resolution and middleware: this is the hot path of every test suite.
        if scope["path"].rstrip("/") in FAKE_ENDPOINT_PATHS:
            return await fake_endpoint(scope, receive, send)
        return await django_asgi_app(scope, receive, send)

    return ProtocolTypeRouter({"http": http})
