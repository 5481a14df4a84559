"""How a page view tells an htmx swap from a page load, and tells caches that it does.

``request.htmx`` comes from django-htmx's ``HtmxMiddleware``. A swap gets the partial template of the element it
replaces; a boosted link and a history restore (htmx asking for a page it has no copy of) get the whole page.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.views.decorators.vary import vary_on_headers

HTMX_HEADERS = ("HX-Request", "HX-Boosted", "HX-History-Restore-Request")

# For every view whose answer depends on wants_partial(): a cache must not hand a partial to a page load.
vary_on_htmx = vary_on_headers(*HTMX_HEADERS)


def wants_partial(request: HttpRequest) -> bool:
    """An htmx swap (wants the partial), not a boosted page load nor a history restore (both want the page)."""
    htmx = request.htmx  # type: ignore[attr-defined]
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request
