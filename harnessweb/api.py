"""The REST API: one NinjaAPI at /api/, one Router per app, bearer-token auth, errors as JSON."""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from harnessweb.apikit import BearerToken, field_errors
from runs_app.ci.api import router as runs_router
from runs_app.ci.calls import router as calls_router
from runs_app.ci.conversation import router as conversation_router
from runs_app.ci.streams import router as streams_router
from runs_app.coverage.api import router as coverage_router
from runs_app.endpoint.api import router as scripts_router
from runs_app.judging.api import router as judge_router
from runs_app.retention import router as retention_router
from scenarios_app.api import router as scenarios_router

api = NinjaAPI(
    title="Scenario harness API",
    version="1",
    description=(
        "CI uploads (runs, judge verdicts, trace logs, JUnit results, cassettes), scenarios, coverage. "
        "Send `Authorization: Bearer <token>`; writes need a write-scoped token, queuing the judge a judge-scoped "
        "one (judge includes write, write includes read). Errors are JSON "
        '`{"detail", "errors": [{"field", "message"}]}`; batches answer 207 with one result per item.'
    ),
    auth=BearerToken(),
    urls_namespace="api",
    docs_url="/docs",
    # No page of this site is open to anonymous users; the schema is loaded from the api object in tests.
    docs_decorator=staff_member_required,
)
api.add_router("/scenarios", scenarios_router, tags=["scenarios"])
api.add_router("/", runs_router, tags=["runs"])
api.add_router("/", scripts_router, tags=["run scripts"])
api.add_router("/", calls_router, tags=["runs"])
api.add_router("/", conversation_router, tags=["runs"])
api.add_router("/", streams_router, tags=["stream summaries"])
api.add_router("/", coverage_router, tags=["coverage"])
api.add_router("/", retention_router, tags=["runs"])
api.add_router("/", judge_router, tags=["judge"])


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    return api.create_response(
        request, {"detail": "Missing or invalid API token: send 'Authorization: Bearer <token>'."}, status=401
    )


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # Name each field by its path, e.g. "body.criteria.0.verdict", as CI logs read best.
    return api.create_response(request, {"detail": "Invalid request", "errors": field_errors(exc.errors)}, status=422)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    cause = exc.__cause__
    # ninja answers a body it cannot read with a bare 400; say what is wrong and where, as for any invalid input.
    if isinstance(cause, RequestDataTooBig):
        return _too_big(request, cause)
    if isinstance(cause, json.JSONDecodeError):
        errors = [{"loc": ("body",), "msg": f"Malformed JSON: {cause}", "type": "json_invalid"}]
        errors[0].update(line=cause.lineno, column=cause.colno)
        return _invalid(request, ValidationError(errors))
    if isinstance(cause, UnicodeDecodeError):
        errors = [{"loc": ("body",), "msg": f"The body is not UTF-8: {cause}", "type": "unicode_invalid"}]
        return _invalid(request, ValidationError(errors))
    if isinstance(cause, RecursionError):
        errors = [{"loc": ("body",), "msg": "The JSON is nested too deeply.", "type": "json_invalid"}]
        return _invalid(request, ValidationError(errors))
    return api.create_response(request, {"detail": str(exc)}, status=exc.status_code)


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: Exception) -> HttpResponse:
    limit = settings.HARNESS_API_MAX_BYTES
    return api.create_response(
        request, {"detail": f"Request body is larger than the limit of {limit} bytes"}, status=413
    )
