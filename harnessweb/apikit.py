"""What every REST router shares: bearer-token auth, pages, reading bodies, field types that the databases can
store, 422s that name the field, and the 207 envelope of a batch upload.

Routers raise :class:`ninja.errors.ValidationError` through :func:`invalid` and :func:`invalid_from`; the API's
handlers (``harnessweb/api.py``) turn them into ``{"detail", "errors": [{"field", "message", "type"}]}``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DataError, IntegrityError, transaction
from django.http import HttpRequest
from django.http.multipartparser import MultiPartParserError
from ninja import Field, Schema
from ninja.errors import HttpError, ValidationError
from ninja.pagination import LimitOffsetPagination
from ninja.responses import Status
from ninja.security import HttpBearer
from pydantic import AfterValidator, BaseModel, StringConstraints
from pydantic import ValidationError as PydanticValidationError

from runs_app import tokens
from runs_app.models import ApiToken

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# In an operation's OpenAPI entry: the scope it needs, where that is not what its method implies.
SCOPE_MARK = "x-required-scope"

# -- auth ------------------------------------------------------------------------------------------------------------


# Each scope grants the ones below it: judge ⊃ write ⊃ read, so one judge token serves a whole CI job.
SCOPE_RANK = {ApiToken.Scope.READ: 0, ApiToken.Scope.WRITE: 1, ApiToken.Scope.JUDGE: 2}


def grants(token: ApiToken | None, scope: str) -> bool:
    """Whether ``token`` has ``scope`` or a scope that includes it."""
    return token is not None and SCOPE_RANK.get(token.scope, -1) >= SCOPE_RANK[scope]


def require_write(request: HttpRequest) -> None:
    """Refuse a write made with a read-scoped token (403), before anything is written."""
    if not grants(getattr(request, "auth", None), ApiToken.Scope.WRITE):
        raise HttpError(403, "This token has read scope; writing needs a token with write scope.")


class BearerToken(HttpBearer):
    """Any live token reads; any method that may write (not GET/HEAD/OPTIONS) needs a write-scoped token.

    Deciding by method here, before the body is even parsed, guards a new write route without anyone having to
    remember it; a POST that writes nothing opts out with :class:`ReadBearerToken`.
    """

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        row = tokens.authenticate(token)
        if row is not None and request.method not in SAFE_METHODS:
            request.auth = row
            require_write(request)
        return row


class ReadBearerToken(HttpBearer):
    """Any live token, whatever the method: for POSTs that only compute (validating a scenario)."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        return tokens.authenticate(token)


# -- field types -----------------------------------------------------------------------------------------------------


def storable(value: str) -> str:
    """Refuse what the databases cannot store: NUL characters (PostgreSQL) and lone surrogates (any UTF-8 column)."""
    if "\x00" in value:
        raise ValueError("contains a NUL character, which cannot be stored")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("contains a lone surrogate, which is not valid Unicode") from exc
    return value


Text = Annotated[str, AfterValidator(storable)]


def short_text(max_length: int, min_length: int = 0) -> Any:
    """A stored string no longer than its column."""
    return Annotated[str, StringConstraints(min_length=min_length, max_length=max_length), AfterValidator(storable)]


Str64 = short_text(64)


Str100 = short_text(100)


Str128 = short_text(128)


Str200 = short_text(200)


Str500 = short_text(500)


Str300 = short_text(300)


Str1000 = short_text(1000)


ExternalId = short_text(200, min_length=1)


# Database ids: BigAutoField (signed 64 bits); anything larger would overflow the query, not miss.
RowId = Annotated[int, Field(ge=1, le=2**63 - 1)]


# PositiveIntegerField is a 32-bit integer on PostgreSQL.
SmallCount = Annotated[int, Field(ge=0, le=2**31 - 1)]


def _instant(value: dt.datetime) -> dt.datetime:
    # Naive times are taken as UTC. Both databases store UTC, and an instant near year 1 or 9999 may not convert:
    # refuse it here rather than fail in the database.
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    try:
        return value.astimezone(dt.UTC)
    except OverflowError as exc:
        raise ValueError("is out of the range of dates that can be stored") from exc


Instant = Annotated[dt.datetime, AfterValidator(_instant)]


# -- errors ----------------------------------------------------------------------------------------------------------


class FieldError(Schema):
    field: str
    message: str
    type: str | None = None
    line: int | None = None
    column: int | None = None


class ErrorOut(Schema):
    detail: str
    errors: list[FieldError] | None = None


def field_errors(errors: Iterable[dict[str, Any]], prefix: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Pydantic/ninja error dicts as ``{"field": "criteria.0.verdict", "message", "type"}``, ``prefix`` first."""
    result = []
    for err in errors:
        item: dict[str, Any] = {
            "field": ".".join(str(p) for p in (*prefix, *err.get("loc", ()))),
            "message": err.get("msg", ""),
            "type": err.get("type"),
        }
        for extra in ("line", "column"):
            if err.get(extra) is not None:
                item[extra] = err[extra]
        result.append(item)
    return result


def unstorable_path(value: Any) -> tuple[tuple[Any, ...], str] | None:
    """The path of the first string (key or value) inside JSON data that :func:`storable` refuses, with the reason."""
    # A stack, not recursion: parsed JSON may nest nearly as deep as the recursion limit already.
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            try:
                storable(node)
            except ValueError as exc:
                return path, str(exc)
        elif isinstance(node, dict):
            for key, item in reversed(node.items()):
                stack.append(((*path, key), item))
                stack.append(((*path, key), key))
        elif isinstance(node, list):
            stack.extend(((*path, index), item) for index, item in reversed(list(enumerate(node))))
    return None


def invalid(field: tuple[Any, ...], message: str, kind: str = "value_error", **extra: Any) -> ValidationError:
    """A 422 naming one field; raise it."""
    return ValidationError([{"loc": field, "msg": message, "type": kind, **extra}])


def invalid_from(exc: PydanticValidationError, *prefix: Any) -> ValidationError:
    """A 422 with each of a pydantic error's fields, its path led by ``prefix`` (e.g. "body"); raise it."""
    return ValidationError([{"loc": (*prefix, *e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()])


# -- pages and bodies ------------------------------------------------------------------------------------------------


class Page(LimitOffsetPagination):
    """limit/offset pages, bounded so that no query parameter can overflow the database's integers."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=1000)
        offset: int = Field(0, ge=0, le=2**31 - 1)


def max_bytes() -> int:
    """The largest request body the API accepts (settings.HARNESS_API_MAX_BYTES)."""
    return settings.HARNESS_API_MAX_BYTES


def _check_size(size: int) -> None:
    if size > max_bytes():
        raise RequestDataTooBig(f"{size} bytes is over the limit of {max_bytes()}")


def _check_declared_size(request: HttpRequest) -> None:
    # Refuse before reading (or spooling a multipart upload to disk) when the declared size is already too big.
    length = request.headers.get("Content-Length", "")
    if length.isdigit():
        _check_size(int(length))


def read_body(request: HttpRequest) -> bytes:
    """The raw request body, refused with 413 when over the limit (also when sent without a Content-Length)."""
    _check_declared_size(request)
    body = request.body
    _check_size(len(body))
    return body


class _NotJson(ValueError):
    """A constant Python's reader takes and JSON has not (``NaN``, ``Infinity``, ``-Infinity``)."""


def _no_constant(name: str) -> Any:
    raise _NotJson(name)


def parse_json(data: bytes, field: tuple[Any, ...] = ("body",)) -> Any:
    """JSON from bytes, or a 422 naming the line and column where it goes wrong (``NaN`` and ``Infinity``, which
    Python reads and JSON does not have, included: no database stores them as JSON)."""
    if not data.strip():
        raise invalid(field, "The body is empty; send JSON.", "missing")
    try:
        return json.loads(data, parse_constant=_no_constant)
    except _NotJson as exc:
        raise invalid(field, f"Malformed JSON: {exc} is not JSON (send null or a number)", "json_invalid") from exc
    except json.JSONDecodeError as exc:
        raise invalid(field, f"Malformed JSON: {exc}", "json_invalid", line=exc.lineno, column=exc.colno) from exc
    except UnicodeDecodeError as exc:
        raise invalid(field, f"The body is not UTF-8: {exc}", "unicode_invalid") from exc
    except RecursionError as exc:
        raise invalid(field, "The JSON is nested too deeply.", "json_invalid") from exc


def read_json(request: HttpRequest) -> Any:
    """The request body parsed as JSON (see :func:`parse_json`)."""
    return parse_json(read_body(request))


def is_multipart(request: HttpRequest) -> bool:
    """Whether the body is multipart/form-data (files), rather than one raw document."""
    return request.headers.get("Content-Type", "").lower().startswith("multipart/")


def read_uploads(request: HttpRequest, default_name: str = "") -> tuple[list[tuple[str, bytes]], tuple[str, ...]]:
    """The uploaded files as ``(name, bytes)`` and the field their errors are named by.

    A multipart request gives its files (any field name); anything else is one file: the raw body, named
    ``default_name``.
    """
    if not is_multipart(request):
        return [(default_name, read_body(request))], ("body",)
    _check_declared_size(request)
    try:
        uploads = [upload for key in request.FILES for upload in request.FILES.getlist(key)]
    except MultiPartParserError as exc:
        raise invalid(("body",), f"Malformed multipart body: {exc}", "multipart_invalid") from exc
    if not uploads:
        raise invalid(("file",), "No file in the multipart body: send it as the form field 'file'.", "missing")
    files = []
    for upload in uploads:
        _check_size(upload.size or 0)
        files.append((upload.name or default_name, upload.read()))
    _check_size(sum(len(data) for _, data in files))
    return files, ("file",)


def form_value(request: HttpRequest, name: str) -> str | None:
    """A multipart form field, for parameters a client may send either in the query or next to its file."""
    return request.POST.get(name) if is_multipart(request) else None


def json_body_doc(schema: dict[str, Any], many: bool = False) -> dict[str, Any]:
    """openapi_extra documenting a JSON body that the view reads itself."""
    if many:
        schema = {"anyOf": [schema, {"type": "array", "items": schema}]}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def inline_schema(model: type[BaseModel], *, by_alias: bool = True, optional: Iterable[str] = ()) -> dict[str, Any]:
    """The model's JSON schema with its ``$defs`` inlined, for request bodies documented through ``openapi_extra``
    (whose ``#/$defs/...`` references would not resolve inside an OpenAPI document). ``optional`` names top-level
    fields the endpoint fills in itself."""
    schema = model.model_json_schema(by_alias=by_alias)
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            # A discriminator's mapping points into $defs too; the oneOf it annotates says the same without it.
            return {key: resolve(value) for key, value in node.items() if key != "discriminator"}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    schema = resolve(schema)
    if optional:
        schema["required"] = [name for name in schema.get("required", []) if name not in set(optional)]
    return schema


# -- batches ---------------------------------------------------------------------------------------------------------


class ItemResult(Schema):
    index: int
    accepted: bool
    id: int | None = None
    duplicate: bool | None = None
    errors: list[FieldError] | None = None


class BatchOut(Schema):
    accepted: int
    rejected: int
    results: list[ItemResult]


def batch_response(results: list[dict[str, Any]]) -> Status:
    """207 with one result per item, in the order the items came."""
    results.sort(key=lambda result: result["index"])
    accepted = sum(1 for result in results if result["accepted"])
    return Status(207, {"accepted": accepted, "rejected": len(results) - accepted, "results": results})


def store_items(
    request: HttpRequest, model: type[BaseModel], store: Callable[[Any], Any], out: Callable[[Any], Any]
) -> Any:
    """Validate and store one item (201, or 422) or a list of them (207 with one result per item).

    Valid items are stored in one transaction, each in its own savepoint, so that one item the database refuses
    is reported and the others still stored; invalid items are reported with their field paths.
    """
    data = read_json(request)
    if not isinstance(data, list):
        try:
            item = model.model_validate(data)
        except PydanticValidationError as exc:
            raise invalid_from(exc, "body") from exc
        with transaction.atomic():
            return Status(201, out(store(item)))

    results: list[dict[str, Any]] = []
    valid: list[tuple[int, Any]] = []
    for index, raw in enumerate(data):
        try:
            valid.append((index, model.model_validate(raw)))
        except PydanticValidationError as exc:
            results.append({"index": index, "accepted": False, "errors": field_errors(exc.errors())})
    with transaction.atomic():
        for index, item in valid:
            try:
                with transaction.atomic():
                    row = store(item)
            except (IntegrityError, DataError) as exc:
                results.append({"index": index, "accepted": False, "errors": [_db_error(exc)]})
            else:
                results.append({"index": index, "accepted": True, "id": row.pk})
    return batch_response(results)


def _db_error(exc: Exception) -> dict[str, Any]:
    return {"field": "", "message": f"The database refused this item: {exc}", "type": "database_error"}
