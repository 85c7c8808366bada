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

__all__ = [
    "BoundedStorage",
    "ObservableQueueStorage",
    "PeekableStorage",
    "QueueChangeListener",
    "QueueStorage",
    "ReplicatedQueueStorage",
    "VecDequeStorage",
    "storage_capacity",
]
