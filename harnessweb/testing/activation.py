"""Activation by environment (seed 002 §8.1): one variable, ``HARNESS_ACTIVATE``, makes any Python process where the
package is installed (a CLI a test starts as a subprocess, say) answer its ``llm`` models and its default SDK
clients from the harness. The package's ``harnessweb-activate.pth`` calls :func:`activate` at interpreter start when
the variable is set; the package's build backend (``build_backend/harness_backend.py``) puts that file into every
wheel, editable ones too, so every install has it.

- A scenarios folder or file: a harness of the process's own answers in-process (scenarios, instruction blocks,
  the lorem, seed 002's default for ``llm`` models), and requests to other real providers are refused.
- A server URL (``http://host:port?run=<run id>``, what ``harness.env()`` gives): the default clients and the
  ``llm`` models reach that server, and their calls land in that run, which is the starting test's history.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs

from harnessweb.engine.loader import read_scenario_files
from harnessweb.engine.routes import RUN_KEY_PREFIX
from harnessweb.testing.harness import Harness, Options, default_usage

VARIABLE = "HARNESS_ACTIVATE"
_process: Harness | None = None
_activated = ""  # what activate() answered from: once per process (the .pth, then maybe code, may both call it)


def process_harness() -> Harness:
    """The process's own harness (behind ``llm -m harness`` too), with the scenarios ``HARNESS_ACTIVATE`` names and
    the default usage ``HARNESS_DEFAULT_USAGE`` asks for, read as the plugin reads it."""
    global _process
    if _process is None:
        where = os.environ.get(VARIABLE, "")
        local = where and not where.startswith(("http://", "https://"))
        scenarios = [s for _, s in read_scenario_files([where])] if local else []
        _process = Harness(scenarios, Options(default_usage=default_usage()))
    return _process


class _Permanent:
    """What ``guard`` patches with, for a whole process rather than one test."""

    setattr = staticmethod(setattr)

    @staticmethod
    def setenv(name: str, value: str) -> None:
        os.environ[name] = value


def activate() -> None:
    """Answer this process's ``llm`` models and default SDK clients from the harness ``HARNESS_ACTIVATE`` names."""
    import llm

    global _activated
    where = os.environ[VARIABLE]
    if _activated:
        return
    _activated = where
    if where.startswith(("http://", "https://")):
        url, _, query = where.partition("?")
        url = url.rstrip("/")
        run = parse_qs(query).get("run", [""])[0]
        key = RUN_KEY_PREFIX + run if run else "harness-test-key"
        for name, value in {
            "OPENAI_BASE_URL": url + "/v1",
            "ANTHROPIC_BASE_URL": url,
            "GOOGLE_GEMINI_BASE_URL": url,
            "OPENAI_API_KEY": key,
            "ANTHROPIC_API_KEY": key,
            "GEMINI_API_KEY": key,
        }.items():
            os.environ[name] = value
        from harnessweb.testing.llm_models import WireModel

        models: dict[str, Any] = {}

        def get_model(name: str | None = None, *args: Any, **kw: Any) -> Any:
            name = name or llm.get_default_model()
            return models.setdefault(name, WireModel(url, run, name))

        llm.get_model = get_model  # type: ignore[assignment]
        return
    from harnessweb.testing import guard

    harness = process_harness()
    guard.route_default_clients(_Permanent(), harness)
    llm.get_model = lambda name=None, *a, **kw: harness.get_model(name or llm.get_default_model())  # type: ignore[assignment]
    llm.get_async_model = lambda name=None, *a, **kw: harness.get_async_model(name or llm.get_default_model())  # type: ignore[assignment]
