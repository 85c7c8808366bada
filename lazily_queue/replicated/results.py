"""Op results as plain data: in snapshots (the results a client session keeps) and in
answers to clients. :func:`encode_result` and :func:`decode_result` are inverses.
"""

from __future__ import annotations

from typing import Any

from ..core.queue import QueuePopError, QueuePushError
from ..raft.snapshot_pieces import Later
from .ops import OpError

_ERRORS = (QueuePushError, QueuePopError, OpError)


def _done_item(done: tuple[int, Any]) -> list[Any]:
    """One result kept for a client session, in the snapshot shape."""
    return [done[0], encode_result(done[1])]


def done_now(done: list[tuple[int, Any]]) -> list[list[Any]]:
    """A client session's kept results (``(seq, result)`` pairs) in the snapshot shape."""
    return [_done_item(item) for item in done]


def done_later(done: list[tuple[int, Any]]) -> Later:
    """:func:`done_now`, made item by item where the snapshot is encoded."""
    return Later(done, _done_item)


def encode_result(result: Any) -> list[Any]:
    """An op's result as plain data (sessions in snapshots, answers to clients)."""
    if isinstance(result, QueuePushError):
        return [1, result.value]
    if isinstance(result, QueuePopError):
        return [2, result.value]
    if isinstance(result, OpError):
        return [3, result.code, result.message]
    if type(result) is list and any(isinstance(r, _ERRORS) for r in result):
        return [4, [encode_result(r) for r in result]]  # one result per op of CLIENT_OPS
    return [0, result]


def decode_result(doc: list[Any]) -> Any:
    """The inverse of :func:`encode_result`."""
    tag = doc[0]
    if tag == 1:
        return QueuePushError(doc[1])
    if tag == 2:
        return QueuePopError(doc[1])
    if tag == 3:
        return OpError(doc[1], doc[2])
    if tag == 4:
        return [decode_result(r) for r in doc[1]]
    return doc[1]


def result_size(result: Any, cap: int) -> int:
    """About the bytes of memory ``result`` holds, counted up to just over ``cap``.

    An estimate from the value's shape alone (types, lengths and what it nests), the same
    on every replica and for the result :func:`decode_result` gives back from
    :func:`encode_result`'s: it bounds the results sessions keep alike everywhere.
    """
    total = 0
    stack = [result]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, bool):
            total += 8
        elif isinstance(item, int):
            total += 36 + (item.bit_length() >> 5) * 4
        elif isinstance(item, str):
            total += 57 + (len(item) if item.isascii() else 4 * len(item))
        elif isinstance(item, (bytes, bytearray)):
            total += 41 + len(item)
        elif isinstance(item, float):
            total += 32
        elif isinstance(item, (list, tuple)):
            total += 64 + 8 * len(item)
            if total > cap:
                return total
            stack.extend(item)
        elif isinstance(item, dict):
            total += 72 + 40 * len(item)
            if total > cap:
                return total
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, OpError):
            total += 64
            stack.append(item.code)
            stack.append(item.message)
        elif isinstance(item, (QueuePushError, QueuePopError)):
            total += 64
            stack.append(item.value)
        else:
            total += 64
        if total > cap:
            return total
    return total
