"""What a snapshot's captured state costs the garbage collector and the interpreter lock:
:func:`without_collections` pauses the collector while it exists, :func:`release` frees
it in pieces."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from .snapshot_writer import Pause


def without_collections(make: Callable[[], bytes]) -> bytes:
    """``make()`` (a snapshot's capture and encoding) with the cyclic garbage collector
    paused: the capture builds a list or dict per object and cycles none, the
    collections its allocations set off would traverse what it built so far (100,000
    queues captured in 0.18-0.26 s paused, 0.39 to 0.45 s not), and the first ones after
    it all of it again while it is encoded (100,000 objects: collections of generations
    0, 1 and 2 of 0.24-0.30, 0.48-0.62 and 0.59-0.92 s on a loaded machine, each holding
    the interpreter lock) unless it is released first."""
    if not gc.isenabled():
        return make()
    gc.disable()
    try:
        return make()
    finally:
        gc.enable()


def release(state: Any, pause: Pause, depth: int = 2) -> None:
    """Empty ``state``'s lists and dicts down to ``depth`` levels (the capture's own, see
    :meth:`~.fsm.FSM.capture`) an item at a time, ``pause`` between items: freed whole
    at once, a large state holds the interpreter lock (100,000 objects: 55-72 ms)."""
    kind = type(state)
    if kind is dict:
        while state:
            item = state.popitem()[1]
            if depth:
                release(item, pause, depth - 1)
            del item
            pause()
    elif kind is list:
        while state:
            item = state.pop()
            if depth:
                release(item, pause, depth - 1)
            del item
            pause()
