"""The ``timeout`` of the calls that wait (``push`` while full, ``pop``, ``claim``,
``advance`` and their batch forms): it bounds the waiting, never an attempt.

A call makes its attempt first (a commit on a node, a round trip to a broker: bounded as
any operation of its backend is), and waits for what lets the next one succeed only
until the deadline. So ``timeout=0`` does what needs no wait and raises
``TimeoutError`` otherwise, on every backend, and a ``TimeoutError`` never cuts an
attempt short: the call applied nothing."""

from __future__ import annotations

import asyncio

from ..core.numbers import wait_limit


class Deadline:
    """``timeout`` seconds from its making (``None``: none); ``TypeError`` or
    ``ValueError`` naming a ``timeout`` that is no number of seconds."""

    __slots__ = ("_at", "_loop")

    def __init__(self, timeout: float | None) -> None:
        limit = wait_limit(timeout)
        self._loop = asyncio.get_running_loop()
        self._at = None if limit is None else self._loop.time() + limit

    def waiting(self) -> asyncio.Timeout:
        """The scope of one wait: it ends in ``TimeoutError`` at the deadline, and raises
        it at once when the deadline has passed."""
        if self._at is not None and self._loop.time() >= self._at:
            raise TimeoutError
        return asyncio.timeout_at(self._at)


__all__ = ["Deadline"]
