"""API tokens: issued once in clear, stored as a SHA-256 digest, checked in constant time by the lookup.

Also the bearer-token auth of the REST API, so that every app's router can use it without importing the API.
"""

from __future__ import annotations

import hashlib
import secrets

from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import HttpError
from ninja.security import HttpBearer

from runs_app.models import ApiToken

TOKEN_PREFIX = "hrn_"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# In an operation's OpenAPI entry: the scope it needs, where that is not what its method implies.
SCOPE_MARK = "x-required-scope"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue(name: str, scope: str = ApiToken.Scope.READ) -> tuple[ApiToken, str]:
    """Create a token; returns the row and the token in clear, which is never stored nor shown again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(name=name, scope=scope, prefix=token[:12], digest=digest(token))
    return row, token


def authenticate(token: str) -> ApiToken | None:
    """The live token matching ``token``, its last-used time updated; None when unknown or revoked."""
    if not token:
        return None
    # A digest lookup: the comparison is on hashes, so timing reveals nothing about the token.
    row = ApiToken.objects.filter(digest=digest(token), revoked_at__isnull=True).first()
    if row is not None:
        now = timezone.now()
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row


def require_write(request: HttpRequest) -> None:
    """Refuse a write made with a read-scoped token (403), before anything is written."""
    if getattr(request, "auth", None) is None or request.auth.scope != ApiToken.Scope.WRITE:
        raise HttpError(403, "This token has read scope; writing needs a token with write scope.")


class BearerToken(HttpBearer):
    """Any live token reads; any method that may write (not GET/HEAD/OPTIONS) needs a write-scoped token.

    Deciding by method here, before the body is even parsed, guards a new write route without anyone having to
    remember it; a POST that writes nothing opts out with :class:`ReadBearerToken`.
    """

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        row = authenticate(token)
        if row is not None and request.method not in SAFE_METHODS:
            request.auth = row
            require_write(request)
        return row


class ReadBearerToken(HttpBearer):
    """Any live token, whatever the method: for POSTs that only compute (validating a scenario)."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        return authenticate(token)
