"""What one take of a queue or claim of a work queue answers at most, so that its result
is kept: a take or claim sent again after a failover is then answered with it
(:mod:`.session_results`) rather than lost or refused as no longer kept.

Both stop before the element (item) whose value would bring their values past
:data:`TAKE_BYTES` as :func:`~.results.result_size` counts them, plus an allowance each
for what the result holds besides the value; the first goes whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..core.headers import MAX_HEADER_BYTES
from .results import result_size
from .session_results import SESSION_KEPT_BYTES

#: What the values one take pops (one claim leases) come to at most, with their
#: allowances (its first goes whatever its size): half what a client's session keeps.
TAKE_BYTES = SESSION_KEPT_BYTES // 2
#: What each element of a take counts for its headers while the queue holds some: about
#: the most the largest headers allowed come to.
HEADERS_ALLOWANCE = 2 * MAX_HEADER_BYTES
#: What each delivery of a claim counts besides its value and worker: at least what
#: its dict, keys and numbers (below 2**64) come to as ``result_size`` counts them.
DELIVERY_ALLOWANCE = 1024


def take_budget(per: int) -> Callable[[Iterable[Any]], int]:
    """How many values one take (or claim) takes, asked with the values it would take
    next in order (once, or again with the next ones after as many as it answered):
    those that with all counted before come to :data:`TAKE_BYTES` at most, each counted
    as :func:`~.results.result_size` counts it plus ``per``, and the first whatever its
    size; none once one did not fit."""
    total = 0

    def fitting(values: Iterable[Any]) -> int:
        nonlocal total
        counted, k = total, 0
        for value in values:
            kind = type(value)  # bytes and str counted here as result_size counts them
            total += per + (41 + len(value) if kind is bytes
                            else 57 + (len(value) if value.isascii() else 4 * len(value))
                            if kind is str else result_size(value, TAKE_BYTES))
            if total > TAKE_BYTES and (k or counted):
                return k
            k += 1
        return k

    return fitting


def claim_budget(worker: Any) -> Callable[[Iterable[Any]], int]:
    """:func:`take_budget` of a claim by ``worker``: each delivery counts its value, its
    worker and :data:`DELIVERY_ALLOWANCE`."""
    return take_budget(DELIVERY_ALLOWANCE + result_size(worker, TAKE_BYTES))
