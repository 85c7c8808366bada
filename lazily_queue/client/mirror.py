"""Mirror: a client's copy of the objects it reads, kept as the member applies them.

The mirror is a :class:`~lazily_queue.replicated.state_machine.StateMachine` holding
only the watched objects. Reading an object through :class:`MirrorView` starts
watching it (until its state arrives it reads as undeclared); the member answers with
the object as it applied it and the count of ops it had applied, then reports every
later op on it, which the mirror replays with the member's leader time. The events of
the replay reach the storages through an :class:`~lazily_queue.routing.EventRouter`,
so the cells' readers update as entries apply on the member. After a reconnect every
watched object is fetched again from the new member. An object deleted (and not declared
again in the same report) stops being watched, freeing its place among the objects a
link may watch (``MAX_WATCHES``); reading it again watches it anew. So does an object
whose storage the client let go (:class:`MirrorRouter`) once nothing holds the storage:
a client that reads ever new names keeps the watches and copies of those it holds.

A consumer group's work queue is mirrored as one: the member reports what its topic
feeds it as pushes to it, so a topic's replayed ``GROUP_DECLARE`` makes no group here
(nothing is fed twice), only the topic if new.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import Any

from ..core.fifo import Fifo
from ..core.topic import TopicCore
from ..reactive import Context
from ..replicated import objects, ops
from ..replicated.state_machine import StateMachine
from ..replicated.view import ReadView
from ..replicated.work_queues import WorkState
from ..routing import EventRouter

log = logging.getLogger(__name__)

Key = tuple[str, str]

#: The ops that delete the object they name.
_DELETES = frozenset({ops.QUEUE_DELETE, ops.TOPIC_DELETE, ops.WORK_DELETE})


class MirrorView(ReadView):
    """The mirror's read view; reading an object asks for it to be watched."""

    __slots__ = ("_watch", "mirror")

    def __init__(self, sm: StateMachine, mirror: Mirror) -> None:
        super().__init__(sm)
        self.mirror = mirror
        self._watch = mirror.watch

    def queue(self, name: str) -> Fifo[Any] | None:
        self._watch("queue", name)
        return super().queue(name)

    def topic(self, name: str) -> TopicCore[Any] | None:
        self._watch("topic", name)
        return super().topic(name)

    def work_queue(self, name: str) -> WorkState | None:
        self._watch("work_queue", name)
        return super().work_queue(name)


class MirrorRouter(EventRouter):
    """The mirror's router: a storage it lets go (see
    :meth:`~lazily_queue.routing.EventRouter.release`) ends the watch of its object,
    by ``gone(key)`` on the loop, once the storage is freed and its name not opened
    again."""

    def __init__(self, ctx: Context, gone: Callable[[Key], None]) -> None:
        super().__init__(ctx, "client")
        self._gone = gone
        #: The storages let go that are watched for being freed (each once).
        self._watched: weakref.WeakSet[Any] = weakref.WeakSet()

    def release(self, kind: str, name: str) -> None:
        super().release(kind, name)
        storage = self.released.get((kind, name))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on the loop: the watch stays
        if storage is None:
            self._gone_unless_opened((kind, name))
        elif storage not in self._watched:  # let go again after it was opened again
            self._watched.add(storage)
            weakref.finalize(storage, _call_soon, loop, self._gone_unless_opened,
                             (kind, name))

    def _gone_unless_opened(self, key: Key) -> None:
        if self.storage(*key) is None:
            self._gone(key)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[[Key], None], key: Key) -> None:
    """Run ``fn(key)`` on ``loop`` (a storage can be freed on any thread)."""
    try:
        loop.call_soon_threadsafe(fn, key)
    except RuntimeError:
        pass  # the loop is closed: so is the client


class Mirror:
    """The watched objects, their replay positions and the routing to the storages."""

    def __init__(self, ctx: Context, request: Callable[[Key], None],
                 release: Callable[[Key], None] | None = None) -> None:
        self.sm = StateMachine()
        self.view = MirrorView(self.sm, self)
        self.router: EventRouter = MirrorRouter(ctx, self.let_go)
        self._request = request
        self._release = release
        #: The member's applied-op count each watched object is current to (None:
        #: asked for, not yet received from the member now linked).
        self.positions: dict[Key, int | None] = {}
        self.refused: dict[Key, str] = {}
        #: Watched for an op that reports its own refusal: the mirror's refusal (its
        #: reason, once it came) is held back until the op has answered.
        self._held: dict[Key, str | None] = {}

    def watch(self, kind: str, name: str) -> None:
        key = (kind, name)
        if key not in self.positions and key not in self.refused:
            self.positions[key] = None
            self._request(key)

    def watch_for(self, kind: str, name: str) -> None:
        """Watch an object for an op that needs the same permission: a refusal to
        mirror it is not logged unless the op succeeds (:meth:`answered`)."""
        key = (kind, name)
        if key not in self.positions and key not in self.refused:
            self._held[key] = None
            self.watch(kind, name)

    def answered(self, kind: str, name: str, *, refused: bool) -> None:
        """The op :meth:`watch_for` went with has answered: a refusal to mirror the
        object held back is logged unless the op was ``refused`` too."""
        key = (kind, name)
        reason = self._held.pop(key, None)
        if reason is not None and not refused:
            self._warn(key, reason)

    def relinked(self) -> list[Key]:
        """A new member: every watched object must be fetched again; returns them."""
        for key in self.positions:
            self.positions[key] = None
        return list(self.positions)

    def install(self, key: Key, index: int, doc: Any) -> None:
        """The member's state of ``key`` as of its ``index``-th applied op (ignored for
        a key no longer watched: a state sent before the member heard it unwatched)."""
        if key not in self.positions:
            return
        kind, name = key
        objects.install(self.sm, kind, name, doc)
        self.positions[key] = index
        storage = self._storage(key)
        if storage is not None:
            with self.router.ctx.batch():
                storage.on_reset()

    def refuse(self, key: Key, reason: str) -> None:
        if key in self._held:
            self._held[key] = reason
        elif key not in self.refused:
            self._warn(key, reason)
        self.refused[key] = reason
        self.positions.pop(key, None)
        objects.install(self.sm, *key, None)  # what it mirrored before goes too
        storage = self._storage(key)
        if storage is not None:
            with self.router.ctx.batch():
                storage.on_reset()

    def let_go(self, key: Key) -> None:
        """Nothing reads ``key`` any more: stop watching it and forget its copy (reading
        it again watches it anew)."""
        self.refused.pop(key, None)
        self._held.pop(key, None)
        if key not in self.positions:
            return
        del self.positions[key]
        objects.install(self.sm, *key, None)
        if self._release is not None:
            self._release(key)

    def _warn(self, key: Key, reason: str) -> None:
        log.warning("cannot mirror %s %r: %s; its readers stay empty", *key, reason)

    def replay(self, items: list[Any]) -> None:
        """Apply ``[[kind, name, index, now, op], ...]`` the member reported, in order."""
        positions = self.positions
        deleted: set[Key] = set()
        for kind, name, index, now, op in items:
            key = (kind, name)
            seen = positions.get(key)
            if seen is None or index <= seen:
                continue
            positions[key] = index
            if op[0] == ops.GROUP_DECLARE:
                self._declare_topic(now, op)
            else:
                self.sm.replay(now, op)
                if op[0] in _DELETES:
                    deleted.add(key)
        for key in deleted:
            self._forget(key)
        events = self.sm.drain_events()
        if events:
            self.router.route(events)

    def _forget(self, key: Key) -> None:
        """Stop watching ``key`` when it is still deleted (before its readers learn it,
        so a reader read again watches it anew)."""
        kind, name = key
        tables: dict[str, Any] = {"queue": self.sm.queues, "topic": self.sm.topics,
                                  "work_queue": self.sm.work_queues}
        if self._release is None or name in tables[kind]:
            return
        del self.positions[key]
        self._release(key)

    def _declare_topic(self, now: int, op: list[Any]) -> None:
        """A topic's ``GROUP_DECLARE`` as the mirror replays it: the topic is made if new
        (as the member made it), the group is not (its work queue, when mirrored, comes
        from the member as it is fed)."""
        sm = self.sm
        sm.now = max(sm.now, now)
        if (len(op) == 6 and isinstance(op[1], str) and op[1] and isinstance(op[2], str)
                and op[2] and op[1] not in sm.topics):
            sm.topics[op[1]] = TopicCore()

    def _storage(self, key: Key) -> Any:
        return self.router.storage(*key)
