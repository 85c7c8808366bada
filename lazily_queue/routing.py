"""EventRouter: a node's storages by name, and the routing of applied events to them.

After each released step the driver hands over the events the state machine reported;
the router passes them to the observers (metrics), then to the storage of the named
queue, topic or work queue, in one reactive batch, so readers update once per step.
A snapshot install resets every storage.

A deleted object's storage is released (:meth:`~EventRouter.release`): held weakly,
it is routed to while its cell is in use and goes with it, unless the name is opened
again (:meth:`~EventRouter.adopt`); a client releases the storages of the cells it did
not open lately the same way. Hooks hear of each deletion and snapshot install.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .reactive import Context
from .replicated.events import (
    EVENT_TYPES,
    Deleted,
    Event,
    Expired,
    QueueChanged,
    Restored,
    TopicChanged,
    WorkQueueChanged,
)
from .storage.raft_queue import RaftQueueStorage
from .storage.raft_topic import RaftTopicStorage
from .storage.raft_work_queue import RaftWorkQueueStorage

log = logging.getLogger(__name__)

Storage = RaftQueueStorage[Any] | RaftTopicStorage | RaftWorkQueueStorage
#: Called with every wave of applied events (after each released step).
EventObserver = Callable[[Sequence[Event]], None]


class EventRouter:
    """Holds the storages of one node and routes events to them (module docstring)."""

    def __init__(self, ctx: Context, node_id: str) -> None:
        self.ctx = ctx
        self.node_id = node_id
        self.queues: dict[str, RaftQueueStorage[Any]] = {}
        self.topics: dict[str, RaftTopicStorage] = {}
        self.work_queues: dict[str, RaftWorkQueueStorage] = {}
        #: The storages released, by ``(kind, name)``, while something holds them.
        self.released: weakref.WeakValueDictionary[tuple[str, str], Storage] = (
            weakref.WeakValueDictionary())
        #: Called with ``(kind, name)`` of each deleted object, after its storage heard.
        self.on_deleted: Callable[[str, str], None] | None = None
        #: Called after the storages heard that a snapshot was installed.
        self.on_restored: Callable[[], None] | None = None
        self._observers: list[EventObserver] = []

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "queue": self.queues, "topic": self.topics, "work_queue": self.work_queues}
        return tables[kind]

    def storage(self, kind: str, name: str) -> Any:
        """The storage of ``kind`` ``name`` routed to, released or not (or ``None``)."""
        return self._routed(self._table(kind), kind, name)

    def storage_names(self, kind: str) -> list[str]:
        """The names of ``kind`` routed to (released ones left out)."""
        return list(self._table(kind))

    def release(self, kind: str, name: str) -> None:
        """Hold the storage of ``kind`` ``name`` (deleted, or let go) weakly from now on."""
        storage = self._table(kind).pop(name, None)
        if storage is not None:
            self.released[(kind, name)] = storage

    def adopt(self, kind: str, name: str) -> None:
        """Hold the released storage of ``kind`` ``name`` (opened again) as before."""
        storage = self.released.pop((kind, name), None)
        if storage is not None:
            self._table(kind)[name] = storage

    def storages(self) -> Iterator[Storage]:
        yield from self.queues.values()
        yield from self.topics.values()
        yield from self.work_queues.values()
        yield from list(self.released.values())

    def add_observer(self, observer: EventObserver) -> None:
        self._observers.append(observer)

    def reset(self) -> None:
        """Tell every storage that anything may have changed."""
        with self.ctx.batch():
            for storage in self.storages():
                storage.on_reset()

    def _deleted(self, event: Deleted) -> None:
        families: dict[str, dict[str, Any]] = {
            "queue": self.queues, "topic": self.topics, "work_queue": self.work_queues}
        storage = self._routed(families.get(event.family, {}), event.family, event.name)
        if storage is not None:
            storage.forget_declaration()
        if self.on_deleted is not None:
            self.on_deleted(event.family, event.name)

    def route(self, released: Sequence[object]) -> None:
        """Hand one wave of released events to the observers, then to the storages."""
        events = [e for e in released if isinstance(e, EVENT_TYPES)]
        for observer in self._observers:
            try:
                observer(events)
            except Exception:
                log.exception("node %s: an event observer failed", self.node_id)
        if not (self.queues or self.topics or self.work_queues or self.released):
            for event in events:  # no storage: only a deletion's or a restore's hooks run
                if type(event) is Deleted or type(event) is Restored:
                    break
            else:
                return  # no reader anywhere: no reactive batch either
        with self.ctx.batch():
            for event in events:
                match event:
                    case QueueChanged():
                        queue: Any = self.queues.get(event.name)  # self._routed inlined
                        if queue is None and self.released:
                            queue = self.released.get(("queue", event.name))
                        if queue is not None:
                            queue.on_event(event)
                    case TopicChanged():
                        topic = self._routed(self.topics, "topic", event.name)
                        if topic is not None:
                            topic.on_event(event)
                    case WorkQueueChanged():
                        work = self._routed(self.work_queues, "work_queue", event.name)
                        if work is not None:
                            work.on_event(event)
                    case Expired(kind="topic"):
                        expiring = self._routed(self.topics, "topic", event.name)
                        if expiring is not None:
                            expiring.on_expired()
                    case Deleted():
                        self._deleted(event)
                    case Restored():
                        for storage in self.storages():
                            storage.on_reset()
                        if self.on_restored is not None:
                            self.on_restored()

    def _routed(self, table: dict[str, Any], kind: str, name: str) -> Any:
        found = table.get(name)
        if found is None and self.released:
            found = self.released.get((kind, name))
        return found
