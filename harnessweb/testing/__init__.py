"""The harness inside a team's own test suite: the pytest plugin (``plugin.py``, registered through the
``pytest11`` entry point), the per-test :class:`~harnessweb.testing.harness.Harness` with its in-process transport
and call history, and the ``llm`` library's boundary (``llm_models.py``, registered through the ``llm`` entry
point). Nothing here imports Django: a team whose own project is a Django app keeps its settings untouched."""

from harnessweb.testing.harness import Harness, Options
from harnessweb.testing.seed002 import create_mock_get_model

__all__ = ["Harness", "Options", "create_mock_get_model"]
