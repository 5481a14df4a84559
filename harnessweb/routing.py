"""Routing: the fake provider endpoints go straight to their consumer, everything else to Django."""

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

from harnessweb.engine.routes import is_provider_path
from runs_app.endpoint.consumer import FakeEndpointConsumer
from runs_app.endpoint.recorder import close_recorder
from runs_app.live.consumers import JudgeBatchConsumer, OverviewConsumer, RunsListConsumer, RunTimelineConsumer

# The live pages: the session cookie says who is watching (the consumers refuse anonymous sockets) and the Origin
# must be one of ALLOWED_HOSTS, so another site cannot open a socket with a visitor's cookie.
websocket_urlpatterns = [
    path("ws/runs/", RunsListConsumer.as_asgi()),
    path("ws/runs/<uuid:run_id>/", RunTimelineConsumer.as_asgi()),
    path("ws/judge/<int:batch_id>/", JudgeBatchConsumer.as_asgi()),
    path("ws/overview/", OverviewConsumer.as_asgi()),
]


def build_application(django_asgi_app: Any) -> ProtocolTypeRouter:
    fake_endpoint = FakeEndpointConsumer.as_asgi()

    async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
        # A prefix test instead of URL resolution and middleware: this is the hot path of every test suite.
        if is_provider_path(scope["path"]):
            return await fake_endpoint(scope, receive, send)
        return await django_asgi_app(scope, receive, send)

    websocket = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    return ProtocolTypeRouter({"http": http, "websocket": websocket, "lifespan": lifespan})


async def lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A server that speaks ASGI lifespan (uvicorn) says when it stops: what the recorder has queued is written
    before it answers. daphne does not speak it; the recorder's exit hook writes the queue there."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await close_recorder()
            await send({"type": "lifespan.shutdown.complete"})
            return
