"""What every admin module of runs_app shares: coloured badges, links to change pages, human sizes and durations,
read-only inlines, JSON blocks, POST-only admin views and safe redirects. The look is in ``static/harness-admin.css``.

Everything a user or a build supplied is rendered through ``format_html`` (escaped); colours come from our tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from harnessweb.text import pretty_json

# Badge tones (classes in harness-admin.css).
GREEN, RED, AMBER, BLUE, GREY, PURPLE = "green", "red", "amber", "blue", "grey", "purple"
NONE = "—"
CSS = ("harness-admin.css",)


def badge(label: str, tone: str, title: str = "") -> SafeString:
    """A small coloured label; the tone comes from our tables, label and title are escaped."""
    return format_html('<span class="hr-badge hr-{}" title="{}">{}</span>', tone, title, label)


def json_block(value: Any, *, tall: bool = False) -> SafeString:
    """Pretty JSON (keys sorted) in a scrolling block; ``value`` may also be text to show as it is."""
    text = value if isinstance(value, str) else pretty_json(value, sort_keys=True)
    return format_html('<pre class="hr-block{}">{}</pre>', " hr-tall" if tall else "", text)


def admin_link(obj: Any, label: Any) -> SafeString:
    """A link to ``obj``'s admin change page."""
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label)


def human_size(size: int) -> str:
    for unit in ("B", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def human_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def post_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """require_POST for an admin method (admin_view adds the login, staff and CSRF checks)."""
    return method_decorator(require_POST)(view)


def safe_next(request: HttpRequest, fallback: str) -> str:
    """The POSTed ``next`` when it points back into this site, else ``fallback`` (never an open redirect)."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


class ReadOnlyInline(admin.TabularInline):
    """Recorded or uploaded rows: shown, never edited from the run page."""

    class Media:
        css = {"all": CSS}

    extra = 0
    max_num = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class HarnessAdmin(admin.ModelAdmin):
    """A ModelAdmin with the harness's admin stylesheet."""

    class Media:
        css = {"all": CSS}
