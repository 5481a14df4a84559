"""The harness a whole process shares outside pytest: the one behind the ``llm`` plugin's ``harness`` model, with
the scenarios of ``HARNESS_SCENARIOS`` (a folder or file) when that variable is set."""

from __future__ import annotations

import os

from harnessweb.engine.loader import read_scenario_files
from harnessweb.testing.harness import Harness

SCENARIOS_VARIABLE = "HARNESS_SCENARIOS"
_process: Harness | None = None


def process_harness() -> Harness:
    global _process
    if _process is None:
        folder = os.environ.get(SCENARIOS_VARIABLE)
        scenarios = [s for _, s in read_scenario_files([folder])] if folder else []
        _process = Harness(scenarios)
    return _process
