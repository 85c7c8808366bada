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
``[0, ERROR, ["frame_budget", message, frames_read]]``: the member read the link's first
``frames_read`` frames and none after them (the waiting frame was refused at its
header), so no op of the later ones applied: the client sends them again on its next
link as never sent (one failing at its timeout, :class:`~.protocol.FrameBudgetFull`,
says ``applied`` False unless another attempt may have applied). A member serving more
than one client name gives each a share: the frames of one name's links hold at most a
quarter of the budget (:func:`~.link_caps.client_share`; one frame whatever its size
when that name holds nothing), and a frame waiting for its own name's share lets the
frames of other names pass, so one client trickling large frames on all its links
leaves room for the others. ``ws://`` and ``wss://`` links are counted from a frame's
header on, as the others from its length prefix (a message sent in WebSocket fragments
reserves the largest request). Links between members (Raft) are not counted.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from lazily_transports import FrameBudget

from . import protocol as P

if TYPE_CHECKING:
    from .connection import ClientConnection

log = logging.getLogger(__name__)

#: Bytes of partly received client frames a member holds at most, unless configured.
DEFAULT_CLIENT_FRAME_BUDGET = 64 * 1024 * 1024
#: The wire code of a link closed because its frame waited too long for the budget.
FRAME_BUDGET = "frame_budget"


def refuse_waiting(conn: ClientConnection, member: str, budget: FrameBudget,
                   waited: float) -> None:
    """Close ``conn``, whose frame waited ``waited`` seconds for room in ``member``'s
    ``budget``, its refusal sent first (when its send buffer has room)."""
    name = conn.grant.name
    own = budget.held_by(name)
    share = (f" ({own} of them client {name!r}'s own, which may hold {budget.share} while "
             "the member serves other clients too)" if budget.share < budget.limit else "")
    message = (
        f"member {member} held {budget.held} bytes of its client_frame_budget of "
        f"{budget.limit} in frames of other links still arriving{share} for {waited:.0f} s, "
        "so a frame of this link was not read: send smaller requests or fewer at once, "
        "link to another member, or raise client_frame_budget in its configuration "
        "(ClientAccess(frame_budget=)); nothing in that frame or after it was applied")
    log.warning("client %r: link closed, its frame waited %.0f s for room in the "
                "client_frame_budget (%d bytes, %d held, %d by this client)", name, waited,
                budget.limit, budget.held, own)
    channel = conn.outbox.stream.channel
    try:
        channel.send_nowait(P.encode([0, P.ERROR, [FRAME_BUDGET, message,
                                                   conn.frames_read]]))
        channel.flush()
    except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    conn.close()
