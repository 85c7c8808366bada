"""Many calls of one storage operation made at once, in bounded runs.

:func:`together` starts ``call(value)`` for every value, at most :data:`MANY_AT_ONCE` at
a time. On a backend whose calls propose as they start (a Raft one, a member's or a
client's), a run is proposed in list order and commits in that order, in one entry
where it fits; memory stays bounded however many values are given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

R = TypeVar("R")

#: The most calls :func:`together` has under way at once.
MANY_AT_ONCE = 1024


async def together(call: Callable[[Any], Awaitable[R]], values: list[Any]) -> list[R]:
    """``call(value)`` for every value, in runs of :data:`MANY_AT_ONCE` (module
    docstring); the results in order. Once the calls under way have ended, the first
    failure raises; what was applied before it stays."""
    done: list[R] = []
    for start in range(0, len(values), MANY_AT_ONCE):
        results = await asyncio.gather(
            *(call(value) for value in values[start:start + MANY_AT_ONCE]),
            return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        done.extend(cast("list[R]", results))
    return done
