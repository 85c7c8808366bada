"""Why a member cannot commit while its peers are linked but say nothing.

A member whose journal cannot be written (a full or failing disk) drops the Raft traffic
it receives and sends none (:mod:`.disk_stall`), yet its links stay up: to the others it
looks alive, as it does across a partition that drops packets without closing links, or
when its process is frozen. When such silent members leave fewer than a majority
answering, a commit timeout is told so, naming them, with the likely causes and how to
check them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import RaftEngine


class Silence:
    """When a Raft frame last arrived from each peer, or its link came up (the driver
    writes :attr:`heard`)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.since = clock()
        #: Peer id -> the clock when its last Raft frame arrived.
        self.heard: dict[str, float] = {}

    def cause(self, engine: RaftEngine, window: float) -> str | None:
        """The members linked but silent for ``window`` seconds or more, when they leave
        fewer than a majority answering (this member included), as a sentence; ``None``
        when a leader is heard from or enough members answer."""
        if not engine.is_leader and engine.pre_vote.heard_within(window):
            return None
        now, since, heard = self._clock(), self.since, self.heard
        members, me, linked = engine.members, engine.node_id, engine.connected
        others = [m for m in members if m != me]
        silent = [m for m in others
                  if m in linked and now - heard.get(m, since) >= window]
        answering = 1 + sum(1 for m in others if m in linked and m not in silent)
        need = len(members) // 2 + 1
        if not silent or answering >= need:
            return None
        quiet = min(now - heard.get(m, since) for m in silent)
        names = ("member " if len(silent) == 1 else "members ") + ", ".join(silent)
        are = "is" if len(silent) == 1 else "are"
        return (f"{names} {are} linked to node {me} but sent no Raft message for "
                f"{quiet:.0f} s or more, so {answering} of {len(members)} members answer "
                f"and {need} are needed. A member falls silent so while it cannot write its "
                "journal (a full or failing disk): check their logs for \"cannot write its "
                "journal\" and `lazily-queue status` (disk); once their disks accept writes "
                "they resume by themselves. A network dropping their traffic without "
                "closing the links (a partition) or a frozen process looks the same: check "
                "that they run and that this member reaches them")
