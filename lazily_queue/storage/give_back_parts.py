"""A give-back too large for one operation, in parts that each fit.

A take may hand out more bytes than one operation carries (a take is held to what its
session keeps, several messages of ``max_message_bytes``; an operation to one message
and a command's room), so giving all of it back at once would be refused. It goes as
parts in FIFO order, each the largest run of elements the proposer takes in one
operation, proposed **last part first**: each part goes to the head, so once every part
applied the elements stand at the head in their order under their ids, stamps and
headers. The copies of one id stay in one part when they can (:func:`_middle`). A part
that fails leaves the parts after it given back and the parts before it not (each part
applies whole or not at all). The parts cannot share one replicated entry: an entry
(a command) holds at most one operation's room, and together they exceed it; so between
two parts another consumer may pop the elements already back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import ids
from ..core.ids import Run
from ..errors import MessageTooLarge
from ..replicated import ops as C


def give_back_op(name: str, values: list[Any], runs: list[Run],
                 headers: list[list[Any]] | None) -> tuple[int, list[Any]]:
    """The op giving ``values`` back under ``runs`` (and ``headers``, when any)."""
    if headers:
        return C.QUEUE_UNPOP_HEADERS, [name, list(values), runs, headers]
    return C.QUEUE_UNPOP_STAMPED, [name, list(values), runs]


def give_back_parts(
    name: str, values: list[Any], runs: list[Run], headers: list[list[Any]] | None,
    encode: Callable[[int, list[Any]], bytes],
) -> list[tuple[int, list[Any]]]:
    """The ops giving ``values`` back, in FIFO order, each one ``encode`` takes (it
    raises :class:`MessageTooLarge` for one it would not). Propose them last first. One
    element too large alone raises what ``encode`` raised."""
    op = give_back_op(name, values, runs, headers)
    try:
        encode(*op)
    except MessageTooLarge:
        if len(values) < 2:
            raise
    else:
        return [op]
    half = _middle(runs, len(values))
    first_runs, last_runs = _split(runs, half)
    first_headers = last_headers = None
    if headers:
        first_ids = {i for i, _ in ids.expand(first_runs)}
        first_headers = [entry for entry in headers if entry[0] in first_ids]
        last_headers = [entry for entry in headers if entry[0] not in first_ids]
    return (give_back_parts(name, values[:half], first_runs, first_headers, encode)
            + give_back_parts(name, values[half:], last_runs, last_headers, encode))


def _middle(runs: list[Run], n: int) -> int:
    """Where to cut the ``n`` elements ``runs`` names in two: the cut nearest the middle
    that leaves no id on both sides (the copies of one id, as a producer's give-back
    applied twice leaves them, go back in one part: a part naming only a copy the part
    before gave back would be refused whole where give-backs are checked), else the
    middle."""
    named = [i for i, _ in ids.expand(runs)]
    half = n // 2
    if len(set(named)) == n:
        return half
    last = {i: k for k, i in enumerate(named)}
    cuts, reach = [], 0
    for k, i in enumerate(named):
        if 0 < k and reach < k:
            cuts.append(k)
        reach = max(reach, last[i])
    return min(cuts, key=lambda k: abs(k - half), default=half)


def _split(runs: list[Run], k: int) -> tuple[list[Run], list[Run]]:
    """The runs of the first ``k`` ids ``runs`` covers, and of the rest."""
    head = ids.covered(runs) - k
    return _first(runs, k), ids.tail(runs, head) if head else []


def _first(runs: list[Run], k: int) -> list[Run]:
    out: list[Run] = []
    for first, count, stamp in runs:
        if k <= 0:
            break
        out.append([first, min(count, k), stamp])
        k -= count
    return out
