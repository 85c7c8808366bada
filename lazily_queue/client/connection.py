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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lazily_transports import LinkStream

from ..replicated import ops as C
from . import protocol as P
from .access import READ, ClientGrant
from .batching import PendingOp
from .budget import Budget
from .outbox import Outbox

if TYPE_CHECKING:
    from ..replicated.view import ReadView

log = logging.getLogger(__name__)

#: Answers and notifications queued for one client before it is disconnected.
MAX_OUTBOX_BYTES = 64 * 1024 * 1024
_REFUSALS_CACHED = 1024

GroupTopics = Callable[[str, bool], list[str]]
"""The topics work queue ``name`` may be the consumer group of (as the member's state
has it; with the flag, by its form while no object has the name)."""


def group_topics(view: ReadView, name: str, undeclared: bool) -> list[str]:
    """The topic whose consumer group work queue ``name`` is in ``view``; while no object
    has the name and ``undeclared``, each topic it names by its form."""
    state = view.work_queue(name)
    if state is not None:
        return [] if state.group is None else [state.group[0]]
    if not undeclared:
        return []
    return [name[:i] for i in range(1, len(name) - 1) if name[i] == ":"]


class ClientConnection:
    """One client link: its session, permissions, watches and outgoing frames."""

    def __init__(self, stream: LinkStream, grant: ClientGrant, max_in_flight: int,
                 group_topics: GroupTopics = lambda name, undeclared: []) -> None:
        self.grant = grant
        self._group_topics = group_topics
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
        found = self.refusals[key]
        if found is not None and type(name) is str and C.family_of(code) == "work_queue":
            return self._as_group(code, name, found, undeclared=False)
        return found

    def read_refusal(self, kind: str, name: str) -> str | None:
        """Why this client may not read (mirror) the ``kind`` object ``name``."""
        found = self.refusal(READ, name)
        if found is not None and kind == "work_queue":
            return self._as_group(READ, name, found, undeclared=True)
        return found

    def _as_group(self, code: int, name: str, found: str, *, undeclared: bool) -> str | None:
        """A consumer group's work queue is consumed (and read) with the consume
        permission on its topic's name; ``found`` when that does not open it either."""
        topics = self._group_topics(name, undeclared)
        asked = C.WORK_CLAIM if code == READ else code
        if any(self.grant.refusal(asked, topic) is None for topic in topics):
            return None
        if not topics:
            return found
        return (f"{found} (as consumer group {name!r} it needs the consume permission on "
                f"topic {topics[0]!r})")

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
