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
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType

from ..core.numbers import wait_limit
from ..errors import shown

#: What a wait that reached its deadline raises instead of ``TimeoutError`` (see
#: :meth:`Deadline.waiting`).
Cause = Callable[[], Exception | None] | None


class Deadline:
    """``timeout`` seconds from its making (``None``: none); ``TypeError`` or
    ``ValueError`` naming a ``timeout`` that is no number of seconds."""

    __slots__ = ("_at", "_timeout")

    def __init__(self, timeout: float | None) -> None:
        self._at: float | None = None
        self._timeout = timeout
        if timeout is not None:  # none: nothing to read (the calls' common case)
            limit = wait_limit(timeout)  # None for one past FOREVER
            if limit is not None:
                self._at = asyncio.get_running_loop().time() + limit

    def waiting(self, waited: str, cause: Cause = None) -> AbstractAsyncContextManager[object]:
        """The scope of one wait: it ends in ``TimeoutError`` at the deadline, and raises
        it at once when the deadline has passed; its message says ``waited`` (what did
        not come: ``"pop from queue 'jobs': no element"``), the timeout, and that the
        call applied nothing. ``cause()``, when given and it returns an error then (a
        broker that could not be reached while the call waited), is raised instead."""
        if self._at is None:
            return asyncio.timeout_at(None)
        if asyncio.get_running_loop().time() >= self._at:
            raise self.expired(waited, cause)
        return _Wait(asyncio.timeout_at(self._at), self, waited, cause)

    def expired(self, waited: str, cause: Cause = None) -> Exception:
        """The error of a wait for ``waited`` that reached the deadline: ``TimeoutError``,
        or what ``cause()`` returns when it returns an error."""
        message = (f"{waited} within timeout={shown(self._timeout)}s; the call applied "
                   "nothing")
        why = None if cause is None else cause()
        if why is not None:
            return type(why)(f"{message}: {why}")
        return TimeoutError(f"{message} (call it again, or give it a longer timeout)")


#: The deadline of ``timeout=None`` (it holds no time: one serves every call).
NO_DEADLINE = Deadline(None)


class _Wait:
    """:func:`asyncio.timeout_at`, its ``TimeoutError`` saying what did not come."""

    __slots__ = ("_cause", "_deadline", "_scope", "_waited")

    def __init__(self, scope: asyncio.Timeout, deadline: Deadline, waited: str,
                 cause: Cause) -> None:
        self._scope = scope
        self._deadline = deadline
        self._waited = waited
        self._cause = cause

    async def __aenter__(self) -> _Wait:
        await self._scope.__aenter__()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> bool | None:
        try:
            await self._scope.__aexit__(kind, error, trace)
        except TimeoutError as expired:
            if not self._scope.expired():
                raise
            raise self._deadline.expired(self._waited, self._cause) from expired.__cause__
        return None


def no_wait(timeout: float | None) -> None:
    """The ``timeout`` of a call that does not wait: checked (``TypeError`` or
    ``ValueError`` naming one that is no number of seconds), never used."""
    wait_limit(timeout)


__all__ = ["Deadline", "no_wait"]
