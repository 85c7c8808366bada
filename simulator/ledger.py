"""Ledgers written by real node processes and read back into a :class:`History`.

A ledger file is a sequence of CBOR records appended (and flushed to the OS) one at a
time, so a process killed with SIGKILL leaves at most one torn record at the end:

- ``["apply", node, index, payload, stamp, results]``: a batch applied on ``node``;
- ``["issue", client, node, session, seq, code, args, polling]``: an operation sent;
- ``["outcome", session, seq, outcome, result]`` and ``["late", session, seq, result]``.

Results are tagged like the state machine's snapshot form, so errors survive the trip.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import cbor2

from lazily_queue.core.queue import QueuePopError, QueuePushError
from lazily_queue.replicated.ops import OpError

from .client import Observed
from .history import History


def encode_result(result: Any) -> Any:
    if isinstance(result, list):
        return [0, [encode_result(r) for r in result]]
    if isinstance(result, QueuePushError):
        return [1, result.value]
    if isinstance(result, QueuePopError):
        return [2, result.value]
    if isinstance(result, OpError):
        return [3, result.code, result.message]
    if isinstance(result, BaseException):
        return [4, f"{type(result).__name__}: {result}"]
    return [5, result]


def decode_result(doc: Any) -> Any:
    tag = doc[0]
    if tag == 0:
        return [decode_result(r) for r in doc[1]]
    if tag == 1:
        return QueuePushError(doc[1])
    if tag == 2:
        return QueuePopError(doc[1])
    if tag == 3:
        return OpError(doc[1], doc[2])
    if tag == 4:
        return RuntimeError(doc[1])
    return doc[1]


class LedgerWriter:
    """Appends records to a ledger file, each one handed to the OS at once."""

    def __init__(self, path: Path) -> None:
        self._file: BinaryIO = path.open("ab", buffering=0)

    def write(self, *record: Any) -> None:
        self._file.write(cbor2.dumps(list(record)))

    def close(self) -> None:
        self._file.close()


def read_ledger(path: Path) -> Iterator[list[Any]]:
    """Every complete record of a ledger (a torn last record is ignored)."""
    stream = io.BytesIO(path.read_bytes())
    size = len(stream.getbuffer())
    while stream.tell() < size:
        try:
            yield cbor2.load(stream)
        except Exception:
            return


@dataclass
class Recorded:
    """A client rebuilt from ledgers: its id and every operation it issued."""

    cid: str
    ops: list[Observed] = field(default_factory=list)


def load(paths: list[Path], history: History) -> list[Recorded]:
    """Feed every applied batch to ``history``; return the clients with their outcomes."""
    clients: dict[str, Recorded] = {}
    ops: dict[tuple[int, int], Observed] = {}
    for path in paths:
        for record in read_ledger(path):
            kind = record[0]
            if kind == "apply":
                _, node, index, payload, stamp, results = record
                history.record(node, index, payload, stamp, decode_result(results))
            elif kind == "issue":
                _, cid, node, session, seq, code, args, polling = record
                obs = Observed(cid, node, session, seq, code, args, 0.0, "unknown", "killed",
                               polling=polling)
                clients.setdefault(cid, Recorded(cid)).ops.append(obs)
                ops[(session, seq)] = obs
            elif kind == "outcome":
                _, session, seq, outcome, result = record
                obs = ops[(session, seq)]
                obs.outcome, obs.result = outcome, decode_result(result)
            elif kind == "late":
                _, session, seq, result = record
                obs = ops[(session, seq)]
                obs.orphan_result, obs.has_orphan_result = decode_result(result), True
    return list(clients.values())
