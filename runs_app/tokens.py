"""API tokens: issued once in clear, stored as a SHA-256 digest, checked in constant time by the lookup.

The REST API's bearer-token auth, which every router shares, is in :mod:`harnessweb.apikit`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from django.utils import timezone

from runs_app.models import ApiToken

TOKEN_PREFIX = "hrn_"
# How stale a token's last-used time may get: a scraper every 15 s (/metrics) or a burst of API calls writes the row
# once a minute, not once a request.
TOUCH_EVERY = dt.timedelta(minutes=1)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue(name: str, scope: str = ApiToken.Scope.READ) -> tuple[ApiToken, str]:
    """Create a token; returns the row and the token in clear, which is never stored nor shown again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(name=name, scope=scope, prefix=token[:12], digest=digest(token))
    return row, token


def authenticate(token: str) -> ApiToken | None:
    """The live token matching ``token``, its last-used time updated (when older than ``TOUCH_EVERY``); None when
    unknown or revoked."""
    if not token:
        return None
    # A digest lookup: the comparison is on hashes, so timing reveals nothing about the token.
    row = ApiToken.objects.filter(digest=digest(token), revoked_at__isnull=True).first()
    now = timezone.now()
    if row is not None and (row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY):
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row
