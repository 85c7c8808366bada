"""Session: what the state machine keeps of one proposer's session, so that an op
retried under its sequence number is applied once and answered with its kept result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .ops import OpError


@dataclass
class Session:
    floor: int = 0
    done: dict[int, Any] = field(default_factory=dict)
    seen: int = 0
    #: No seq in ``done`` is below this.
    low: int = 0
    #: What each client op kept in ``done`` was: ``(code, first argument)``. Only what
    #: this replica applied itself (not in snapshots): a seq applied again as another op
    #: is refused rather than answered with the first op's result.
    ops: dict[int, tuple[int, Any]] = field(default_factory=dict, compare=False, repr=False)

    def keep(self, seq: int, result: Any) -> None:
        self.done[seq] = result
        if seq < self.low:
            self.low = seq

    def move_floor(self, floor: int) -> None:
        """Raise the floor to ``floor``, forgetting every kept result below it (by the
        seqs between ``low`` and it when they are fewer than those kept)."""
        self.floor = floor
        done, ops = self.done, self.ops
        if floor - self.low < len(done):
            for seq in range(self.low, floor):
                done.pop(seq, None)
                ops.pop(seq, None)
        else:
            for seq in [s for s in done if s < floor]:
                del done[seq]
                ops.pop(seq, None)
        self.low = floor


SEQ_REUSED = OpError("seq_reused", "this sequence number of the session was used by another "
                     "op; nothing was applied (a client gives each op its own)")


def identity(code: int, args: list[Any]) -> tuple[int, Any]:
    """What a client op is, enough to tell a retry from another op under its seq."""
    first = args[0] if args else None
    return code, first if isinstance(first, (str, int)) else None
