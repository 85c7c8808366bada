"""The member's budget of bytes held in client frames still arriving.

A member reads a client frame of up to ``max_request_bytes`` (about 1.1 MB) as its bytes
come; a frame half-read holds memory, and many links each trickling one would hold
gigabytes. All client links of a member share one :class:`~lazily_transports.FrameBudget`
of ``client_frame_budget`` bytes (:data:`DEFAULT_CLIENT_FRAME_BUDGET`; the top-level key
of the configuration, ``ClientAccess(frame_budget=)``): a frame whose announced size does
not fit waits, its link read no further, until earlier frames are whole (frames wait in
the order they came; one frame is always read when nothing else is held, so a budget
below ``max_request_bytes`` still lets every frame through, alone). A frame that waits
longer than the idle timeout (:mod:`.idle`) gets its link closed with the refusal
``[0, ERROR, ["frame_budget", message]]`` (the client raises
:class:`~.protocol.FrameBudgetFull`). Links between members (Raft) are not counted.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from . import protocol as P

if TYPE_CHECKING:
    from .connection import ClientConnection

log = logging.getLogger(__name__)

#: Bytes of partly received client frames a member holds at most, unless configured.
DEFAULT_CLIENT_FRAME_BUDGET = 64 * 1024 * 1024
#: The wire code of a link closed because its frame waited too long for the budget.
FRAME_BUDGET = "frame_budget"


def refuse_waiting(conn: ClientConnection, member: str, budget: int, waited: float) -> None:
    """Close ``conn``, whose frame waited ``waited`` seconds for room in ``member``'s
    budget of ``budget`` bytes, its refusal sent first (when its send buffer has room)."""
    message = (
        f"member {member} held its client_frame_budget of {budget} bytes in frames of other "
        f"links still arriving for {waited:.0f} s, so a frame of this link was not read: send "
        "smaller requests, link to another member, or raise client_frame_budget in its "
        "configuration (ClientAccess(frame_budget=)); nothing in that frame was applied")
    log.warning("client %r: link closed, its frame waited %.0f s for room in the "
                "client_frame_budget (%d bytes)", conn.grant.name, waited, budget)
    channel = conn.outbox.stream.channel
    try:
        channel.send_nowait(P.encode([0, P.ERROR, [FRAME_BUDGET, message]]))
        channel.flush()
    except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    conn.close()
