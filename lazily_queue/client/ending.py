"""A client closing cleanly ends its session: its last op, ``SESSION_END``, drops the
session from the cluster's table of sessions with the results it keeps and the
ephemeral subscriptions it owns (:mod:`..replicated.session_end`), rather than leaving
it there until it has been idle for an hour.

It is best effort: a member of a version that does not take it (no
:data:`~.protocol.SESSION_END_FEATURE`), no link, or no answer within
:data:`~.ephemeral.END_TIMEOUT` seconds leaves the session to expire as an idle one.
"""

from __future__ import annotations

from ..replicated import ops
from . import protocol as P
from .ephemeral import END_TIMEOUT
from .link import Link
from .session import Session


async def end_session(session: Session, link: Link | None, op_timeout: float) -> bool:
    """Propose ``SESSION_END`` in ``session`` through ``link`` (within
    :data:`END_TIMEOUT`, or ``op_timeout`` when shorter); whether it applied. A failure
    is let go (the client is closing)."""
    if link is None or P.SESSION_END_FEATURE not in link.features or not session.proposed:
        return False
    try:
        result = await session.call(ops.SESSION_END, [], timeout=min(op_timeout, END_TIMEOUT))
    except Exception:
        return False
    return result is None
