"""Project-level pages: the one-time log-in link that ``make run`` prints, and the error pages (404, 403, 500): the
dashboard's own, with its navigation and a way back, and JSON in ninja's shape (``{"detail": ...}``) for everything
under ``/api/``. The home page is the overview, in ``runs_app/overview/``."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.contrib.auth import get_user_model, login
from django.contrib.auth.tokens import default_token_generator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.urls import URLPattern, URLResolver
from django.urls.exceptions import Resolver404
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.http import require_GET

from harnessweb.api import api
from harnessweb.engine.routes import nearest

API_PREFIX = "/api/"
# The icon every page names (templates/base.html, the admin's base_site.html); a new drawing gets a new number.
FAVICON = "favicon-1.svg"
# Where a page that is not found leads back to: the section of the navigation its path is under.
SECTIONS = (("/scenarios/", "Scenarios"), ("/runs/", "Runs"), ("/coverage/", "Coverage"), ("/admin/", "the admin"))

logger = logging.getLogger(__name__)


@require_GET
def login_link(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """Log in with a link printed on the console. Django's token generator binds the token to the user's last
    log-in, so the link stops working as soon as it has been used."""
    user_model = get_user_model()
    try:
        user = user_model.objects.get(pk=force_str(urlsafe_base64_decode(uidb64)))
    except (ValueError, TypeError, OverflowError, user_model.DoesNotExist):
        user = None
    if user is None or not user.is_active or not default_token_generator.check_token(user, token):
        return render(request, "registration/link_invalid.html", status=400)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return HttpResponseRedirect("/")


# -- operations -------------------------------------------------------------------------------------------------------


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Anonymous health check (a container's HEALTHCHECK, a load balancer): ``{"status": "ok"}`` once the database
    answers a query, else a 503 that names no detail (the log has it)."""
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        logger.exception("Health check: the database did not answer")
        return JsonResponse({"status": "unavailable"}, status=503)
    return JsonResponse({"status": "ok"})


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics (runs_app/metrics.py): a 404 while ``HARNESS_METRICS`` is off; a bearer token (any
    scope: read is the least) unless ``HARNESS_METRICS_PUBLIC``."""
    from django.conf import settings

    from harnessweb.apikit import grants
    from runs_app import metrics as harness_metrics
    from runs_app import tokens

    if not settings.HARNESS_METRICS:
        return JsonResponse({"detail": "Not Found: metrics are off (set HARNESS_METRICS=1)"}, status=404)
    if not settings.HARNESS_METRICS_PUBLIC:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not grants(tokens.authenticate(token.strip()), "read"):
            response = JsonResponse({"detail": "Unauthorized: send a bearer token of scope read"}, status=401)
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    body, content_type = harness_metrics.exposition()
    return HttpResponse(body, content_type=content_type)


# -- errors -----------------------------------------------------------------------------------------------------------


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def _message(exception: Exception | None) -> str:
    """What a view said when it raised (``Http404("No such run")``), never the resolver's list of patterns."""
    if exception is None or isinstance(exception, Resolver404) or not exception.args:
        return ""
    message = exception.args[0]
    return message if isinstance(message, str) else ""


@functools.cache
def api_routes() -> tuple[str, ...]:
    """Every route of the REST API as ``"METHOD /api/path/{param}"``, from its OpenAPI schema (read once)."""
    paths = api.get_openapi_schema()["paths"]
    return tuple(f"{method.upper()} {path}" for path, operations in paths.items() for method in operations)


def _nearest_api_route(request: HttpRequest) -> str | None:
    routes = sorted(api_routes(), key=lambda route: not route.startswith(f"{request.method} "))
    return nearest(request.path, routes)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: the dashboard's page with a way back to the section it was under; JSON under ``/api/``, naming
    the nearest route when the path looks like a mistyped one."""
    if _is_api(request):
        # A route's own 404s are ninja's; what comes here matched no route (ninja's root raises one naming its docs).
        near = _nearest_api_route(request) if request.path != API_PREFIX else None
        hint = f" Did you mean {near}?" if near else f" The API is described at {API_PREFIX}docs."
        detail = f"Not Found: Nothing is served at {request.method} {request.path}.{hint}"
        return JsonResponse({"detail": detail}, status=404)
    message = _message(exception)
    back = next(((prefix, label) for prefix, label in SECTIONS if request.path.startswith(prefix)), ("/", "Overview"))
    context = {"message": message, "back_url": back[0], "back_label": back[1]}
    return render(request, "404.html", context, status=404)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403: what was refused and why, if the view said; JSON under ``/api/``."""
    message = _message(exception)
    if _is_api(request):
        return JsonResponse({"detail": message or "Forbidden"}, status=403)
    return render(request, "403.html", {"message": message}, status=403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: a form posted without its token (a page left open across a log-in, cookies off) gets the
    403 page saying what to do, not Django's bare one."""
    message = "The form's security token was missing or out of date: reload the page and send it again."
    if _is_api(request):
        return JsonResponse({"detail": f"Forbidden: {message}"}, status=403)
    return render(request, "403.html", {"message": message}, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: never the traceback (it is in the server's log). The page is drawn with the request (the
    navigation) when it can be, else without it: the error may be the database the session lives in."""
    if _is_api(request):
        return JsonResponse({"detail": "Internal Server Error: the server's log has the details."}, status=500)
    try:
        return render(request, "500.html", status=500)
    except Exception:
        logger.exception("The 500 page could not be drawn with the request; drawn without it")
        return HttpResponse(loader.get_template("500.html").render(), status=500)


def _json_not_allowed(view: Callable[..., Any]) -> Callable[..., Any]:
    """ninja answers a method a route does not take with a bare-text 405: the same 405 (``Allow`` kept) as JSON."""

    def as_json(response: HttpResponse) -> HttpResponse:
        if response.status_code != 405 or response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = response.get("Allow", "")
        detail = f"Method Not Allowed: use {' or '.join(allowed.split(', '))}" if allowed else "Method Not Allowed"
        answer = JsonResponse({"detail": detail}, status=405)
        answer["Allow"] = allowed
        return answer

    if iscoroutinefunction(view):

        async def async_wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return as_json(await view(request, *args, **kwargs))

        wrapped = markcoroutinefunction(functools.wraps(view)(async_wrapped))
    else:

        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return as_json(view(request, *args, **kwargs))

        wrapped = functools.wraps(view)(wrapped)
    return wrapped


def json_errors(urls: tuple[list[Any], str, str]) -> tuple[list[Any], str, str]:
    """The API's URL patterns (``api.urls``) with every view's 405 answered as JSON."""
    patterns, app_name, namespace = urls

    def wrap(pattern: Any) -> Any:
        if isinstance(pattern, URLResolver):
            return URLResolver(
                pattern.pattern,
                [wrap(p) for p in pattern.url_patterns],
                pattern.default_kwargs,
                pattern.app_name,
                pattern.namespace,
            )
        return URLPattern(pattern.pattern, _json_not_allowed(pattern.callback), pattern.default_args, pattern.name)

    return [wrap(pattern) for pattern in patterns], app_name, namespace
