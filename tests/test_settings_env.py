"""A setting's environment variable that is not a number stops the settings load with ImproperlyConfigured naming
the variable (never a bare ValueError): ``HARNESS_BATCH_STEP_S`` and the whole numbers read with ``envint``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def settings_load(**env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import harnessweb.settings"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("HARNESS_BATCH_STEP_S", "fast", "HARNESS_BATCH_STEP_S must be a number from 0 to 3600 seconds, not 'fast'"),
        ("HARNESS_BATCH_STEP_S", "nan", "HARNESS_BATCH_STEP_S must be a number from 0 to 3600 seconds, not 'nan'"),
        ("HARNESS_BATCH_STEP_S", "-1", "HARNESS_BATCH_STEP_S must be a number from 0 to 3600 seconds, not '-1'"),
        ("HARNESS_TIMEOUT_HOLD_MS", "30s", "HARNESS_TIMEOUT_HOLD_MS must be a whole number, not '30s'"),
    ],
)
def test_a_bad_number_names_its_variable(name: str, value: str, said: str) -> None:
    loaded = settings_load(**{name: value})
    assert loaded.returncode == 1
    last = loaded.stderr.strip().splitlines()[-1]
    assert last == f"django.core.exceptions.ImproperlyConfigured: {said}"


def test_good_numbers_load() -> None:
    loaded = settings_load(HARNESS_BATCH_STEP_S="0.25", HARNESS_TIMEOUT_HOLD_MS="100")
    assert loaded.returncode == 0, loaded.stderr
