"""The PySyncObj hooks the engine fills in: its node class, a transport that hands every
message to the driver, a poller with nothing to poll and serializer hooks never used."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pysyncobj.node import Node as _PsNode
from pysyncobj.transport import Transport as _PsTransport


class RaftPeer(_PsNode):  # type: ignore[misc]
    """A cluster member, identified by its node id as a string."""

    def __init__(self, node_id: str, **kwargs: Any) -> None:
        super().__init__(str(node_id), **kwargs)


class EngineTransport(_PsTransport):  # type: ignore[misc]
    """Sends through ``send(peer_id, message)``; reports membership to ``membership``."""

    def __init__(
        self,
        send: Callable[[str, dict[str, Any]], None],
        membership: Callable[[str, bool], None],
    ) -> None:
        super().__init__(None, None, None)
        self._out = send
        self._membership = membership

    def send(self, node: Any, message: dict[str, Any]) -> bool:
        self._out(node.id, message)
        return True

    def addNode(self, node: Any) -> None:
        self._membership(node.id, True)

    def dropNode(self, node: Any) -> None:
        self._membership(node.id, False)


class NoPoller:
    """We own every socket: the library's per-tick poll of its own fds is idle work."""

    def poll(self, timeout: float) -> None:
        return None


def unused_serializer(*_: Any) -> Any:
    raise AssertionError("the SnapshotStore serializes; this hook is never called")
