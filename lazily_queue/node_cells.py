"""The cells of a node: its replicated queues, topics and work queues, opened by name."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .cell_reopening import (
    drop_refused,
    limits_text,
    queue_reopened,
    reopened,
    retry_text,
    same_rules,
    same_serializer,
)
from .cells.queue import QueueCell
from .cells.topic import TopicCell
from .cells.work_queue import DEFAULT_MAX_DELIVERIES, DEFAULT_VISIBILITY_TIMEOUT, WorkQueueCell
from .core.limits import Limits
from .core.numbers import FLOAT_RANGE
from .core.scheduling import RetryPolicy
from .core.topic import out_of_range
from .core.work_masks import validate_config
from .errors import InvalidConfiguration, shown
from .names import check_name, check_room
from .serializers import Serializer
from .storage.raft_groups import RaftGroupStorage
from .storage.raft_limited import LimitedRaftWorkQueueStorage
from .storage.raft_queue import RaftQueueStorage
from .storage.raft_topic import RaftTopicStorage
from .storage.raft_work_queue import RaftWorkQueueStorage
from .storage.replicated_object import Proposer

if TYPE_CHECKING:
    from .reactive import Context
    from .replicated.view import ReadView
    from .routing import EventRouter
    from .transactions import Transaction

T = TypeVar("T")


class NodeCells:
    """:class:`~lazily_queue.node.Node`'s cell factories (a client's too, over its remote
    storages). A name opens one cell per node; opening it again returns that cell, and
    must give the same settings. The cell of a deleted object is let go: it stays
    while the application holds it (and opening the name again returns it), else it
    is freed, so ever new names used and deleted take no memory for good. A client
    lets go the same way of the cells it did not open lately (:meth:`_opened`)."""

    queue_storage: type[RaftQueueStorage[Any]] = RaftQueueStorage
    topic_storage: type[RaftTopicStorage] = RaftTopicStorage
    work_queue_storage: type[RaftWorkQueueStorage] = RaftWorkQueueStorage
    limited_work_queue_storage: type[LimitedRaftWorkQueueStorage] = LimitedRaftWorkQueueStorage
    ctx: Context
    op_timeout: float
    #: Objects the cluster may hold, checked before opening a new one (``None``: not
    #: checked here; a client's member checks it).
    max_objects: int | None = None
    #: Subscriptions a topic may hold, checked before a new one (``None``: as above).
    max_subscribers: int | None = None
    _router: EventRouter
    _queue_cells: dict[str, QueueCell[Any]]
    _topic_cells: dict[str, TopicCell[Any]]
    _work_cells: dict[str, WorkQueueCell]
    #: The cells let go (:meth:`_release`) while something else holds them, by
    #: ``(kind, name)``.
    _released_cells: weakref.WeakValueDictionary[tuple[str, str], Any]

    @property
    def driver(self) -> Proposer:
        """Where the storages' operations go: a node's driver, a client's session."""
        raise NotImplementedError

    @property
    def view(self) -> ReadView:
        raise NotImplementedError

    def transaction(self) -> Transaction:
        """A transaction over this node's (client's) cells, committed as one replicated
        entry, all or none: ``async with node.transaction() as tx:`` (see
        :mod:`lazily_queue.transactions`)."""
        from .transactions import Transaction
        from .transactions.replicated import ReplicatedBackend

        return Transaction(ReplicatedBackend(self))

    @overload
    def queue(self, name: str, *, capacity: int | None = None, serializer: Serializer[T],
              limits: Limits | None = None, ttl: float | None = None) -> QueueCell[T]: ...

    @overload
    def queue(self, name: str, *, capacity: int | None = None, serializer: None = None,
              limits: Limits | None = None, ttl: float | None = None) -> QueueCell[Any]: ...

    def queue(
        self, name: str, *, capacity: int | None = None,
        serializer: Serializer[Any] | None = None, limits: Limits | None = None,
        ttl: float | None = None,
    ) -> QueueCell[Any]:
        """The replicated queue ``name`` (declared on first use; same capacity or
        ``limits`` everywhere: another declaration is refused with ``limits_mismatch``).
        ``serializer`` (see :mod:`lazily_queue.serializers`) encodes and decodes its values.
        ``ttl`` (seconds) is the default TTL of its elements (the same on every node that
        gives one; see :mod:`lazily_queue.core.expiry`)."""
        Limits.checked(limits, f"queue {name!r}")
        cell = self._queue_cells.get(name)
        if cell is None:
            cell = self._adopt("queue", name)
        if cell is not None:
            mismatch = queue_reopened(name, (cell.capacity(), cell.limits()), (capacity, limits))
            if mismatch is not None:
                if drop_refused(self._queue_cells, self._router.queues, name):
                    return self.queue(name, capacity=capacity, serializer=serializer,
                                      limits=limits, ttl=ttl)
                raise mismatch
            same_serializer("queue", name, cell.serializer, serializer)
            same_rules("queue", name, self._router.queues[name], ttl, None)
            self._opened("queue", name)
            return cell
        self._admit("queue", name)
        storage: RaftQueueStorage[Any] = self.queue_storage(
            self.driver, self.view, name, capacity=capacity, timeout=self.op_timeout, ttl=ttl,
            **({} if limits is None else {"limits": limits}),
        )
        cell = QueueCell(storage, context=self.ctx, name=name, serializer=serializer)
        self._router.queues[name] = storage
        self._queue_cells[name] = cell
        self._opened("queue", name)
        return cell

    @overload
    def topic(self, name: str, *, serializer: Serializer[T], limits: Limits | None = None,
              ttl: float | None = None, max_age: float | None = None) -> TopicCell[T]: ...

    @overload
    def topic(self, name: str, *, serializer: None = None, limits: Limits | None = None,
              ttl: float | None = None, max_age: float | None = None) -> TopicCell[Any]: ...

    def topic(self, name: str, *, serializer: Serializer[Any] | None = None,
              limits: Limits | None = None, ttl: float | None = None,
              max_age: float | None = None) -> TopicCell[Any]:
        """The replicated topic ``name`` (declared on first use; ``limits``: its retention,
        ``drop_oldest`` or ``reject``, the same everywhere). Its elements leave once older
        than ``ttl`` or ``max_age`` (seconds; the smaller) or their own publish ``ttl``,
        read or not (the same on every node that gives them; see
        :mod:`lazily_queue.core.topic_expiry`)."""
        Limits.checked(limits, f"topic {name!r}")
        cell = self._topic_cells.get(name)
        if cell is None:
            cell = self._adopt("topic", name)
        if cell is not None:
            if cell.limits() != limits:
                if drop_refused(self._topic_cells, self._router.topics, name):
                    return self.topic(name, serializer=serializer, limits=limits, ttl=ttl,
                                      max_age=max_age)
                raise reopened("topic", name, limits_text(cell.limits()), limits_text(limits))
            same_serializer("topic", name, cell.serializer, serializer)
            same_rules("topic", name, self._router.topics[name], ttl, max_age)
            self._opened("topic", name)
            return cell
        self._admit("topic", name)
        storage = self.topic_storage(self.driver, self.view, name, timeout=self.op_timeout,
                                     ttl=ttl, max_age=max_age,
                                     **({} if limits is None else {"limits": limits}))
        storage.register_group = self._route_group
        storage.max_subscribers = self.max_subscribers
        cell = TopicCell(storage, context=self.ctx, name=name, serializer=serializer)
        self._router.topics[name] = storage
        self._topic_cells[name] = cell
        self._opened("topic", name)
        return cell

    def work_queue(
        self,
        name: str,
        *,
        visibility_timeout: float = DEFAULT_VISIBILITY_TIMEOUT,
        max_deliveries: int = DEFAULT_MAX_DELIVERIES,
        serializer: Serializer[Any] | None = None,
        retry: RetryPolicy | None = None,
        ttl: float | None = None,
        limits: Limits | None = None,
    ) -> WorkQueueCell:
        """The replicated work queue ``name``.

        ``visibility_timeout`` is in seconds; leases, deadlines and ``now`` inside the
        replicated queue are the leader's whole milliseconds since the Unix epoch (a
        ``now`` with a fraction is refused with ``ValueError``). ``retry``
        (seconds) is the back-off of a nacked or expired item. Every node must open it
        with the same settings.
        """
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidConfiguration(f"retry must be a RetryPolicy, got {shown(retry)}")
        Limits.checked(limits, f"work queue {name!r}")
        validate_config(visibility_timeout, max_deliveries)  # before it is scaled to ms
        if visibility_timeout < 0.001:
            raise InvalidConfiguration(
                f"visibility_timeout must be at least 0.001 s on a node (leases are whole "
                f"milliseconds), got {shown(visibility_timeout)}")
        if visibility_timeout > FLOAT_RANGE / 1000:
            raise InvalidConfiguration(
                f"visibility_timeout must be at most {FLOAT_RANGE / 1000:g} s on a node "
                f"(leases are whole milliseconds), got {shown(visibility_timeout)}")
        return self.open_work_queue(name, round(visibility_timeout * 1000), max_deliveries,
                                    serializer=serializer, ttl=ttl,
                                    retry=None if retry is None else retry.scaled(1000),
                                    limits=limits)

    def open_work_queue(
        self, name: str, visibility_timeout_ms: int, max_deliveries: int, *,
        serializer: Serializer[Any] | None = None, retry: RetryPolicy | None = None,
        ttl: float | None = None,
        limits: Limits | None = None,
    ) -> WorkQueueCell:
        """:meth:`work_queue` with the lease length (and ``retry``) in the replicated
        unit (ms)."""
        timeout_ms = visibility_timeout_ms
        cell = self._work_cells.get(name)
        if cell is None:
            cell = self._adopt("work_queue", name)
        if cell is not None:
            opened = getattr(cell.storage, "retry", None)
            if (cell.visibility_timeout, cell.max_deliveries, opened, cell.limits()) != (
                    timeout_ms, max_deliveries, retry, limits):
                if drop_refused(self._work_cells, self._router.work_queues, name):
                    return self.open_work_queue(name, timeout_ms, max_deliveries,
                                                serializer=serializer, retry=retry, ttl=ttl,
                                                limits=limits)
                shown = [(f"visibility_timeout={cell.visibility_timeout / 1000:g}",
                          f"visibility_timeout={timeout_ms / 1000:g}"),
                         (f"max_deliveries={cell.max_deliveries}",
                          f"max_deliveries={max_deliveries}"),
                         (f"retry={retry_text(opened)}", f"retry={retry_text(retry)}"),
                         (limits_text(cell.limits()), limits_text(limits))]
                differ = [pair for pair in shown if pair[0] != pair[1]]
                raise reopened("work queue", name, ", ".join(a for a, _ in differ),
                                ", ".join(b for _, b in differ))
            same_serializer("work queue", name, cell.serializer, serializer)
            same_rules("work queue", name, self._router.work_queues[name], ttl, None)
            self._opened("work_queue", name)
            return cell
        routed = self._router.work_queues.get(name)
        if isinstance(routed, RaftGroupStorage):
            raise InvalidConfiguration(
                f"{name!r} is group {routed.group!r} of topic {routed.topic!r}; open it with "
                f"topic({routed.topic!r}).group({routed.group!r})")
        self._admit("work_queue", name)
        storage = self.work_queue_storage(
            self.driver,
            self.view,
            name,
            visibility_timeout=timeout_ms,
            max_deliveries=max_deliveries,
            timeout=self.op_timeout,
            ttl=ttl,
            **({} if retry is None else {"retry": retry}),
        ) if limits is None else self._limited_work_storage(name, timeout_ms, max_deliveries,
                                                            limits, retry, ttl)
        cell = WorkQueueCell(storage, context=self.ctx, name=name, serializer=serializer)
        self._router.work_queues[name] = storage
        self._work_cells[name] = cell
        self._opened("work_queue", name)
        return cell

    def _limited_work_storage(self, name: str, timeout_ms: int, max_deliveries: int,
                              limits: Limits, retry: RetryPolicy | None, ttl: float | None,
                              ) -> RaftWorkQueueStorage:
        """The storage of a work queue with limits, with its retry policy and default
        TTL."""
        return self.limited_work_queue_storage(
            self.driver, self.view, name, visibility_timeout=timeout_ms,
            max_deliveries=max_deliveries, limits=limits, timeout=self.op_timeout, retry=retry,
            ttl=ttl)

    def _let_deleted_go(self) -> None:
        """Set up :meth:`_release` of the cells of deleted objects (from ``__init__``)."""
        self._released_cells = weakref.WeakValueDictionary()
        self._router.on_deleted = self._release
        self._router.on_restored = self._release_absent

    def _cells(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {"queue": self._queue_cells,
                                             "topic": self._topic_cells,
                                             "work_queue": self._work_cells}
        return tables.get(kind, {})

    def _opened(self, kind: str, name: str) -> None:
        """The cell of ``kind`` ``name`` was opened (returned by a factory or taken by a
        transaction). A node holds every open cell; a client holds those it opened
        lately and lets the others go (:meth:`_release`)."""

    def _release(self, kind: str, name: str) -> None:
        """Hold the cell of ``kind`` ``name`` (and its storage, a consumer group's too)
        weakly: its object was deleted, or a client did not open it lately."""
        cell = self._cells(kind).pop(name, None)
        if cell is not None:
            self._released_cells[(kind, name)] = cell
        self._router.release(kind, name)

    def _release_absent(self) -> None:
        """A snapshot was installed (the deletions it holds were never applied here):
        release the cells and storages of the objects it does not hold."""
        view = self.view
        held: dict[str, Any] = {"queue": view.queues, "topic": view.topics,
                                "work_queue": view.work_queues}
        for kind, objects in held.items():
            names = set(self._cells(kind)) | set(self._router.storage_names(kind))
            for name in names - set(objects):
                self._release(kind, name)

    def _adopt(self, kind: str, name: str) -> Any:
        """The released cell of ``kind`` ``name``, held again (or ``None``)."""
        cell = self._released_cells.pop((kind, name), None)
        if cell is not None:
            self._cells(kind)[name] = cell
            self._router.adopt(kind, name)
        return cell

    def _admit(self, kind: str, name: str, what: str = "") -> None:
        """Refuse a new cell whose name breaks the name rule, or (with ``max_objects``)
        whose object would take the cluster over its cap (see :mod:`lazily_queue.names`)."""
        check_name(name, what or f"{kind.replace('_', ' ')} name")
        if self.max_objects is not None:
            check_room(self.view, kind, name, self.max_objects)

    def _route_group(self, storage: RaftGroupStorage) -> RaftGroupStorage:
        start = storage.start
        if isinstance(start, int) and start < 0 and storage.name not in self.view.work_queues:
            # In no topic's range; the offsets this node cannot judge (it may lag) are
            # refused by the declaration.
            topic = self.view.topics.get(storage.topic)
            base, end = (0, 0) if topic is None else (topic.base_offset(), topic.end_offset())
            raise out_of_range(start, base, end)
        routed = self._router.work_queues.get(storage.name)
        if isinstance(routed, RaftGroupStorage):
            return routed
        if routed is not None:
            raise InvalidConfiguration(
                f"{storage.name!r} is open as a work queue on this node; it cannot also be "
                f"group {storage.group!r} of topic {storage.topic!r}")
        self._admit("work_queue", storage.name, "consumer group's name")
        self._router.work_queues[storage.name] = storage
        return storage
