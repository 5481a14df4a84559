"""The package's build backend (``[build-system]`` in pyproject.toml): setuptools' own, plus the activation file
``harnessweb-activate.pth`` at the root of every wheel it builds, editable wheels included.

Why a backend of its own: ``HARNESS_ACTIVATE`` works by a ``.pth`` line that site.py runs at every interpreter start,
and a ``.pth`` only works from site-packages. setuptools' ``data-files`` put it there for regular wheels only: its
editable wheels (PEP 660: ``pip install -e``, ``make setup``) leave data files out, so the variable did nothing in
an editable install. A file at a wheel's root is installed into site-packages (purelib) by every installer, for any
Python version and in either kind of wheel, so the one file goes in the same way everywhere.

In an editable install the file sorts after setuptools' own ``__editable__.harnessweb-*.pth`` (``_`` before
``h``), so the package is importable when its line runs.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path
from typing import Any

from setuptools import build_meta
from setuptools.build_meta import (  # noqa: F401  (the other hooks, as setuptools answers them)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

PTH = "harnessweb-activate.pth"
# PEP 517 runs the hooks in the project's folder; the file is the one the checkout (or the sdist) holds.
SOURCE = Path(__file__).resolve().parent.parent / PTH


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    name = build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)
    add_files(Path(wheel_directory) / name, {PTH: SOURCE.read_bytes(), **site_files()})
    return name


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    name = build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
    add_files(Path(wheel_directory) / name, {PTH: SOURCE.read_bytes()})  # the pages: read from the checkout
    return name


def site_files() -> dict[str, bytes]:
    """The dashboard's templates and static files, kept at the checkout's root (``templates/``, ``static/``), as
    ``harnessweb/site/...`` in a regular wheel, where the settings look for them first: an installed server has its
    pages (setuptools packages Python packages only)."""
    root = SOURCE.parent
    missing = [folder for folder in ("templates", "static") if not (root / folder).is_dir()]
    if missing:  # a wheel without them would serve no page: refuse to build it
        raise FileNotFoundError(f"the wheel's pages are missing: {', '.join(missing)} not found in {root}")
    return {
        f"harnessweb/site/{path.relative_to(root).as_posix()}": path.read_bytes()
        for folder in ("templates", "static")
        for path in sorted((root / folder).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def add_files(wheel: Path, files: dict[str, bytes]) -> None:
    """Put each file at its path in the wheel, with its line in the RECORD (the wheel's list of files and their
    hashes, which installers check); the ``.dist-info`` folder stays last, as the wheel format asks."""
    rewritten = wheel.with_name(wheel.name + ".part")
    with zipfile.ZipFile(wheel) as old, zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as new:
        entries = [info for info in old.infolist() if info.filename not in files]
        info_dir = [info for info in entries if info.filename.split("/")[0].endswith(".dist-info")]
        for info in [info for info in entries if info not in info_dir]:
            new.writestr(info, old.read(info))
        for name, data in files.items():
            added = zipfile.ZipInfo(name, date_time=(info_dir or entries)[0].date_time)
            added.external_attr = 0o644 << 16
            new.writestr(added, data, zipfile.ZIP_DEFLATED)
        for info in info_dir:
            content = old.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = [line for line in content.decode().splitlines() if line.split(",")[0] not in files]
                records = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in files.items()]
                content = "\n".join([*records, *lines, ""]).encode()
            new.writestr(info, content)
    rewritten.replace(wheel)


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
