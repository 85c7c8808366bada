"""lazily-queue: embeddable, asyncio-native queues on the lazily reactive cell model.

A FIFO :class:`QueueCell`, a pub/sub ``TopicCell`` and a ``WorkQueueCell`` live inside
the application process, over pluggable storage: an in-process deque, or a Raft log
replicated across peers of the same application.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cells import GroupCell, Job, Message, QueueCell, TopicCell, WorkQueueCell
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
        AddressInUse,
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
        ThreadSafetyError,
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
    from .node import ClusterMismatch, DataDirectoryTooNew, Node
    from .raft.errors import (
        CommitTimeout,
        NodeNotRunning,
        NoQuorum,
        ProposalRejected,
        ResultNotKept,
        StorageUnavailable,
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
    from .transactions import Transaction, TxOp, transaction

    __version__: str

#: Where each public name is defined: nothing is imported with the package itself (a
#: process that needs one name, the command line a few, loads only those modules).
_HOMES = {
    "cells": "GroupCell Job Message QueueCell TopicCell WorkQueueCell",
    "client": "AccessDenied CertificateCredentials Client ClientAccess ClientClosed "
              "ClientGrant ClusterClient Credentials FrameBudgetFull PermissionDenied "
              "RequestRefused SessionForgotten TooManyLinks Unreachable connect",
    "core.dedup": "DedupLimits",
    "core.limits": "Limits",
    "core.queue": "EMPTY QueuePopError QueuePushError QueueReader",
    "core.scheduling": "RetryPolicy",
    "core.topic": "Durability SubscribeOutcome TopicCore TopicTransition",
    "core.work": "DeadLetter DeadLetterReason Delivery PendingItem Receipt WorkQueueCore "
                 "WorkReader WorkTransition",
    "errors": "AddressInUse InvalidConfiguration InvalidHeaders InvalidMessageId InvalidName "
              "InvalidSchedule InvalidSnapshot InvalidTimestamp InvalidTtl LazilyQueueError "
              "LimitExceeded MessageTooLarge OffsetOutOfRange OperationFailed QueueClosed "
              "SettlementRejected SubscriptionLost ThreadSafetyError TooManyObjects "
              "TooManySubscribers TransactionAborted TransactionError TransactionUnsupported "
              "UnconfirmedAcks UnknownSubscriber UnsupportedOperation UnsupportedValue",
    "node": "ClusterMismatch DataDirectoryTooNew Node",
    "raft.errors": "CommitTimeout NodeNotRunning NoQuorum ProposalRejected ResultNotKept "
                   "StorageUnavailable",
    "reactive": "Context batch",
    "serializers": "Serializer serializer",
    "storage": "LocalTopicStorage LocalWorkQueueStorage QueueStorage StorageCapabilities "
               "TopicStorage VecDequeStorage WorkQueueStorage",
    "threads": "ThreadSafeCell ThreadSafeQueue",
    "transactions": "Transaction TxOp transaction",
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names.split()}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lazily-queue")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """Each public name (and ``__version__``) loads its module on first use."""
    if name == "__version__":
        value: Any = _version()
    else:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'lazily_queue' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "EMPTY",
    "AccessDenied",
    "AddressInUse",
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
    "ThreadSafetyError",
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
