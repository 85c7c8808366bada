"""Exceptions shared by every cell and backend."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable

from lazily_transports.errors import shown as shown  # ``repr`` for a message, cut when long


def shown_path(path: str | os.PathLike[str], limit: int = 120) -> str:
    """A file's path for a message, its middle cut when longer than ``limit``."""
    text = os.fspath(path)
    return text if len(text) <= limit else f"{text[:40]}...{text[-(limit - 43):]}"


class LazilyQueueError(Exception):
    """Base class of every error this package raises on purpose."""


class ThreadSafetyError(LazilyQueueError, RuntimeError):
    """A cell was used from the wrong thread: a node's or client's cell called from
    another event loop than the one its node or client was started on, a local cell
    awaited on another loop, or (in asyncio's debug mode) its synchronous core
    (``try_*``) called in another thread, while the loop that holds it runs
    (:mod:`lazily_queue.cells.loop_owner`), or a blocking cross-thread call
    (:mod:`lazily_queue.threads`) made on the loop thread itself."""


def check_loop(owner: asyncio.AbstractEventLoop | None, who: str | Callable[[], str]) -> None:
    """Raise :class:`ThreadSafetyError` unless the caller runs on ``owner``, the event
    loop ``who`` (a node, a client; or what names it, asked only for the error) was
    started on (``None``: not started)."""
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if owner is not None and running is not owner:
        name = who if isinstance(who, str) else who()
        raise ThreadSafetyError(
            f"{name} runs on another event loop than this call's, and its cells are not "
            "thread-safe: call them on that loop, or from another thread through a "
            "blocking handle made there (`cell.threadsafe()`, or `cell.threadsafe(loop)` "
            "with that loop); nothing was sent")


class OperationFailed(LazilyQueueError):
    """An operation did not complete. ``applied`` is ``False`` when it certainly was not
    applied (retrying it as is cannot duplicate it), ``None`` when its outcome is
    unknown: it may have been applied, so retry a push with a ``msg_id`` to keep it from
    being queued twice; ``True`` when it was applied but its result cannot be given."""

    def __init__(self, message: str = "", *, applied: bool | None = None) -> None:
        super().__init__(message)
        self.applied = applied


class QueueClosed(LazilyQueueError):
    """The queue is closed: no more pushes, and (for pops) nothing left to drain."""

    @classmethod
    def push_refused(cls, name: str) -> QueueClosed:
        """The error of a push to the closed queue ``name``."""
        return cls(f"{name}: queue is closed; push refused: closing a queue is for good "
                   "(what it holds still drains); stop pushing to it, or delete it "
                   "(`lazily-queue queue delete`) and declare it again to reuse the name")


class UnsupportedOperation(LazilyQueueError, TypeError):
    """The storage backend does not offer this operation; the message names the alternative."""


class UnsupportedValue(LazilyQueueError, TypeError):
    """A value cannot be replicated (its type, a map key or its nesting); the message says
    which and what is allowed."""


class InvalidConfiguration(LazilyQueueError, ValueError):
    """A constructor or configuration value is out of range; the message says which."""


class AddressInUse(InvalidConfiguration, OSError):
    """A node cannot listen on ``address`` (``errno`` ``EADDRINUSE``): another process, or
    another node in this one, listens there (on a ``webrtc`` address: another node with
    this id joined the room). Raised by ``Node.start()``, which leaves nothing running."""

    def __init__(self, message: str, *, address: str) -> None:
        super().__init__(message)
        self.errno = errno.EADDRINUSE
        self.address = address

    @classmethod
    def at(cls, node_id: str, address: str, cause: OSError, *, clients: bool) -> AddressInUse:
        """The error of node ``node_id`` failing with ``cause`` to listen on ``address``,
        its ``listen`` address (or, ``clients``, one of its clients' own)."""
        reason = cause.strerror or str(cause)
        if address.startswith("webrtc"):
            return cls(f"node {node_id} cannot join {address}: {reason}: another node with "
                       f"id {node_id} joined that room; stop it, or give this node its own "
                       "id", address=address)
        what = "for clients on" if clients else "on"
        fix = ("give its clients another address" if clients else
               "give this node another `listen` address (and the other members that "
               "address in their peers)")
        return cls(f"node {node_id} cannot listen {what} {address}: {reason}: another "
                   f"process, or another node in this one, listens there; stop it, or {fix}",
                   address=address)


class InvalidSnapshot(LazilyQueueError, ValueError):
    """A snapshot to restore is malformed or inconsistent; the message says which part."""


class DamagedData(LazilyQueueError):
    """A node's journal, metadata or snapshot failed its checks and was not used; the
    message says what is damaged and how to recover the node."""


class SettlementRejected(LazilyQueueError):
    """An ack/nack was refused: the delivery is no longer leased to this worker."""


class UnconfirmedAcks(LazilyQueueError):
    """A :meth:`~lazily_queue.cells.work_queue.WorkQueueCell.deliveries` iteration
    ended with background acks that did not commit: ``delivery_ids`` names them (of
    ``worker`` on work queue ``cell``), and the cause (``__cause__``, e.g. ``NoQuorum``)
    says whether they were not applied or their outcome is unknown. Their jobs keep
    ``receipt`` ``None``; an ack that did not apply leaves its item leased, and it is
    delivered again when the lease expires, so nothing is lost."""

    def __init__(self, message: str, *, cell: str, worker: str,
                 delivery_ids: list[int]) -> None:
        super().__init__(message)
        self.cell = cell
        self.worker = worker
        self.delivery_ids = delivery_ids


class MessageTooLarge(LazilyQueueError, ValueError):
    """A message is over the cluster's size limit; ``size`` and ``limit`` are in bytes (a
    ``bytes`` or ``str`` message counts its bytes, any other value its encoding)."""

    def __init__(self, message: str, *, size: int | None, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class InvalidName(LazilyQueueError, ValueError):
    """An object's name is not a non-empty string of at most
    :data:`~lazily_queue.names.MAX_NAME_LENGTH` characters; nothing was proposed."""


class TooManyObjects(LazilyQueueError):
    """Creating the object would take the cluster over its ``max_objects`` queues,
    topics and work queues (``limit``); delete unused ones or raise the members'
    ``max_objects``. Nothing was proposed."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class TooManySubscribers(LazilyQueueError):
    """A new subscription would take a topic over its members' ``max_subscribers``
    subscriptions (``limit``); delete subscribers no longer used
    (``TopicCell.delete_subscriber``; an operator: ``lazily-queue queue delete-subscriber``,
    the admin API or the status page), delete the topic or raise the members'
    ``max_subscribers``. Nothing was proposed."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class UnknownSubscriber(LazilyQueueError, LookupError):
    """A call that waits for a subscriber's elements (``advance``, ``stream``) names an
    id the topic does not know: it would wait for ever; subscribe the id first. Nothing
    was changed."""


class SubscriptionLost(UnknownSubscriber):
    """The ephemeral subscription a client started, and did not end itself, is gone:
    the cluster ended it with the client session that owned it (given up for the bound
    on client sessions, idle for an hour, or reaped after no member reported the client
    for 90 s), or another client or member disconnected or deleted it. The client does
    not subscribe it again by itself: elements published meanwhile were not delivered to
    it. Subscribe it again (as ephemeral) to go on."""


class InvalidMessageId(LazilyQueueError, ValueError):
    """A producer's ``msg_id`` is not a non-empty string within the length limit."""


class InvalidTimestamp(LazilyQueueError, TypeError, ValueError):
    """A replay position given as a time is not a timezone-aware ``datetime`` (a naive
    one, a ``date``, a ``float``)."""


class InvalidHeaders(LazilyQueueError, ValueError):
    """Message headers are not a map of ``str`` to ``str`` within the limits; the message
    names the limit broken and the fix."""


class InvalidTtl(LazilyQueueError, ValueError):
    """A ``ttl``, default TTL or ``max_age`` is not a positive finite number of seconds
    (or is of the wrong type); nothing was proposed or changed."""


class TransactionError(LazilyQueueError):
    """A transaction was used out of turn: an op added after it ended, a result read
    before it committed (see :mod:`lazily_queue.transactions`)."""


class TransactionUnsupported(TransactionError, UnsupportedOperation):
    """A transaction cannot carry this: a cell of another backend than the transaction's
    (another node, a client, a broker, the in-process backend), or an op it does not
    take. Raised where the op is added, so nothing is proposed."""


class TransactionAborted(TransactionError):
    """One op of a transaction would have failed, so none applied: ``index`` is its
    position, ``op`` its kind (``"push"``, ``"publish"``, ``"ack"``, ``"nack"``),
    ``cell`` its cell's name and ``code`` the cause (``"full"``, ``"closed"``,
    ``"not_leased"``, ``"unknown_queue"``, ...)."""

    def __init__(self, message: str, *, index: int, op: str, cell: str, code: str) -> None:
        super().__init__(message)
        self.index = index
        self.op = op
        self.cell = cell
        self.code = code


class OffsetOutOfRange(LazilyQueueError, ValueError):
    """A topic position outside the retained range: before the oldest retained element
    (``base``, already collected) or past the tail (``end``). ``offset`` is what was asked."""

    def __init__(self, message: str, *, offset: int, base: int, end: int) -> None:
        super().__init__(message)
        self.offset = offset
        self.base = base
        self.end = end


class LimitExceeded(LazilyQueueError):
    """A push was refused because the cell is at one of its limits (overflow policy
    ``reject``): ``cell`` names the cell, ``limit`` the limit (``"max_length"`` or
    ``"max_bytes"``) and ``value`` its bound. Wait for room (``push(..., wait=True)``),
    consume faster, raise the limit, or declare the cell with ``overflow="drop_oldest"``."""

    def __init__(self, message: str, *, cell: str, limit: str, value: int | None) -> None:
        super().__init__(message)
        self.cell = cell
        self.limit = limit
        self.value = value


class InvalidSchedule(LazilyQueueError, ValueError):
    """A priority, ``delay``, ``not_before`` or retry policy is out of range or of the
    wrong type (a naive datetime, a negative delay, an unknown priority level); raised
    before anything is proposed."""
