"""A URLconf for tests/test_error_pages.py: the project's URLs and error handlers, plus views that fail."""

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.urls import path

from harnessweb import urls


def fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a secret detail of the failure")


def refuses(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied("Only the release manager may do this.")


urlpatterns = [
    path("broken/", fails),
    path("api/broken", fails),
    path("api/refused", refuses),
    *urls.urlpatterns,
]
handler404 = urls.handler404
handler403 = urls.handler403
handler500 = urls.handler500
