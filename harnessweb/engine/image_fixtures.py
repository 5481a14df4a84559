"""A scenario turn's image fixture (``image``: the PNG an images generation that plays the turn answers), read and
checked where the scenario is validated: a path to a PNG file (``.png``, relative to the scenario file; only when
the scenario is read from a file: the loader passes its folder as the validation context) or the PNG as base64.
Its canonical form is the base64, which is what a stored scenario holds.

Each checked fixture is known here by its digest (:func:`named`), so that the URL an answer gives
(``/v1/images/files/img-fx-{digest}.png``) is served by any process that built the catalog holding it, without a
store of its own. Pure.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from pathlib import Path
from typing import Any

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_BYTES = 4 * 1024 * 1024  # a fixture is stored in the scenario: small pictures, not photographs
MAX_KNOWN = 512  # distinct fixtures kept by digest; the oldest goes first (a catalog rebuilt names its own again)
CONTEXT_DIR = "scenario_dir"  # the validation context's key: the folder a scenario file's paths are relative to
_known: dict[str, str] = {}


def png_problem(data: bytes) -> str | None:
    """Why ``data`` is not a PNG (signature, then an ``IHDR`` chunk with a size), or None when it is one."""
    if not data.startswith(PNG_SIGNATURE):
        return "not a PNG image (it does not start with the PNG signature)"
    if len(data) < 33 or data[12:16] != b"IHDR":
        return "not a PNG image (no IHDR chunk after the signature)"
    width, height = struct.unpack(">II", data[16:24])
    if not width or not height:
        return "not a PNG image (its IHDR gives a width or height of 0)"
    return None


def canonical(value: Any, context: Any = None) -> str | None:
    """The fixture as base64 (None stays None), read from the file a ``.png`` path names relative to the context's
    folder; raises ValueError saying what is wrong (pydantic names the field)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError("must be a path to a .png file (relative to the scenario file) or the PNG as base64")
    if value.lower().endswith(".png"):
        data = _read(value, context)
    else:
        try:
            data = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("is neither a path to a .png file nor valid base64 of a PNG image") from None
    if len(data) > MAX_BYTES:
        raise ValueError(f"the image is {len(data)} bytes: a fixture holds at most {MAX_BYTES} bytes")
    if problem := png_problem(data):
        raise ValueError(f"{value[:80]!r} is {problem}" if value.lower().endswith(".png") else f"is {problem}")
    encoded = base64.b64encode(data).decode()
    _remember(encoded)
    return encoded


def _read(value: str, context: Any) -> bytes:
    folder = context.get(CONTEXT_DIR) if isinstance(context, dict) else None
    if folder is None:
        raise ValueError(
            f"{value[:80]!r} is a file path, which only a scenario file may give (harness load, harness check): "
            "give the PNG as base64 here"
        )
    path = Path(folder) / value
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {value[:80]!r} (from {path}): {exc.strerror or exc}") from None


def digest(encoded: str) -> str:
    """The fixture's name part: 32 hex digits of SHA-256 of its base64."""
    return hashlib.sha256(encoded.encode()).hexdigest()[:32]


def _remember(encoded: str) -> None:
    name = digest(encoded)
    _known.pop(name, None)
    _known[name] = encoded
    while len(_known) > MAX_KNOWN:
        del _known[next(iter(_known))]


def named(name: str) -> bytes | None:
    """The PNG bytes of the fixture whose digest is ``name``, when a scenario validated here holds it."""
    encoded = _known.get(name)
    return base64.b64decode(encoded) if encoded is not None else None
