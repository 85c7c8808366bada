"""What a member logs about a client's link: one line when the client ends it, and when
it sends a frame the member cannot read.

A client going away (its process ended or was killed, its link reset) is normal: one
INFO line naming the client. A client breaking the protocol (a frame over its link's
limit, a message the link does not carry, a frame the member cannot decode) is one
WARNING naming it and the cause. A link the member closed itself (idle, over a budget,
not reading its answers, the member stopping) is told where it is closed, not here. The
transport logs none of these (:meth:`~lazily_transports.DataChannel.owner_reports_breaks`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from lazily_transports import DataChannel

    from .connection import ClientConnection

log = logging.getLogger(__name__)


def who(conn: ClientConnection) -> str:
    """The client of ``conn`` as a line names it (a link not yet greeted, with where it
    comes from)."""
    if conn.greeted:
        return f"client {conn.grant.name!r}"
    return f"an unregistered link of client {conn.grant.name!r} from {conn.address}"


def link_ended(conn: ClientConnection, channel: DataChannel,
               ended: BaseException | None) -> None:
    """Log how the client ended ``conn``'s link (``ended``: what reading it raised;
    ``None`` or a local close: the member ended it, and said why where it did)."""
    if ended is None or isinstance(ended, anyio.ClosedResourceError):
        return
    reason = channel.close_reason
    if isinstance(ended, anyio.EndOfStream) or reason is None:
        log.info("%s link closed (peer went away)", who(conn))
    elif channel.peer_broke_protocol:
        log.warning("%s link closed: the client broke the link protocol (%s)",
                    who(conn), reason)
    else:
        log.info("%s link closed (peer went away: %s)", who(conn), reason)


def unreadable_frame(conn: ClientConnection, refusal: str) -> None:
    """Log a frame of ``conn`` refused as unreadable: the link's first at WARNING, the
    later ones at DEBUG (a client sending only such frames does not fill the log)."""
    conn.unreadable += 1
    level = logging.WARNING if conn.unreadable == 1 else logging.DEBUG
    log.log(level, "%s sent a frame the member cannot read, refused: %s%s",
            who(conn), refusal,
            " (its link's later ones are logged at DEBUG)" if conn.unreadable == 1 else "")
