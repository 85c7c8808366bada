"""EngineConfig: a Raft member's timing and compaction settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineConfig:
    """Raft timing and compaction settings (seconds, entries, bytes)."""

    election_timeout_min: float = 0.3
    election_timeout_max: float = 0.6
    heartbeat_interval: float = 0.05
    leader_fallback_timeout: float = 1.0
    compaction_min_entries: int = 4000
    compaction_min_time: float = 60.0
    #: Compact once the log holds this many bytes, or more than the last snapshot.
    compaction_log_bytes: int = 4 * 1024 * 1024
    snapshot_chunk_bytes: int = 48 * 1024
    append_batch_bytes: int = 512 * 1024

    def __post_init__(self) -> None:
        if not 0 < self.heartbeat_interval * 3 < self.election_timeout_min:
            raise ValueError("election_timeout_min must exceed 3 heartbeat intervals")
        if self.election_timeout_max <= self.election_timeout_min:
            raise ValueError("election_timeout_max must exceed election_timeout_min")
        if self.leader_fallback_timeout <= self.heartbeat_interval:
            raise ValueError("leader_fallback_timeout must exceed heartbeat_interval")
        if self.compaction_min_entries < 2:
            raise ValueError("compaction_min_entries must be >= 2")
        if not self.compaction_min_time > 0:
            raise ValueError("compaction_min_time must be a number of seconds > 0")
        if self.compaction_log_bytes < 1:
            raise ValueError("compaction_log_bytes must be >= 1")
