"""The session run: on a server one pytest session owns (``HARNESS_SESSION_SERVER``, set by the plugin for the server it
starts, one per xdist worker), the run of the test running now, which a request naming no run belongs to.

The plugin says which run that is (``PUT /api/current-run``, a write token) when a test starts being served and
clears it when the test ends, so a program the test starts with only the server's URL and a key of its own lands in
the test's history and gets its configured answers. A server shared by several sessions never has one: there a
request names its run (``X-Harness-Run``, or a key ``harness-run-<id>``: ``harness.env()``). The run is held in
this process's memory: the plugin's server is one process, and a server of several processes does not offer it.
"""

from __future__ import annotations

import uuid

from django.conf import settings

_current: uuid.UUID | None = None


def offered() -> bool:
    """Whether this server takes a session run (it is a pytest session's own)."""
    return settings.HARNESS_SESSION_SERVER


def set_current(run_id: uuid.UUID | None) -> None:
    """Make ``run_id`` the run that requests naming none belong to (None: they get runs of their own again)."""
    global _current
    _current = run_id


def current() -> uuid.UUID | None:
    """The session run, if this server offers one and a test is being served."""
    return _current if offered() else None


def run_of(named: uuid.UUID | None) -> uuid.UUID | None:
    """The run a request belongs to by name: the one it names, else the session run (else None: by conversation)."""
    return named if named is not None else current()
