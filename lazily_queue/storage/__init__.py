"""Storage backends behind the cell shells: one protocol per cell family, capabilities
declared (see :mod:`lazily_queue.storage.capabilities`)."""

from .capabilities import StorageCapabilities
from .local import VecDequeStorage
from .local_topic import LocalTopicStorage
from .local_work import LocalWorkQueueStorage
from .queue import (
    ObservableQueueStorage,
    PeekableQueueStorage,
    QueueChangeListener,
    QueueStorage,
    SyncQueueStorage,
)
from .topic import (
    ObservableTopicStorage,
    SyncTopicStorage,
    TopicChangeListener,
    TopicStorage,
)
from .work import (
    ObservableWorkQueueStorage,
    Settlement,
    SyncWorkQueueStorage,
    WorkQueueChangeListener,
    WorkQueueStorage,
)

__all__ = [
    "LocalTopicStorage",
    "LocalWorkQueueStorage",
    "ObservableQueueStorage",
    "ObservableTopicStorage",
    "ObservableWorkQueueStorage",
    "PeekableQueueStorage",
    "QueueChangeListener",
    "QueueStorage",
    "Settlement",
    "StorageCapabilities",
    "SyncQueueStorage",
    "SyncTopicStorage",
    "SyncWorkQueueStorage",
    "TopicChangeListener",
    "TopicStorage",
    "VecDequeStorage",
    "WorkQueueChangeListener",
    "WorkQueueStorage",
]
