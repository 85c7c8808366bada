"""Storage backends behind the cell shells."""

from .base import (
    BoundedStorage,
    ObservableQueueStorage,
    PeekableStorage,
    QueueChangeListener,
    QueueStorage,
    ReplicatedQueueStorage,
    storage_capacity,
)
from .local import VecDequeStorage
from .topic import (
    ObservableTopicStorage,
    ReplicatedTopicStorage,
    TopicChangeListener,
    TopicStorage,
    TopicView,
)
from .work import (
    ObservableWorkQueueStorage,
    ReplicatedWorkQueueStorage,
    WorkQueueChangeListener,
    WorkQueueStorage,
    WorkQueueView,
)

__all__ = [
    "BoundedStorage",
    "ObservableQueueStorage",
    "ObservableTopicStorage",
    "ObservableWorkQueueStorage",
    "PeekableStorage",
    "QueueChangeListener",
    "QueueStorage",
    "ReplicatedQueueStorage",
    "ReplicatedTopicStorage",
    "ReplicatedWorkQueueStorage",
    "TopicChangeListener",
    "TopicStorage",
    "TopicView",
    "VecDequeStorage",
    "WorkQueueChangeListener",
    "WorkQueueStorage",
    "WorkQueueView",
    "storage_capacity",
]
