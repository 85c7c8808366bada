"""A member greeting a client: its hello answered (:func:`hello`), the session it names
(:func:`session_of`), and registering one: ``[id, REGISTER, timeout_ms]`` (protocol 5) proposes
``SESSION_REGISTER`` with the client's owner tag and a random nonce as the member's own op
(:mod:`..replicated.session_register`) and answers the new session id once it applied;
the link's ops go under that id from then on (a later link names it in its hello). A
link registers one session at a time: a REGISTER while one is unanswered, or once the
link has a session the cluster still holds (none of its ops was refused as
``session_unknown`` since), is refused. A
session registered for a link that closed before its answer, or after its answer was
its deadline's error (the proposal is kept until it applies), is ended at once: no
client learned its id."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..replicated import ops
from ..replicated.client_sessions import CLIENT_SESSION_BASE, OWNER_SHIFT, owner_of, owner_tag
from ..replicated.ops import OpError
from ..replicated.session_register import REGISTERED_BASE, nonce
from . import protocol as P
from .connection import ClientConnection

if TYPE_CHECKING:
    from .request_serving import RequestServing

log = logging.getLogger(__name__)

#: How a proposal's outcome is answered: ``(conn, rid, result, error)``.
Answering = Callable[[ClientConnection, int, Any, BaseException | None], None]


def register(server: RequestServing, conn: ClientConnection, rid: int,
             frame: list[Any]) -> bool:
    """Serve one ``REGISTER``; True when its answer will release its slots later."""
    if not conn.greeted or conn.protocol < 5:
        raise P.RequestRefused("REGISTER follows a HELLO of client protocol 5 or newer")
    if len(frame) != 3:
        raise P.RequestRefused("a register is [id, REGISTER, timeout_ms]")
    timeout = server.timeout(frame[2])
    if conn.registering or (conn.session is not None and not conn.session_lost):
        raise P.RequestRefused(
            "this link " + ("is registering a session already" if conn.registering else
                            f"has session {conn.session}, none of whose ops was "
                            "refused as not held")
            + ": a link registers one session at a time, and another only once the "
            "cluster refused an op of its session as not held (session_unknown); send "
            "REGISTER again after that answer, or open another link")

    def answer(conn: ClientConnection, rid: int, result: Any,
               error: BaseException | None) -> None:
        conn.registering = False
        if error is None and isinstance(result, OpError):
            error = P.RequestRefused(f"session_register: {result.message}")
        elif error is None and type(result) is int:
            if conn.closed:
                _end_unclaimed(server, result, timeout)
            else:
                conn.session = result
        server._answer(conn, rid, result, error)

    def late(result: Any) -> None:  # answered with its deadline's error, applied after
        if type(result) is int:
            _end_unclaimed(server, result, timeout)

    conn.registering, conn.session_lost = True, False
    if server._propose(conn, rid, ops.SESSION_REGISTER,
                       [owner_tag(conn.grant.name), nonce()], timeout, answer, on_orphan=late):
        return True
    conn.registering = False  # refused before it was proposed
    return False


def _end_unclaimed(server: RequestServing, sid: int, timeout: float) -> None:
    """End session ``sid``, registered for a link that closed before its answer: no
    client learned the id, so none will use it (its client registers another at its
    next link), and the cluster need not hold it until it has been idle for an hour. Its
    first op is the end, so no result of it is kept for a client to be answered."""
    driver = server.node.driver
    try:
        driver.replica.propose(ops.CLIENT_OP, [sid, 1, 1, ops.SESSION_END], timeout=timeout,
                               on_done=lambda result, error: None)
    except Exception:  # not running: the session expires as an idle one
        log.info("could not end the unclaimed client session %d", sid, exc_info=True)
        return
    driver.wake()


def hello(server: RequestServing, conn: ClientConnection, rid: int, frame: list[Any]) -> None:
    """Serve one ``HELLO``: the link takes the session it names (a hello naming none
    keeps one registered on it) and is answered the member's features and request limit;
    raises :class:`~.protocol.RequestRefused`, remembered as the reason to refuse the
    link's later ops."""
    try:
        session = session_of(conn, frame)
    except P.RequestRefused as exc:
        conn.hello_refused = str(exc)
        raise
    if session is not None:  # a later hello naming none keeps one registered here
        conn.session = session
    conn.protocol = frame[2]
    conn.greeted = True
    node = server.node
    conn.send([rid, P.OK, {"node": node.node_id, "cluster": node.cluster,
                           "leader": node.leader_id, "features": list(P.FEATURES),
                           "max_request_bytes": server.max_request_bytes}])


def session_of(conn: ClientConnection, frame: list[Any]) -> int | None:
    """The session a hello names (``None``: none registered yet); raises
    :class:`~.protocol.RequestRefused`."""
    if len(frame) != 4:
        raise P.RequestRefused(f"hello must be [id, HELLO, {P.VERSION}, session]")
    if type(frame[2]) is not int or frame[2] not in P.SERVED_VERSIONS:
        fix = ("upgrade the client to the members' lazily-queue version"
               if type(frame[2]) is int and frame[2] < min(P.SERVED_VERSIONS) else
               "upgrade the members to the client's lazily-queue version or a newer one "
               "(members serve clients of their version and older ones)")
        raise P.RequestRefused(
            f"this member speaks client protocols {list(P.SERVED_VERSIONS)}, the client "
            f"{frame[2]!r}: {fix}")
    session = frame[3]
    if frame[2] >= 5 and session == 0:
        return None  # it registers one (REGISTER)
    top = 2**64 if frame[2] >= 5 else REGISTERED_BASE  # older clients choose random ids
    if type(session) is not int or not CLIENT_SESSION_BASE < session < top:
        raise P.RequestRefused(f"a client session id is an int in ({CLIENT_SESSION_BASE}, "
                               f"{top}), or 0 for none yet (protocol 5)")
    name = conn.grant.name
    if owner_of(session) != owner_tag(name):
        raise P.RequestRefused(
            f"session id {session} is not tagged as client {name!r}'s (its bits "
            f"{OWNER_SHIFT}-{OWNER_SHIFT + 15} must be {owner_tag(name)}); a client makes "
            "its session ids with lazily_queue.connect")
    return session
