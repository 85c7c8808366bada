"""What a storage backend offers beyond its family's required methods, declared.

Every backend implements its family's protocol (:class:`~lazily_queue.storage.QueueStorage`,
:class:`~lazily_queue.storage.TopicStorage`, :class:`~lazily_queue.storage.WorkQueueStorage`):
awaitable operations plus the synchronous reads the reactive readers need. Anything more
is a capability the backend declares in its ``capabilities`` attribute; a cell reads the
declaration (it never probes the backend's type), and :func:`declared` checks that every
declared capability has its methods.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class StorageCapabilities:
    """The optional parts of a backend; every flag is off unless declared.

    - ``sync``: the ``try_*`` operations complete synchronously on the owning loop's
      thread (local backends). Without it the cell's ``try_*`` methods refuse with
      :class:`~lazily_queue.errors.UnsupportedOperation` naming the awaitable to use.
    - ``observable``: the backend reports every transition, including ones this cell
      did not make, through ``set_change_listener``; the cell then invalidates from
      those reports only.
    - ``peek``: ``peek()`` (queues): the cell has a ``head`` reader.
    - ``reporting_ops``: ``reporting_ops(report)`` (queues): synchronous push/pop that
      report their invalidation mask, the cell's fast path.
    - ``own_clock``: operations given ``now=None`` are stamped with the backend's own
      time (a Raft leader's), so a cell without a clock need not supply one.
    - ``lifecycle``: the backend can stop (a node that stops): ``raise_if_stopped()``
      raises once it has, and it reports a change to its listener when it stops, so every
      call waiting in the cell (a pop, a claim, a stream, a push waiting for room) wakes
      and fails with that error instead of waiting forever.
    - ``logical_time`` (work queues): a ``now`` the caller gives is honoured: a lease
      runs until ``now + visibility_timeout`` and ``reap_expired(now)`` expires by it.
      Without it (a broker's leases run on the broker's clock) the time is ignored.
    - ``dedup``: a push given a producer ``msg_id`` applies once while the id is in the
      backend's bounded window (:mod:`lazily_queue.core.dedup`); a repeat applies nothing
      and returns the first push's result (``offer_once`` / ``publish_once`` /
      ``push_once``). Without it the cells refuse ``msg_id`` with
      :class:`~lazily_queue.errors.UnsupportedOperation`.
    - ``messages`` (queues): ``poll_stamped`` / ``unpoll_stamped``: pops answer the
      message ids and enqueue stamps of what they take (runs, :mod:`lazily_queue.core.ids`)
      and give-backs return elements under the same ids. Without it the cell has no
      ``pop_message`` (it refuses with :class:`~lazily_queue.errors.UnsupportedOperation`).
    - ``headers`` (queues): ``offer_options`` pushes an element with headers (a
      :mod:`~lazily_queue.core.headers` map kept by its message id), ``poll_headers`` /
      ``unpoll_headers`` are ``poll_stamped`` / ``unpoll_stamped`` carrying them along.
      Without it the cell refuses ``headers=`` with
      :class:`~lazily_queue.errors.UnsupportedOperation` naming the backend.
    - ``replay`` (topics): a new subscription can start at the head or an offset
      (``subscribe_at``) and a cursor can move anywhere in the retained range (``seek``).
    - ``replay_time`` (topics): the same positions given as an enqueue time
      (``subscribe_at_time`` / ``seek_time``, a stamp in ms): the first retained element
      enqueued at or after it, the tail when none.
    - ``subscriber_delete`` (topics): ``delete_subscriber`` forgets one subscription and
      its cursor (and, with ``sync``, ``try_delete_subscriber`` does it synchronously).
    - ``groups`` (topics): consumer groups (``open_group``): work queues the topic feeds
      with every element it publishes.
    - ``scheduling`` (work queues): priority levels, delayed items and delayed nacks
      (pushes through ``push_options``, ``nack_delayed``, ``promote_due`` and the ``delayed_len`` /
      ``delayed`` / ``pending_by_priority`` / ``next_due`` reads, see
      :mod:`lazily_queue.core.scheduling`). Without it the cells refuse ``priority``,
      ``delay``, ``not_before`` and ``nack(delay=)`` with
      :class:`~lazily_queue.errors.UnsupportedOperation` naming the backend.
    - ``expiry``: message expiry (:mod:`lazily_queue.core.expiry`): pushes take a
      per-message ``ttl`` (queues: ``offer_options``; work queues: ``push_options``),
      what expired is never handed out, and ``expired_count()`` counts what left that
      way. Without it the cells refuse ``ttl`` with
      :class:`~lazily_queue.errors.UnsupportedOperation`.
    - Work queues push with options through one method, ``push_options``: any
      combination of the options whose capabilities the backend declares (``msg_id``,
      ``headers``, ``ttl``, ``priority``, ``delay`` / ``not_before``) in one step
      (:mod:`lazily_queue.core.work_options`); ``headers``, ``scheduling`` and
      ``expiry`` each require it.
    - ``limits`` (queues): ``limits()`` and ``limited_fifo()``: the queue was declared with
      :class:`~lazily_queue.core.limits.Limits`, whose count the cell reads as readers.
    """

    sync: bool = False
    observable: bool = False
    peek: bool = False
    reporting_ops: bool = False
    own_clock: bool = False
    lifecycle: bool = False
    logical_time: bool = False
    dedup: bool = False
    messages: bool = False
    headers: bool = False
    replay: bool = False
    replay_time: bool = False
    groups: bool = False
    subscriber_delete: bool = False
    scheduling: bool = False
    expiry: bool = False
    limits: bool = False


def declared(
    storage: object,
    family: str,
    required: tuple[str, ...],
    methods: Mapping[str, tuple[str, ...]],
) -> StorageCapabilities:
    """``storage.capabilities``, checked: the ``required`` methods are there, and each
    declared flag has its ``methods``.

    Raises ``TypeError`` naming the storage and what is missing.
    """
    caps = getattr(storage, "capabilities", None)
    name = type(storage).__name__
    if isinstance(storage, str):
        raise TypeError(
            f"a {family} cell's first argument is its storage, not its name: pass the name "
            f"as name={storage!r} (a node's cells: node.queue(name), node.work_queue(name), "
            "node.topic(name))")
    if not isinstance(caps, StorageCapabilities):
        raise TypeError(
            f"{name} is not a {family} storage: it has no `capabilities` "
            "(a StorageCapabilities)"
        )
    for method in required:
        if not callable(getattr(storage, method, None)):
            raise TypeError(f"{name} is not a {family} storage: it has no {method}()")
    for flag in fields(caps):
        if not getattr(caps, flag.name):
            continue
        for method in methods.get(flag.name, ()):
            if not callable(getattr(storage, method, None)):
                raise TypeError(
                    f"{name} declares the {flag.name!r} capability but has no {method}()"
                )
    return caps


def _running() -> None:
    return None


def stop_check(storage: object) -> Callable[[], None]:
    """What a cell calls before and while it waits: the storage's ``raise_if_stopped``
    when it declares ``lifecycle``, else a check that never raises."""
    caps = getattr(storage, "capabilities", None)
    if isinstance(caps, StorageCapabilities) and caps.lifecycle:
        check: Callable[[], None] = getattr(storage, "raise_if_stopped")  # noqa: B009
        return check
    return _running


def unreachable_check(storage: object) -> Callable[[], Exception | None] | None:
    """What a cell's wait that reached its deadline raises instead of ``TimeoutError``:
    the storage's ``unreachable()`` (a broker storage's: the broker could not be reached
    by its last refresh), or ``None`` for a storage without one."""
    check: Callable[[], Exception | None] | None = getattr(storage, "unreachable", None)
    return check
