"""EventRouter: a node's storages by name, and the routing of applied events to them.

After each released step the driver hands over the events the state machine reported;
the router passes them to the observers (metrics), then to the storage of the named
queue, topic or work queue, in one reactive batch, so readers update once per step.
A snapshot install resets every storage.
"""

from __future__ import annotations

import logging
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
        self._observers: list[EventObserver] = []

    def storages(self) -> Iterator[Storage]:
        yield from self.queues.values()
        yield from self.topics.values()
        yield from self.work_queues.values()

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
        storage = families.get(event.family, {}).get(event.name)
        if storage is not None:
            storage.forget_declaration()

    def route(self, released: Sequence[object]) -> None:
        """Hand one wave of released events to the observers, then to the storages."""
        events = [e for e in released if isinstance(e, EVENT_TYPES)]
        for observer in self._observers:
            try:
                observer(events)
            except Exception:
                log.exception("node %s: an event observer failed", self.node_id)
        with self.ctx.batch():
            for event in events:
                match event:
                    case QueueChanged():
                        queue = self.queues.get(event.name)
                        if queue is not None:
                            queue.on_event(event)
                    case TopicChanged():
                        topic = self.topics.get(event.name)
                        if topic is not None:
                            topic.on_event(event)
                    case WorkQueueChanged():
                        work = self.work_queues.get(event.name)
                        if work is not None:
                            work.on_event(event)
                    case Expired(kind="topic"):
                        expiring = self.topics.get(event.name)
                        if expiring is not None:
                            expiring.on_expired()
                    case Deleted():
                        self._deleted(event)
                    case Restored():
                        for storage in self.storages():
                            storage.on_reset()
