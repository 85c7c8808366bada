"""One client's link as its member serves it: its session, permissions, watches, the
ops read but not yet proposed, and its outgoing frames (batched per loop iteration,
disconnected when it does not read them).

A batch of answers is handed to the connection as soon as it is encoded, not later in
the loop iteration: the answers of a commit leave before the commit index reaches the
followers, whose applying would otherwise take the CPU the client needs first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lazily_transports import LinkStream

from ..replicated import ops as C
from . import protocol as P
from .access import ClientGrant
from .batching import PendingOp
from .budget import Budget
from .outbox import Outbox

log = logging.getLogger(__name__)

#: Answers and notifications queued for one client before it is disconnected.
MAX_OUTBOX_BYTES = 64 * 1024 * 1024
_REFUSALS_CACHED = 1024


class ClientConnection:
    """One client link: its session, permissions, watches and outgoing frames."""

    def __init__(self, stream: LinkStream, grant: ClientGrant, max_in_flight: int) -> None:
        self.grant = grant
        self.session: int | None = None
        self.slots = Budget(max_in_flight)
        self.watches: set[tuple[str, str]] = set()
        self.replay: list[list[Any]] = []
        self.refusals: dict[tuple[int, Any], str | None] = {}
        self.outbox = Outbox(stream, limit=MAX_OUTBOX_BYTES, on_overflow=self._overflow)
        self._pending: list[list[Any]] = []
        #: Ops read and checked, proposed together at the next flush point.
        self.ops: list[PendingOp] = []

    @property
    def closed(self) -> bool:
        return self.outbox.closed

    def _overflow(self, queued: int) -> None:
        log.warning("client %r does not read its answers (%d bytes queued); disconnected",
                    self.grant.name, queued)

    def send(self, frame: list[Any]) -> None:
        """Queue ``frame``; the frames of one loop iteration leave as one batch."""
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(frame)

    def _flush(self) -> None:
        frames, self._pending = self._pending, []
        if not frames or self.closed:
            return
        frame = frames[0] if len(frames) == 1 else [0, P.BATCH, frames]
        for data in P.parts(P.encode(frame)):
            self.outbox.send(data)
        self.outbox.flush()

    def refusal(self, code: int, name: Any) -> str | None:
        key = (code, name)
        if key not in self.refusals:
            if len(self.refusals) > _REFUSALS_CACHED:
                self.refusals.clear()
            self.refusals[key] = self.grant.refusal(code, name)
        return self.refusals[key]

    def op_refusal(self, code: int, args: list[Any]) -> str | None:
        """Why this client may not propose op ``code`` with ``args``; ``None`` if it may.
        A transaction needs the permission of every op it carries."""
        if code != C.TXN:
            name = args[0] if C.family_of_op(code, args) is not None and args else None
            return self.refusal(code, name if isinstance(name, str) else None)
        for op in args:
            if type(op) is not list or len(op) < 2 or op[0] not in C.TXN_OPS:
                return ("a transaction carries queue and work-queue pushes, topic publishes, "
                        "acks and nacks, each [code, name, ...]")
            refusal = self.refusal(op[0], op[1] if isinstance(op[1], str) else None)
            if refusal is not None:
                return refusal
        return None

    def close(self) -> None:
        self.outbox.close()
