"""What the state machine reports after applying: one typed event per transition.

The replica releases them with the step that applied them; the node routes them to the
storage of the named queue, topic or work queue, whose change listener updates its
cell's readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class QueueChanged:
    """Queue ``name`` changed by ``op`` (``core.queue.PUSH``/``POP``/``UNPOP``/``CLOSE``)
    when it held ``pre_len`` elements."""

    name: str
    op: int
    pre_len: int


@dataclass(frozen=True, slots=True)
class QueueDeclared:
    """Queue ``name`` was declared with ``capacity``."""

    name: str
    capacity: int | None


@dataclass(frozen=True, slots=True)
class TopicChanged:
    """Topic ``name`` changed what ``subscribers`` read."""

    name: str
    subscribers: frozenset[str]


@dataclass(frozen=True, slots=True)
class TopicPublished:
    """An element was published to topic ``name`` at ``offset`` (with or without
    subscribers)."""

    name: str
    offset: int


@dataclass(frozen=True, slots=True)
class WorkQueueChanged:
    """Work queue ``name`` changed the readers in ``mask`` (``core.work.WorkReader``)."""

    name: str
    mask: int


@dataclass(frozen=True, slots=True)
class Expired:
    """``count`` elements of a cell expired (left undelivered) at one entry; for a topic,
    ``skipped`` counts the unread elements its subscribers lost (the gap they see)."""

    kind: str
    name: str
    count: int
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class MemberAddressed:
    """Member ``node`` is reachable at ``address``."""

    node: str
    address: str


@dataclass(frozen=True, slots=True)
class OpApplied:
    """``op`` (``[code, *args]``) was applied at leader time ``now``; ``index`` counts the
    ops reported so. Reported only for the objects in the state machine's ``tap`` (a
    member serving clients, whose mirrors replay it)."""

    index: int
    now: int
    op: list[Any]


@dataclass(frozen=True, slots=True)
class Replaced:
    """The ``kind`` object ``name``, in the state machine's ``tap``, became a state its
    ops do not replay (a consumer group declared from its topic's retained elements): a
    mirror of it fetches it anew."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Deleted:
    """The ``family`` (``"queue"``, ``"topic"`` or ``"work_queue"``) object ``name`` was
    deleted; using the name again declares it anew."""

    family: str
    name: str


@dataclass(frozen=True, slots=True)
class TransactionApplied:
    """A transaction of ``ops`` ops committed (its ops' own events come before this one)
    or, with ``committed`` false, aborted and applied nothing."""

    committed: bool
    ops: int


@dataclass(frozen=True, slots=True)
class Restored:
    """The whole state was replaced by a snapshot: every reader may have changed."""


Event = (QueueChanged | QueueDeclared | TopicChanged | TopicPublished | WorkQueueChanged
         | MemberAddressed | OpApplied | Replaced | Deleted | TransactionApplied | Restored
         | Expired)
#: Every event type (to pick events out of what a replica releases).
EVENT_TYPES = (QueueChanged, QueueDeclared, TopicChanged, TopicPublished, WorkQueueChanged,
               MemberAddressed, OpApplied, Replaced, Deleted, TransactionApplied, Restored,
               Expired)
