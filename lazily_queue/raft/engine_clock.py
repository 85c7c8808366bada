"""The engine clock: PySyncObj's time and randomness, routed to the engine being driven.

:func:`~.patches.install` puts :func:`monotonic` and a :class:`RandomProxy` in place of
``pysyncobj.syncobj``'s ``monotonicTime`` and ``random`` (the ``engine-clock`` patch):
outside any :func:`engine_env` block they read its defaults. Inside a block the library
reads the block's clock and random generator directly (the block puts them in place
and puts back what was there when it ends), so a whole cluster can run on virtual time
in one process and the library's many clock reads cost no call of ours.
"""

from __future__ import annotations

import random as _stdlib_random
import time
from collections.abc import Callable
from typing import Any

import pysyncobj.syncobj as _ps_syncobj

__all__ = ["RandomProxy", "engine_env", "monotonic"]


class _EngineEnv:
    """The clock and random generator the library reads outside any block."""

    clock: Callable[[], float] = time.monotonic
    rng: _stdlib_random.Random = _stdlib_random.Random()


_env = _EngineEnv()


def monotonic() -> float:
    """Stands in for ``monotonicTime`` inside ``pysyncobj.syncobj`` outside any block."""
    return _env.clock()


class RandomProxy:
    """Stands in for the ``random`` module inside ``pysyncobj.syncobj`` outside any
    block."""

    def random(self) -> float:
        return _env.rng.random()

    def __getattr__(self, name: str) -> Any:
        return getattr(_env.rng, name)


class _Routed:
    """The block of :func:`engine_env` (a plain class: it runs several times a step)."""

    __slots__ = ("_clock", "_rng", "_saved")

    def __init__(self, clock: Callable[[], float], rng: _stdlib_random.Random) -> None:
        self._clock, self._rng = clock, rng
        self._saved: list[tuple[Any, Any]] = []

    def __enter__(self) -> None:
        library = _ps_syncobj
        self._saved.append((library.monotonicTime, library.random))
        library.monotonicTime, library.random = self._clock, self._rng

    def __exit__(self, *_: object) -> None:
        _ps_syncobj.monotonicTime, _ps_syncobj.random = self._saved.pop()


def engine_env(clock: Callable[[], float], rng: _stdlib_random.Random) -> _Routed:
    """Route the library's time and randomness to ``clock`` / ``rng`` inside the block
    (``with engine_env(clock, rng):``; blocks may nest)."""
    return _Routed(clock, rng)
