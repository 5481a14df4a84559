"""The in-memory catalog the fake endpoints serve from, rebuilt when any process changes the scenarios table."""

from __future__ import annotations

import logging
import threading

from pydantic import ValidationError

from scenarios_app import models
from scenarios_app.playback import Catalog
from scenarios_app.schemas import Scenario

log = logging.getLogger(__name__)
_lock = threading.Lock()
_cached: tuple[tuple[int, str, int], Catalog] | None = None


def current_catalog() -> Catalog:
    """The catalog as stored now. One cheap aggregate query per call; a full reload only when it changed.

    Checking the database on every request (rather than trusting an in-process signal) is what makes a scenario
    saved by another process (``load_scenarios``, another worker) served from the very next request.
    """
    global _cached
    stamp = models.catalog_stamp()
    cached = _cached
    if cached is not None and cached[0] == stamp:
        return cached[1]
    with _lock:
        scenarios = []
        for row in models.Scenario.objects.all():
            try:
                scenarios.append(Scenario.model_validate(row.data))
            except ValidationError as exc:  # only reachable by editing the table by hand
                log.error("Stored scenario %s does not validate and is not served: %s", row.id, exc)
        catalog = Catalog.build(scenarios)
        _cached = (stamp, catalog)
    return catalog
