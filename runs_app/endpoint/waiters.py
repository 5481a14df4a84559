"""The responses waiting for the commit of their events (``Recorder.durable``): each waits for a generation of the
recorder's queue, ``timeout`` at most; one timer for all of them ends the waits past their deadline (not a timer,
nor with ``asyncio.wait_for`` a second future, for each)."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


class Waiters:
    def __init__(self) -> None:
        self._waiting: list[tuple[int, asyncio.Future[bool | None], float]] = []  # (generation, waiter, deadline)
        self._expiry: asyncio.TimerHandle | None = None
        self._expiry_loop: asyncio.AbstractEventLoop | None = None

    async def wait(self, target: int, timeout: float) -> bool:
        """Until generation ``target`` is committed (True), the batch holding it refused (False: the response goes
        on without it), or ``timeout`` passed (False, said in the log)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool | None] = loop.create_future()
        deadline = loop.time() + timeout
        self._waiting.append((target, waiter, deadline))
        expiry = self._expiry
        if expiry is None or deadline < expiry.when() or self._expiry_loop is not loop:  # (a test's new loop)
            self._watch(deadline)
        committed = await waiter
        if committed is None:
            log.warning("A response ended before its events were committed (waited %.1f s)", timeout)
            return False
        return committed

    def release(self, committed: bool, generation: int) -> None:
        """Wake the waits a commit covers (up to ``generation``), or all of them when the database refused the batch
        (``committed`` False)."""
        waiting, self._waiting = self._waiting, []
        for target, waiter, deadline in waiting:
            if waiter.done():  # (its wait expired)
                continue
            if committed and target > generation:
                self._waiting.append((target, waiter, deadline))
            else:
                waiter.set_result(committed)

    def _watch(self, deadline: float) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry_loop = asyncio.get_running_loop()
        self._expiry = self._expiry_loop.call_at(deadline, self._expire)

    def _expire(self) -> None:
        """End the waits past their deadline (the waiter answers None), and watch the next deadline."""
        self._expiry = None
        now = asyncio.get_running_loop().time()
        waiting, self._waiting = self._waiting, []
        for target, waiter, deadline in waiting:
            if waiter.done():
                continue
            if deadline <= now:
                waiter.set_result(None)
            else:
                self._waiting.append((target, waiter, deadline))
        if self._waiting:
            self._watch(min(deadline for _, _, deadline in self._waiting))
