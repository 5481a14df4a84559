"""The provider coverage grid inside the admin, for whoever owns runs_app/admin.py to mount.

Wiring, one line in ``ProviderAdmin``::

    def get_urls(self):
        return coverage_admin_urls(self.admin_site) + super().get_urls()

(before ``super()``'s: ModelAdmin ends with a catch-all ``<path:object_id>/``). The grid is then at
``/admin/runs_app/provider/coverage/``, named ``admin:runs_app_coverage``.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path

from runs_app.coverage import coverage_report
from runs_app.views import grid_context

TITLE = "Provider test coverage"


def _render(request: HttpRequest, admin_site: admin.AdminSite) -> HttpResponse:
    context = {**admin_site.each_context(request), "title": TITLE, **grid_context(coverage_report())}
    return TemplateResponse(request, "admin/runs_app/coverage.html", context)


@staff_member_required
def coverage_admin_view(request: HttpRequest) -> HttpResponse:
    """The coverage grid in the default admin site's frame; staff only (others go to the admin login)."""
    return _render(request, admin.site)


def coverage_admin_urls(admin_site: admin.AdminSite = admin.site) -> list[URLPattern]:
    """URL patterns serving the grid at ``coverage/`` under whatever includes them, framed by ``admin_site``.

    ``admin_site.admin_view`` gives the admin's own staff check, login redirect and no-cache headers.
    """

    def view(request: HttpRequest) -> HttpResponse:
        return _render(request, admin_site)

    return [path("coverage/", admin_site.admin_view(view), name="runs_app_coverage")]
