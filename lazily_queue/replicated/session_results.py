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
    #: What each client op kept in ``done`` with a list for result (a pop's, say) was:
    #: ``(code, first argument)``, read only for a seq in ``done`` (entries of forgotten
    #: seqs go in batches, see :meth:`keep_op`). Only what this replica applied itself
    #: (not in snapshots): a seq applied again as another op is refused rather than
    #: answered with the first op's result, which a member would take as its own.
    ops: dict[int, tuple[int, Any]] = field(default_factory=dict, compare=False, repr=False)

    def keep(self, seq: int, result: Any) -> None:
        self.done[seq] = result
        if seq < self.low:
            self.low = seq

    def keep_op(self, seq: int, op: tuple[int, Any]) -> None:
        """Note what the op kept under ``seq`` was (after :meth:`keep`)."""
        ops = self.ops
        ops[seq] = op
        if len(ops) > 2 * len(self.done) + 64:
            done = self.done
            self.ops = {s: o for s, o in ops.items() if s in done}

    def move_floor(self, floor: int) -> None:
        """Raise the floor to ``floor``, forgetting every kept result below it (by the
        seqs between ``low`` and it when they are fewer than those kept)."""
        self.floor = floor
        done = self.done
        if floor - self.low < len(done):
            for seq in range(self.low, floor):
                done.pop(seq, None)
        else:
            for seq in [s for s in done if s < floor]:
                del done[seq]
        self.low = floor


SEQ_REUSED = OpError("seq_reused", "this sequence number of the session was used by another "
                     "op; nothing was applied (a client gives each op its own)")


def identity(op: list[Any]) -> tuple[int, Any]:
    """What client op ``[seq, code, *args]`` is, enough to tell a retry from another op
    under its seq: its code and first argument (when a name or a number)."""
    first = op[2] if len(op) > 2 else None
    return op[1], first if type(first) is str or type(first) is int else None
