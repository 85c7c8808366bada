"""A proposal on its way through the log, and the replica's proposal timing and sizes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import shown
from .batch import (
    BATCH_TARGET_BYTES,
    DEFAULT_MAX_MESSAGE_BYTES,
    MAX_MESSAGE_BYTES_LIMIT,
    command_limit,
)
from .engine_config import EngineConfig
from .ready import Completion

#: The longest a proposal waits to commit (seconds, about 31 years): a longer timeout
#: waits this long.
MAX_COMMIT_WAIT = 1e9


def commit_deadline(now: float, timeout: float) -> float:
    """When a proposal made at ``now`` with ``timeout`` seconds times out; a
    ``TypeError`` or ``ValueError`` naming ``timeout`` when it is no number of seconds."""
    kind = type(timeout)
    if (kind is float and timeout == timeout) or kind is int:
        return now + max(0.0, min(timeout, MAX_COMMIT_WAIT))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, got {shown(timeout)}")
    if timeout != timeout:
        raise ValueError("timeout must be a number of seconds, got nan")
    return now + float(max(0, min(timeout, MAX_COMMIT_WAIT)))


@dataclass(eq=False, slots=True)
class Proposal:
    """One operation on its way through the log."""

    seq: int
    code: int
    args: list[Any]
    encoded: bytes
    deadline: float
    on_done: Completion | None
    on_orphan: Callable[[Any], None] | None = None
    maybe_applied: bool = False
    in_flight: bool = False
    attempt_deadline: float = 0.0
    retry_at: float = 0.0
    attempts: int = 0
    done: bool = False
    last_failure: str = ""

    @property
    def orphan(self) -> bool:
        return self.on_done is None

    @property
    def size(self) -> int:
        return len(self.encoded)


@dataclass(frozen=True)
class ReplicaConfig:
    """Proposal timing (retry back-off, per-attempt patience, quorum grace period) and
    sizes: ``max_message_bytes`` bounds the message of a push or publish (every member
    must use the same), ``max_batch_bytes`` how many small operations share one entry
    (a larger operation gets an entry of its own)."""

    engine: EngineConfig = field(default_factory=EngineConfig)
    retry_delay: float = 0.02
    attempt_timeout: float = 2.0
    no_quorum_grace: float = 1.0
    max_batch_bytes: int = BATCH_TARGET_BYTES - 1024
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    def __post_init__(self) -> None:
        size = self.max_message_bytes
        if isinstance(size, bool) or not isinstance(size, int) or \
                not 1024 <= size <= MAX_MESSAGE_BYTES_LIMIT:
            raise ValueError(f"max_message_bytes must be an int from 1024 to "
                             f"{MAX_MESSAGE_BYTES_LIMIT}, not {shown(size)}")

    @property
    def max_command_bytes(self) -> int:
        """The largest command (one entry's batch)."""
        return command_limit(self.max_message_bytes)
