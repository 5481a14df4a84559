"""The ``llm`` plugin (entry point group ``llm``): ``llm -m harness`` and ``llm.get_model("harness")`` answer from a
harness of the process's own (instruction blocks, the lorem, seed 002's default, and the scenarios
``HARNESS_ACTIVATE`` names), in any process where this package is installed."""

from __future__ import annotations

from typing import Any

import llm

from harnessweb.testing.activation import process_harness
from harnessweb.testing.llm_models import HarnessAsyncModel, HarnessModel


@llm.hookimpl
def register_models(register: Any) -> None:
    harness = process_harness()
    register(HarnessModel(harness, "harness"), HarnessAsyncModel(harness, "harness"))
