"""Remote storages: the cells of a client (a process that is not a cluster member).

They are the Raft storages with two things swapped: operations go to the client's
connection (a :class:`~lazily_queue.storage.raft_queue.Proposer`), which sends them
to the member it is linked to, under the client's session, so a retry through another
member applies at most once; reads come from the client's mirror of the object (see
:mod:`lazily_queue.client.mirror`): the member's applied state, kept current by the
ops the member reports as it applies them. Reading an object for the first time starts
mirroring it; until its state arrives it reads as empty, and its readers update then.

Capabilities are those of the Raft storages: ``observable`` and ``lifecycle`` (plus
``peek`` for queues and ``own_clock`` for work queues, stamped with the leader's time);
there is no synchronous surface. Once the client is closed, every call and every
waiting one fails with :class:`~lazily_queue.client.ClientClosed`.
"""

from __future__ import annotations

from typing import TypeVar

from ..errors import LazilyQueueError
from .capabilities import StorageCapabilities
from .raft_queue import RaftQueueStorage
from .raft_topic import RaftTopicStorage
from .raft_work_queue import RaftWorkQueueStorage

T = TypeVar("T")


def _closed(kind: str, name: str) -> LazilyQueueError:
    from ..client.protocol import ClientClosed

    return ClientClosed(f"{kind} {name!r}: the client is closed; use it inside "
                        "`async with client:`")


class RemoteQueueStorage(RaftQueueStorage[T]):
    """A queue reached through a client connection (module docstring)."""

    def __repr__(self) -> str:
        return f"RemoteQueueStorage({self.name!r}, len={self.len()}, capacity={self.capacity()})"

    def _stopped(self) -> Exception:
        return _closed(self.kind, self.name)


class RemoteTopicStorage(RaftTopicStorage):
    """A topic reached through a client connection (module docstring). No consumer
    groups: a client's mirror follows one object's ops, and a group is fed by its
    topic's; open groups on a member."""

    capabilities = StorageCapabilities(observable=True, lifecycle=True, dedup=True, messages=True,
                                       replay=True, replay_time=True, headers=True,
                                       expiry=True)

    def __repr__(self) -> str:
        return f"RemoteTopicStorage({self.name!r})"

    def _stopped(self) -> Exception:
        return _closed(self.kind, self.name)


class RemoteWorkQueueStorage(RaftWorkQueueStorage):
    """A work queue reached through a client connection (module docstring)."""

    def __repr__(self) -> str:
        return f"RemoteWorkQueueStorage({self.name!r})"

    def _stopped(self) -> Exception:
        return _closed(self.kind, self.name)


__all__ = ["RemoteQueueStorage", "RemoteTopicStorage", "RemoteWorkQueueStorage"]
