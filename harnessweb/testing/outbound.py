"""Whose connections to a real provider's host the guard lets out: the harness's own judge (``harness.judge``), which
reaches the provider it is configured with, while every other connection from a test is refused (``guard.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

_let_through: ContextVar[bool] = ContextVar("harness_outbound_let_through", default=False)


def let_through() -> bool:
    """Whether this thread's connections to provider hosts go out now."""
    return _let_through.get()


@contextlib.contextmanager
def letting_through() -> Iterator[None]:
    """Let this thread's own connections to provider hosts out while the block runs."""
    token = _let_through.set(True)
    try:
        yield
    finally:
        _let_through.reset(token)
