"""Remote storages: the cells of a client (a process that is not a cluster member).

They are the Raft storages with two things swapped: operations go to the client's
connection (a :class:`~lazily_queue.storage.replicated_object.Proposer`), which sends them
to the member it is linked to, under the client's session, so a retry through another
member applies at most once; reads come from the client's mirror of the object (see
:mod:`lazily_queue.client.mirror`): the member's applied state, kept current by the
ops the member reports as it applies them. Reading an object for the first time starts
mirroring it; until its state arrives it reads as empty, and its readers update then.

Capabilities are those of the Raft storages: ``observable`` and ``lifecycle`` (plus
``peek`` for queues and ``own_clock`` for work queues, stamped with the leader's time);
there is no synchronous surface. A topic's consumer groups are mirrored as the work
queues they are (the member reports what the topic feeds a group as pushes to it). Once
the client is closed, every call and every waiting one fails with
:class:`~lazily_queue.client.ClientClosed`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .raft_groups import RaftGroupStorage
from .raft_limited import LimitedRaftWorkQueueStorage
from .raft_queue import RaftQueueStorage
from .raft_topic import RaftTopicStorage
from .raft_work_queue import RaftWorkQueueStorage

T = TypeVar("T")


class Remote:
    """What a remote storage changes in its Raft storage: a closed client's error."""

    kind: str
    name: str

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def _stopped(self) -> Exception:
        from ..client.protocol import NOT_OPEN, ClientClosed

        return ClientClosed(f"{self.kind} {self.name!r}: {NOT_OPEN}")

    def unreachable(self) -> Exception | None:
        """While the client is linked to no member, the ``Unreachable`` naming each
        address's failure: a wait on the client's mirror that reaches its deadline raises
        it (the mirror could not hear from the cluster); else ``None``."""
        check: Callable[[], Exception | None] | None = getattr(
            getattr(self, "_driver", None), "unreachable", None)
        return None if check is None else check()


class RemoteQueueStorage(Remote, RaftQueueStorage[T]):
    """A queue reached through a client connection (module docstring)."""

    def __repr__(self) -> str:
        return f"RemoteQueueStorage({self.name!r}, len={self.len()}, capacity={self.capacity()})"


class RemoteGroupStorage(Remote, RaftGroupStorage):
    """A topic's consumer group reached through a client connection (module docstring).
    Joining it starts mirroring it, so the group as declared arrives with the answer; a
    client refused both reports the refusal once, as the join's ``PermissionDenied``."""

    async def _declare(self, timeout: float | None) -> None:
        from ..client.mirror import MirrorView
        from ..client.protocol import PermissionDenied

        view = self._view
        if not isinstance(view, MirrorView):
            return await super()._declare(timeout)
        view.mirror.watch_for("work_queue", self.name)
        refused = False
        try:
            await super()._declare(timeout)
        except PermissionDenied:
            refused = True
            raise
        finally:
            view.mirror.answered("work_queue", self.name, refused=refused)
        return None


class RemoteTopicStorage(Remote, RaftTopicStorage):
    """A topic reached through a client connection (module docstring)."""

    group_storage = RemoteGroupStorage


class RemoteWorkQueueStorage(Remote, RaftWorkQueueStorage):
    """A work queue reached through a client connection (module docstring)."""


class RemoteLimitedWorkQueueStorage(Remote, LimitedRaftWorkQueueStorage):
    """A work queue with limits reached through a client connection (module docstring)."""


__all__ = ["RemoteGroupStorage", "RemoteLimitedWorkQueueStorage", "RemoteQueueStorage",
           "RemoteTopicStorage", "RemoteWorkQueueStorage"]
