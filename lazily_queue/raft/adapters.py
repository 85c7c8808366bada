"""The PySyncObj hooks the engine fills in: its node class, a transport that hands every
message to the driver, a poller with nothing to poll, serializer hooks never used, and
the wrapping of how committed entries are applied."""

from __future__ import annotations

import contextlib
import queue
from collections import deque
from collections.abc import Callable
from typing import Any

from pysyncobj.node import Node as _PsNode
from pysyncobj.transport import Transport as _PsTransport

from . import entries
from .acks import RepeatedAcks
from .log_config import in_effect_already
from .prevote import LEADER


class RaftPeer(str, _PsNode):  # type: ignore[misc]
    """A cluster member, identified by its node id as a string. It is that string too,
    for its hash only: it equals, shows and formats as the library's node does."""

    def __new__(cls, node_id: str, **kwargs: Any) -> RaftPeer:
        return str.__new__(cls, str(node_id))

    def __init__(self, node_id: str, **kwargs: Any) -> None:
        _PsNode.__init__(self, str(node_id), **kwargs)

    # The library hashes and compares members many times a step (its dicts and sets are
    # keyed by them): the hash of the id, as the library's, computed by str without a
    # call of Python code.
    __hash__ = str.__hash__
    __repr__ = _PsNode.__repr__
    __str__ = _PsNode.__str__

    def __eq__(self, other: object) -> bool:
        # ``_id`` is what the library's ``id`` property returns
        return self is other or (isinstance(other, _PsNode) and self._id == other._id)

    def __ne__(self, other: object) -> bool:
        return not (self is other or (isinstance(other, _PsNode) and self._id == other._id))


class EngineTransport(_PsTransport):  # type: ignore[misc]
    """Sends through ``send(peer_id, message)`` (the acknowledgements ``acks`` wants);
    reports membership to ``membership`` and a snapshot message without a chunk (none
    could go) to ``no_chunk``."""

    def __init__(
        self,
        send: Callable[[str, dict[str, Any]], None],
        membership: Callable[[str, bool], None],
        no_chunk: Callable[[Any], None] = lambda node: None,
        acks: RepeatedAcks | None = None,
    ) -> None:
        super().__init__(None, None, None)
        self._out = send
        self._membership = membership
        self._no_chunk = no_chunk
        self._acks = acks

    def send(self, node: Any, message: dict[str, Any]) -> bool:
        if (message["type"] == "next_node_idx" and self._acks is not None
                and not self._acks.wanted(node._id, message)):
            return True
        self._out(node._id, message)  # node.id, without the property
        if "serialized" in message and message["serialized"] is None:
            self._no_chunk(node)
        return True

    def addNode(self, node: Any) -> None:
        self._membership(node.id, True)

    def dropNode(self, node: Any) -> None:
        self._membership(node.id, False)


class NoPoller:
    """We own every socket: the library's per-tick poll of its own fds is idle work."""

    def poll(self, timeout: float) -> None:
        return None


class CommandQueue:
    """The engine's queue of proposed commands: the library's, without a lock (the
    engine runs on one thread) and with a length, so an empty queue costs nothing;
    ``limit`` 0 is unbounded, as in the library."""

    def __init__(self, limit: int, replaced: Any) -> None:
        #: The queued commands (the engine tests it for emptiness without a call).
        self.items: deque[Any] = deque()
        self._limit = limit
        with contextlib.suppress(queue.Empty):  # whatever the library queued meanwhile
            while True:
                self.items.append(replaced.get_nowait())

    def put_nowait(self, item: Any) -> None:
        if 0 < self._limit <= len(self.items):
            raise queue.Full
        self.items.append(item)

    def get_nowait(self) -> Any:
        if not self.items:
            raise queue.Empty
        return self.items.popleft()

    def __len__(self) -> int:
        return len(self.items)


def unused_serializer(*_: Any) -> Any:
    raise AssertionError("the SnapshotStore serializes; this hook is never called")


def wrap_application(
    engine: Any, before_applying: Callable[[], None], apply_batch: Callable[[bytes, int], Any]
) -> None:
    """Run ``before_applying`` on a leader before each round of applying committed entries
    (the durable-commit clamp), and apply our command entries (:mod:`.entries`) with
    ``apply_batch(batch, stamp)``; PySyncObj's own entries keep their own path, but a
    membership change already in effect (:mod:`.log_config`) changes nothing.
    ``engine.apply_committed()`` applies up to the commit index without
    ``before_applying`` (for a caller that computed the commit index itself)."""
    apply_entries = engine._SyncObj__applyLogEntries
    apply_command = engine._SyncObj__doApplyCommand

    def applying_entries() -> Any:
        if engine._SyncObj__raftState == LEADER:
            before_applying()
        return apply_entries()

    def applying_command(command: bytes) -> Any:
        found = entries.command_of(command)
        if found is not None:
            return apply_batch(found[1], found[0])
        if in_effect_already(command):
            return None
        with engine._env:  # a membership change reads the library's clock
            return apply_command(command)

    engine._SyncObj__applyLogEntries = applying_entries
    engine.apply_committed = apply_entries
    engine._SyncObj__doApplyCommand = applying_command
