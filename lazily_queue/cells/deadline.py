"""The ``timeout`` of the calls that wait (``push`` while full, ``pop``, ``claim``,
``advance`` and their batch forms): it bounds the waiting, never an attempt.

A call makes its attempt first (a commit on a node, a round trip to a broker: bounded as
any operation of its backend is), and waits for what lets the next one succeed only
until the deadline. So ``timeout=0`` does what needs no wait and raises
``TimeoutError`` otherwise, on every backend, and a ``TimeoutError`` never cuts an
attempt short: the call applied nothing.

A call that does not wait (``offer``, ``poll``, ``poll_many``, ``poll_messages``,
``close``) has no wait for its ``timeout`` to bound: it makes its attempt whatever the
``timeout`` (``0`` included), on every backend, and only checks it
(:func:`no_wait`)."""

from __future__ import annotations

import asyncio

from ..core.numbers import wait_limit


class Deadline:
    """``timeout`` seconds from its making (``None``: none); ``TypeError`` or
    ``ValueError`` naming a ``timeout`` that is no number of seconds."""

    __slots__ = ("_at",)

    def __init__(self, timeout: float | None) -> None:
        self._at: float | None = None
        if timeout is not None:  # none: nothing to read (the calls' common case)
            limit = wait_limit(timeout)  # None for one past FOREVER
            if limit is not None:
                self._at = asyncio.get_running_loop().time() + limit

    def waiting(self) -> asyncio.Timeout:
        """The scope of one wait: it ends in ``TimeoutError`` at the deadline, and raises
        it at once when the deadline has passed."""
        if self._at is not None and asyncio.get_running_loop().time() >= self._at:
            raise TimeoutError
        return asyncio.timeout_at(self._at)


def no_wait(timeout: float | None) -> None:
    """The ``timeout`` of a call that does not wait: checked (``TypeError`` or
    ``ValueError`` naming one that is no number of seconds), never used."""
    wait_limit(timeout)


__all__ = ["Deadline", "no_wait"]
