"""The REST API: one NinjaAPI at /api/, one Router per app, bearer-token auth, errors as JSON."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer

from runs_app import tokens
from runs_app.api import router as runs_router
from runs_app.models import ApiToken
from scenarios_app.api import router as scenarios_router


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        return tokens.authenticate(token)


def require_write(request: HttpRequest) -> None:
    """Refuse a write made with a read-scoped token (403), before anything is written."""
    if getattr(request, "auth", None) is None or request.auth.scope != ApiToken.Scope.WRITE:
        raise HttpError(403, "This token has read scope; writing needs a token with write scope.")


api = NinjaAPI(
    title="Scenario harness API",
    version="1",
    description="CI uploads (runs, judge verdicts, trace logs, JUnit results, cassettes), scenarios, coverage.",
    auth=BearerToken(),
    urls_namespace="api",
    docs_url="/docs",
)
api.add_router("/scenarios", scenarios_router, tags=["scenarios"])
api.add_router("/", runs_router, tags=["runs"])


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    return api.create_response(
        request, {"detail": "Missing or invalid API token: send 'Authorization: Bearer <token>'."}, status=401
    )


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # Name each field by its path, e.g. "body.criteria.0.verdict", as CI logs read best.
    errors = [
        {"field": ".".join(str(p) for p in err.get("loc", ())), "message": err.get("msg", ""), "type": err.get("type")}
        for err in exc.errors
    ]
    return api.create_response(request, {"detail": "Invalid request", "errors": errors}, status=422)


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: Exception) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return api.create_response(
        request, {"detail": f"Request body is larger than the limit of {limit} bytes"}, status=413
    )


def error(detail: str, **extra: Any) -> dict[str, Any]:
    return {"detail": detail, **extra}
