"""The ``timeout`` of a storage operation called directly (not through a cell): the
bound of its one attempt, as none of them waits for room or an element.

``None`` is the backend's own bound (a node's or client's ``op_timeout``, a broker
connection's); a number of seconds bounds the attempt, ``0`` included (a negative one is
``0`` and one past ``FOREVER`` none, as for a cell's ``timeout``); one that is no number
of seconds is a ``TypeError`` or ``ValueError`` naming it, before anything is sent.

- in process: the attempt completes at once, whatever its bound (the check only, made
  by :func:`check_timeout` in the operation's own body);
- replicated (a node's or a client's): an op not committed within its bound raises
  ``CommitTimeout``, whose message says whether it applied (with ``0``: not proposed,
  not applied);
- a broker's: with ``0`` nothing is sent (``TimeoutError``); a round trip cut short by
  its bound ends as a cancelled call does (a pop puts back what it took; a push may
  have applied).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from ..core.numbers import FOREVER, wait_limit

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)

def attempt_timeout(timeout: float | None, default: float) -> float:
    """The bound of one attempt: ``default`` for ``None``, else ``timeout`` seconds
    (``0`` is zero; at most ``FOREVER``); ``TypeError`` / ``ValueError`` naming a
    ``timeout`` that is no number of seconds."""
    if timeout is None:
        return default
    limit = wait_limit(timeout)
    return FOREVER if limit is None else limit


def check_timeout(timeout: object) -> None:
    """``TypeError`` / ``ValueError`` naming a ``timeout`` that is no number of seconds.

    An in-process operation checks its ``timeout`` with this in its own body, when it is
    not ``None`` (its attempt completes at once, so the timeout bounds nothing): its
    coroutine is the operation's own, with no second one around it."""
    wait_limit(timeout)


def bounded(op: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """A broker storage operation whose ``timeout`` keyword bounds its round trip
    (module docstring)."""

    @functools.wraps(op)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        timeout = kwargs.get("timeout")
        limit = None if timeout is None else wait_limit(timeout)
        if limit is None:
            return await op(*args, **kwargs)
        return await _within(op, args, kwargs, limit)

    return run


def _each_op(cls: C, wrap: Callable[[Any], Any]) -> C:
    for name, fn in list(vars(cls).items()):
        if (inspect.iscoroutinefunction(fn)
                and "timeout" in inspect.signature(fn).parameters):
            setattr(cls, name, wrap(fn))
    return cls


def bounds_timeouts(cls: C) -> C:
    """The class's operations with a ``timeout`` keyword, each :func:`bounded` (a
    broker's storage)."""
    return _each_op(cls, bounded)


async def _within(op: Callable[..., Coroutine[Any, Any, R]], args: Any, kwargs: Any,
                  limit: float) -> R:
    name = op.__qualname__
    if limit <= 0:
        raise TimeoutError(f"{name}: timeout=0 leaves no time for the broker's round trip; "
                           "nothing was sent (pass a number of seconds above 0, or None "
                           "for the connection's own bound)")
    scope = asyncio.timeout(limit)
    try:
        async with scope:
            return await op(*args, **kwargs)
    except TimeoutError:
        if not scope.expired():
            raise
        raise TimeoutError(f"{name}: the broker did not answer within timeout={limit}s; "
                           "the call was cut short as a cancelled one is (it may have "
                           "applied)") from None


__all__ = ["attempt_timeout", "bounded", "bounds_timeouts", "check_timeout"]
