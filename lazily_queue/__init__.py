"""lazily-queue: embeddable, asyncio-native queues on the lazily reactive cell model.

A FIFO :class:`QueueCell`, a pub/sub ``TopicCell`` and a ``WorkQueueCell`` live inside
the application process, over pluggable storage: an in-process deque, or a Raft log
replicated across peers of the same application.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version
from typing import TYPE_CHECKING, Any

from .cells import GroupCell, Job, Message, QueueCell, TopicCell, WorkQueueCell
from .core.dedup import DedupLimits
from .core.limits import Limits
from .core.queue import EMPTY, QueuePopError, QueuePushError, QueueReader
from .core.scheduling import RetryPolicy
from .core.topic import Durability, SubscribeOutcome, TopicCore, TopicTransition
from .core.work import (
    DeadLetter,
    DeadLetterReason,
    Delivery,
    PendingItem,
    Receipt,
    WorkQueueCore,
    WorkReader,
    WorkTransition,
)
from .errors import (
    InvalidConfiguration,
    InvalidHeaders,
    InvalidMessageId,
    InvalidName,
    InvalidSchedule,
    InvalidSnapshot,
    InvalidTimestamp,
    InvalidTtl,
    LazilyQueueError,
    LimitExceeded,
    MessageTooLarge,
    OffsetOutOfRange,
    OperationFailed,
    QueueClosed,
    SettlementRejected,
    SubscriptionLost,
    TooManyObjects,
    TooManySubscribers,
    TransactionAborted,
    TransactionError,
    TransactionUnsupported,
    UnconfirmedAcks,
    UnknownSubscriber,
    UnsupportedOperation,
    UnsupportedValue,
)
from .reactive import Context, batch
from .serializers import Serializer, serializer
from .storage import (
    LocalTopicStorage,
    LocalWorkQueueStorage,
    QueueStorage,
    StorageCapabilities,
    TopicStorage,
    VecDequeStorage,
    WorkQueueStorage,
)
from .threads import ThreadSafeCell, ThreadSafeQueue

try:
    __version__: str = _version("lazily-queue")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from .client import (
        AccessDenied,
        CertificateCredentials,
        Client,
        ClientAccess,
        ClientClosed,
        ClientGrant,
        ClusterClient,
        Credentials,
        FrameBudgetFull,
        PermissionDenied,
        RequestRefused,
        SessionForgotten,
        TooManyLinks,
        Unreachable,
        connect,
    )
    from .node import ClusterMismatch, DataDirectoryTooNew, Node
    from .raft.errors import (
        CommitTimeout,
        NodeNotRunning,
        NoQuorum,
        ProposalRejected,
        ResultNotKept,
        StorageUnavailable,
    )
    from .transactions import Transaction, TxOp, transaction

_LAZY = {
    "AccessDenied": "client",
    "CertificateCredentials": "client",
    "Client": "client",
    "ClientAccess": "client",
    "ClientClosed": "client",
    "ClientGrant": "client",
    "ClusterClient": "client",
    "Credentials": "client",
    "PermissionDenied": "client",
    "RequestRefused": "client",
    "SessionForgotten": "client",
    "TooManyLinks": "client",
    "FrameBudgetFull": "client",
    "Unreachable": "client",
    "connect": "client",
    "Node": "node",
    "ClusterMismatch": "node",
    "DataDirectoryTooNew": "node",
    "CommitTimeout": "raft.errors",
    "NoQuorum": "raft.errors",
    "NodeNotRunning": "raft.errors",
    "ProposalRejected": "raft.errors",
    "ResultNotKept": "raft.errors",
    "StorageUnavailable": "raft.errors",
    "Transaction": "transactions",
    "TxOp": "transactions",
    "transaction": "transactions",
}


def __getattr__(name: str) -> Any:
    """The replicated runtime (``Node`` and its errors) and ``connect`` load on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lazily_queue' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "EMPTY",
    "AccessDenied",
    "CertificateCredentials",
    "Client",
    "ClientAccess",
    "ClientClosed",
    "ClientGrant",
    "ClusterClient",
    "ClusterMismatch",
    "CommitTimeout",
    "Context",
    "Credentials",
    "DataDirectoryTooNew",
    "DeadLetter",
    "DeadLetterReason",
    "DedupLimits",
    "Delivery",
    "Durability",
    "FrameBudgetFull",
    "GroupCell",
    "InvalidConfiguration",
    "InvalidHeaders",
    "InvalidMessageId",
    "InvalidName",
    "InvalidSchedule",
    "InvalidSnapshot",
    "InvalidTimestamp",
    "InvalidTtl",
    "Job",
    "LazilyQueueError",
    "LimitExceeded",
    "Limits",
    "LocalTopicStorage",
    "LocalWorkQueueStorage",
    "Message",
    "MessageTooLarge",
    "NoQuorum",
    "Node",
    "NodeNotRunning",
    "OffsetOutOfRange",
    "OperationFailed",
    "PendingItem",
    "PermissionDenied",
    "ProposalRejected",
    "QueueCell",
    "QueueClosed",
    "QueuePopError",
    "QueuePushError",
    "QueueReader",
    "QueueStorage",
    "Receipt",
    "RequestRefused",
    "ResultNotKept",
    "RetryPolicy",
    "Serializer",
    "SessionForgotten",
    "SettlementRejected",
    "StorageCapabilities",
    "StorageUnavailable",
    "SubscribeOutcome",
    "SubscriptionLost",
    "ThreadSafeCell",
    "ThreadSafeQueue",
    "TooManyLinks",
    "TooManyObjects",
    "TooManySubscribers",
    "TopicCell",
    "TopicCore",
    "TopicStorage",
    "TopicTransition",
    "Transaction",
    "TransactionAborted",
    "TransactionError",
    "TransactionUnsupported",
    "TxOp",
    "UnconfirmedAcks",
    "UnknownSubscriber",
    "Unreachable",
    "UnsupportedOperation",
    "UnsupportedValue",
    "VecDequeStorage",
    "WorkQueueCell",
    "WorkQueueCore",
    "WorkQueueStorage",
    "WorkReader",
    "WorkTransition",
    "__version__",
    "batch",
    "connect",
    "serializer",
    "transaction",
]
