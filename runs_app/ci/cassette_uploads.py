"""Cassettes stored on the server from files: ``POST /api/cassettes`` (one file, or several in one multipart body: a
207 with a result per file) and ``manage.py load_cassettes DIR`` (a folder, all or nothing), every file checked the
same way (a VCR cassette, no secret left in it, a name that says its provider and scenario) and kept byte for byte.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import ValidationError
from ninja.responses import Status
from pydantic import ValidationError as PydanticValidationError

from harnessweb.apikit import batch_response, field_errors, invalid, invalid_from, parse_json, read_uploads
from runs_app.ci.cassettes import (
    CassetteFile,
    cassette_file_name,
    has_control_characters,
    leaked_secrets,
    parse_cassette_name,
)
from runs_app.models import Cassette, Provider, Run


@dataclass(frozen=True)
class Checked:
    """A file that is a cassette the server can keep: its name, provider, scenario and bytes."""

    name: str
    provider: str
    scenario: str
    data: bytes


def check_file(
    upload_name: str,
    data: bytes,
    *,
    name: str = "",
    provider: str = "",
    scenario: str = "",
    field: tuple[Any, ...] = ("body",),
) -> Checked:
    """A file checked as an upload is: JSON, a VCR cassette, no secret left in it (each error naming the file and
    the place), and a provider and scenario, given or read from the name (``verify_{provider}_{scenario}.json`` or
    ``{provider}_{scenario}.json``). Raises ninja's ValidationError (a 422) with every field that is wrong."""
    try:
        cassette = CassetteFile.model_validate(parse_json(data, field))
    except PydanticValidationError as exc:
        raise invalid_from(exc, *field) from exc
    leaks = [{**leak, "loc": (*field, *leak["loc"])} for leak in leaked_secrets(cassette, upload_name)]
    if leaks:
        raise ValidationError(leaks)
    name = cassette_file_name(name or upload_name)
    if has_control_characters(name):
        # The name goes back out in the download's Content-Disposition header.
        raise invalid(("query", "name"), "The name holds control characters.")
    provider, scenario = provider.strip(), scenario.strip()
    if not (provider and scenario):
        parsed = parse_cassette_name(name, Provider.objects.values_list("name", flat=True)) if name else None
        if parsed is None:
            raise invalid(
                ("query", "name"),
                f"Cannot tell provider and scenario from the name {name!r}: name the file "
                "verify_{provider}_{scenario}.json or {provider}_{scenario}.json, or pass provider and scenario.",
            )
        provider, scenario = provider or parsed[0], scenario or parsed[1]
    if len(provider) > 100 or len(scenario) > 200:
        raise invalid(("query", "name"), "The provider (100) or scenario (200 characters) in the name is too long.")
    return Checked(name or f"verify_{provider}_{scenario}.json", provider, scenario, data)


def store(checked: Checked, run: Run | None = None, commit: str = "") -> tuple[Cassette, bool]:
    """The cassette stored (True), or the row already holding these bytes (False)."""
    digest = hashlib.sha256(checked.data).hexdigest()
    fields = {"name": checked.name, "provider": checked.provider, "scenario": checked.scenario}
    fields |= {"content": checked.data, "size": len(checked.data), "run": run, "commit": commit}
    return Cassette.objects.get_or_create(digest=digest, defaults=fields)


def upload(request: HttpRequest, meta: Any) -> Any:
    """``POST /api/cassettes``: one file answers 201 (200 for bytes already stored, 422 naming the field); several
    answer 207 with a result per file, each stored or refused on its own."""
    files, field = read_uploads(request, default_name=meta.name)
    run = None
    if meta.run is not None:
        run = Run.objects.filter(id=meta.run).first()
        if run is None:
            raise invalid(("query", "run"), f"No run {meta.run}")
    if len(files) == 1:
        upload_name, data = files[0]
        checked = check_file(
            upload_name, data, name=meta.name, provider=meta.provider, scenario=meta.scenario, field=field
        )
        row, created = store(checked, run, meta.commit)
        row.duplicate = not created
        return Status(201 if created else 200, row)
    if meta.name or meta.provider or meta.scenario:
        message = "name, provider and scenario describe one cassette: leave them out with several files"
        raise invalid(("query", "name"), f"{message} (each file's name says its own)")
    results: list[dict[str, Any]] = []
    for index, (upload_name, data) in enumerate(files):
        try:
            checked = check_file(upload_name, data, field=(*field, index))
            with transaction.atomic():
                row, created = store(checked, run, meta.commit)
        except ValidationError as exc:
            results.append({"index": index, "accepted": False, "errors": field_errors(exc.errors)})
        else:
            results.append({"index": index, "accepted": True, "id": row.pk, "duplicate": not created})
    return batch_response(results)


# -- a folder: manage.py load_cassettes ------------------------------------------------------------------------------


def load(checked: Checked, *, replace: bool) -> tuple[str, str]:
    """Store a folder's file by its name: ``(outcome, what to say)``, the outcome ``stored``, ``unchanged`` (the
    newest of that name holds these bytes), ``kept`` (it differs, and only ``replace`` stores the file's over it;
    never silently), or ``taken`` (these bytes are stored under another name: the digest is unique)."""
    stored = Cassette.objects.newest(checked.name)  # the one a request naming it replays
    if stored is not None and bytes(stored.content) == checked.data:
        return "unchanged", f"{checked.name}: unchanged (#{stored.pk})"
    if stored is not None and not replace:
        return "kept", (
            f"{checked.name}: differs from the stored one (#{stored.pk}, {stored.uploaded_at:%Y-%m-%d %H:%M}); kept "
            "the stored one (--replace stores the file's)"
        )
    row, created = store(checked)
    if created:
        return "stored", f"{checked.name}: stored (#{row.pk})" + (f", replacing #{stored.pk}" if stored else "")
    if row.name != checked.name:
        return "taken", f"{checked.name}: the same bytes are stored as {row.name} (#{row.pk}); not stored again"
    # An earlier version of this name, stored again: made the newest, so that it is the one replayed.
    Cassette.objects.filter(pk=row.pk).update(uploaded_at=timezone.now())
    return "stored", f"{checked.name}: stored (#{row.pk} again, the newest of its name)"


def describe_errors(errors: list[dict[str, Any]]) -> str:
    """A ValidationError's fields as one line for a terminal."""
    return "; ".join(f"{e['msg']} (at {'.'.join(str(p) for p in e['loc'][1:]) or 'the top'})" for e in errors)
