"""lazily-queue: embeddable, asyncio-native queues on the lazily reactive cell model.

A FIFO :class:`QueueCell`, a pub/sub ``TopicCell`` and a ``WorkQueueCell`` live inside
the application process, over pluggable storage: an in-process deque, or a Raft log
replicated across peers of the same application.
"""

from .cells import QueueCell
from .core.queue import EMPTY, QueuePopError, QueuePushError, QueueReader
from .errors import InvalidConfiguration, LazilyQueueError, QueueClosed, UnsupportedOperation
from .reactive import Context, batch
from .storage import QueueStorage, VecDequeStorage

__all__ = [
    "EMPTY",
    "Context",
    "InvalidConfiguration",
    "LazilyQueueError",
    "QueueCell",
    "QueueClosed",
    "QueuePopError",
    "QueuePushError",
    "QueueReader",
    "QueueStorage",
    "UnsupportedOperation",
    "VecDequeStorage",
    "batch",
]
