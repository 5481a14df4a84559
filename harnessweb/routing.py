"""Routing: the fake provider endpoints go straight to their consumer, everything else to Django."""

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from harnessweb.engine.routes import is_provider_path
from runs_app.endpoint.consumer import FakeEndpointConsumer
from runs_app.live.consumers import RunsListConsumer, RunTimelineConsumer

# The live pages: the session cookie says who is watching (the consumers refuse anonymous sockets) and the Origin
# must be one of ALLOWED_HOSTS, so another site cannot open a socket with a visitor's cookie.
websocket_urlpatterns = [
    path("ws/runs/", RunsListConsumer.as_asgi()),
    path("ws/runs/<uuid:run_id>/", RunTimelineConsumer.as_asgi()),
]


def build_application(django_asgi_app: Any) -> ProtocolTypeRouter:
    fake_endpoint = FakeEndpointConsumer.as_asgi()

    async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
        # A prefix test instead of URL resolution and middleware: this is the hot path of every test suite.
        if is_provider_path(scope["path"]):
            return await fake_endpoint(scope, receive, send)
        return await django_asgi_app(scope, receive, send)

    websocket = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    return ProtocolTypeRouter({"http": http, "websocket": websocket})
