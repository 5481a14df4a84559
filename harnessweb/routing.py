"""Routing: the fake provider endpoints go straight to their consumer, everything else to Django."""

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path, re_path

from harnessweb.engine.mcp import PATH_PREFIX as MCP_PREFIX
from harnessweb.engine.routes import is_batch_path, is_provider_path
from harnessweb.engine.wire.gemini_live import is_live_path
from runs_app.batches.consumer import BatchesConsumer
from runs_app.endpoint.consumer import FakeEndpointConsumer
from runs_app.endpoint.live_consumer import LiveConsumer
from runs_app.endpoint.mcp_consumer import mcp_endpoint
from runs_app.endpoint.realtime_consumer import NoSuchSocket, RealtimeConsumer
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
    batches = BatchesConsumer.as_asgi()  # the Files and Batch APIs

    async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
        # A prefix test instead of URL resolution and middleware: this is the hot path of every test suite.
        if scope["path"].startswith(MCP_PREFIX):  # a scenario's MCP servers
            return await mcp_endpoint(scope, receive, send)
        if is_provider_path(scope["path"]):
            if is_batch_path(scope["path"]):
                return await batches(scope, receive, send)
            return await fake_endpoint(scope, receive, send)
        return await django_asgi_app(scope, receive, send)

    dashboard = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
    # The providers' sockets (OpenAI Realtime, Gemini Live) before the dashboard's checks: SDK clients send no Origin
    # and no cookie, only their API key, which the consumers check as the HTTP routes do.
    provider = URLRouter([path("v1/realtime", RealtimeConsumer.as_asgi()), re_path(r"", NoSuchSocket.as_asgi())])
    live = LiveConsumer.as_asgi()

    async def websocket(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if is_live_path(scope["path"]):
            return await live(scope, receive, send)
        if is_provider_path(scope["path"]):
            return await provider(scope, receive, send)
        return await dashboard(scope, receive, send)

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
