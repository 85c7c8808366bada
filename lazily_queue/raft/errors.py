"""Errors of the replicated layer."""

from __future__ import annotations

from ..errors import OperationFailed


class ReplicationError(OperationFailed):
    """A replicated operation did not complete; ``applied`` says whether it may have
    been applied (``None``: unknown) or certainly was not (``False``)."""


class NoQuorum(ReplicationError):
    """This node cannot reach a majority of the cluster; writes are refused."""


class CommitTimeout(ReplicationError, TimeoutError):
    """An operation did not commit before its deadline; the message says whether it applied."""


class ProposalRejected(ReplicationError):
    """The leader or the state machine refused the operation; the message says why."""


class ResultNotKept(ProposalRejected):
    """A retried operation had already applied, and its result is no longer kept to
    answer the retry (a session keeps a bounded amount of results): it was not applied
    again; read the object's state to learn what it did."""


class NodeNotRunning(ReplicationError):
    """The node is not started, or has been stopped."""


class StorageUnavailable(ReplicationError):
    """This node cannot write its journal (a full or failing disk); it acknowledges no
    writes until it can again, and resumes by itself. Reads go on."""
