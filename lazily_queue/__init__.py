"""lazily-queue: embeddable, asyncio-native queues on the lazily reactive cell model.

A FIFO :class:`QueueCell`, a pub/sub ``TopicCell`` and a ``WorkQueueCell`` live inside
the application process, over pluggable storage: an in-process deque, or a Raft log
replicated across peers of the same application.
"""

from .cells import QueueCell, TopicCell, WorkQueueCell
from .core.queue import EMPTY, QueuePopError, QueuePushError, QueueReader
from .core.topic import Durability, SubscribeOutcome, TopicCore, TopicTransition
from .core.work import (
    DeadLetter,
    DeadLetterReason,
    Delivery,
    PendingItem,
    WorkQueueCore,
    WorkReader,
    WorkTransition,
)
from .errors import (
    InvalidConfiguration,
    InvalidSnapshot,
    LazilyQueueError,
    QueueClosed,
    UnsupportedOperation,
)
from .reactive import Context, batch
from .storage import (
    QueueStorage,
    ReplicatedTopicStorage,
    ReplicatedWorkQueueStorage,
    TopicStorage,
    VecDequeStorage,
    WorkQueueStorage,
)

__all__ = [
    "EMPTY",
    "Context",
    "DeadLetter",
    "DeadLetterReason",
    "Delivery",
    "Durability",
    "InvalidConfiguration",
    "InvalidSnapshot",
    "LazilyQueueError",
    "PendingItem",
    "QueueCell",
    "QueueClosed",
    "QueuePopError",
    "QueuePushError",
    "QueueReader",
    "QueueStorage",
    "ReplicatedTopicStorage",
    "ReplicatedWorkQueueStorage",
    "SubscribeOutcome",
    "TopicCell",
    "TopicCore",
    "TopicStorage",
    "TopicTransition",
    "UnsupportedOperation",
    "VecDequeStorage",
    "WorkQueueCell",
    "WorkQueueCore",
    "WorkQueueStorage",
    "WorkReader",
    "WorkTransition",
    "batch",
]
