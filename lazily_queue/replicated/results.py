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
    if result is None:
        return _SCALAR
    total = 0
    stack = [result]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        kind = type(item)
        if kind is list or kind is tuple or kind is dict:
            if kind is dict:
                total += 72 + 40 * len(item)
                if total > cap:
                    return total
                item = [*item, *item.values()]  # keys are counted as values are
            else:
                total += 64 + 8 * len(item)
                if total > cap:
                    return total
            for x in item:  # scalars here, containers later
                kind = type(x)
                if kind is bytes:
                    total += 41 + len(x)
                elif x is None or kind is bool:
                    total += _SCALAR
                elif kind is int:
                    total += 36 + (x.bit_length() >> 5) * 4
                elif kind is str:
                    total += 57 + (len(x) if x.isascii() else 4 * len(x))
                else:
                    push(x)
        else:  # a scalar alone (the result, or what a value of no plain type holds)
            total += _other_size(item, stack)
        if total > cap:
            return total
    return total


_SCALAR = 8


def _other_size(item: Any, stack: list[Any]) -> int:
    """:func:`result_size`'s count for a value that is not a container of a plain type:
    as the plain value it is encoded as (a subclass as its base type), pushing what it
    nests on ``stack``."""
    if item is None or isinstance(item, bool):
        return _SCALAR
    if isinstance(item, int):
        return 36 + (item.bit_length() >> 5) * 4
    if isinstance(item, str):
        return 57 + (len(item) if item.isascii() else 4 * len(item))
    if isinstance(item, (bytes, bytearray)):
        return 41 + len(item)
    if isinstance(item, float):
        return 32
    if isinstance(item, (list, tuple)):
        stack.extend(item)
        return 64 + 8 * len(item)
    if isinstance(item, dict):
        stack.extend(item)
        stack.extend(item.values())
        return 72 + 40 * len(item)
    if isinstance(item, OpError):
        stack.append(item.code)
        stack.append(item.message)
        return 64
    if isinstance(item, (QueuePushError, QueuePopError)):
        stack.append(item.value)
        return 64
    return 64
