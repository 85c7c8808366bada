"""ClientServer: a member serving clients (processes that are not voting members).

A client links to the member's listen address (or the ``listen`` of its
:class:`~.access.ClientAccess`) with its own credential; the link never reaches Raft.
Each request is read with the bounded decoder (:mod:`.protocol`), checked against the
client's permissions and, for an op, proposed through the member's driver under the
client's session (the ops of one frame together as ``CLIENT_OPS``, see
:mod:`.batching`; an op alone as ``CLIENT_OP``), so it is forwarded to the leader as
the member's own proposals are and applies at most once however often it is retried.
Each op is answered once it applied here. Mirrors: a client watching an object gets
its state as applied here, then every op applied to it (the state machine's tap), in
apply order and before the answers of the same step, so what a client reads after an
answer includes that answer's op.

Back-pressure: a client has at most ``max_in_flight`` requests being served and all
clients together ``max_total_in_flight``; beyond that the member stops reading their
links, and a frame's requests are served :data:`YIELD_EVERY` at a time between the
loop's other work, so a flood of clients cannot starve replication or heartbeats; a
client's links hold few frames decoded at once (:mod:`.frames_in_hand`).
Fairness (:mod:`.fair`): a freed slot goes to the waiting client holding the fewest,
and the ops read wait in per-client lanes, proposed (a frame's together, at most
:data:`GROUP_OPS` per proposal) a window at a time, lightest client first, so a light
client is not queued behind a greedy one. A client that does not read its answers
(:data:`~.connection.MAX_OUTBOX_BYTES` queued) is disconnected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from lazily_transports import (
    ChannelHandler,
    CredentialLookup,
    FrameBudget,
    LinkAttribute,
    LinkStream,
)

from ..errors import InvalidConfiguration, MessageTooLarge, TooManyObjects, TooManySubscribers
from ..replicated import ops
from ..replicated.results import encode_result
from ..replicated.session_popped import REFUSED as GIVE_BACK_REFUSED
from ..replicated.session_register import UNKNOWN
from . import protocol as P
from .access import ClientAccess, ClientGrant
from .batching import PendingOp
from .connection import MAX_QUEUED_ANSWERS, ClientConnection
from .fair import OpScheduler, fair_budget, fair_window
from .fair_budget import FairBudget
from .frame_budget import refuse_waiting
from .frame_decoding import FrameDecoder, dropped, request_limit
from .frames_in_hand import IN_HAND_FRAMES, FramesInHand
from .greeting import Answering, hello, register
from .group_names import group_topics
from .idle import IdleLinks
from .link_caps import LinkCaps, client_share, fd_room
from .link_log import link_ended, unreadable_frame
from .listening import listen_for_clients
from .liveness import ClientLiveness
from .op_admission import admitted_op, timeout_of
from .outbox import AnswerBudget
from .ping import ping_answer
from .popped import Giving
from .token_use import PreviousTokens
from .watchers import Watchers

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from ..node import Node

log = logging.getLogger(__name__)

#: Requests of one frame served before the loop runs its other work (Raft ticks first).
YIELD_EVERY = 32
#: Ops of one frame read across yields before they are proposed (the rest of the frame's
#: go at its end): fewer, larger proposals, each at most this many ops.
GROUP_OPS = 256


class ClientServer:
    """Serves the clients of one member (module docstring)."""

    def __init__(self, node: Node, access: ClientAccess, *, on_listen: bool = True) -> None:
        """Serve ``node``'s clients; ``on_listen`` says whether its listen address can
        (its default network), needed when the access has no address of its own."""
        if access.listen is None and not (on_listen and node.listen):
            raise InvalidConfiguration(
                f"node {node.node_id}: clients are served on the listen address only over "
                "the default network; give the ClientAccess an address of its own (listen=)"
            )
        self.node = node
        self.access = access
        #: Largest frame of requests read (a batch of them, or one op of the largest
        #: command this member accepts); client links are capped at it.
        self.max_request_bytes = request_limit(node.max_message_bytes)
        self.decoder = FrameDecoder(self.max_request_bytes, f"client-frames-{node.node_id}")
        #: Bytes of frames each client's links hold decoded (:mod:`.frames_in_hand`).
        self.in_hand = FramesInHand(IN_HAND_FRAMES * self.max_request_bytes)
        self._conns: set[ClientConnection] = set()
        #: The links open per client and in all, against their caps (:mod:`.link_caps`).
        self.links = LinkCaps(node.node_id, access.max_links, fd_room(), len(access.grants))
        self.previous_tokens = PreviousTokens(node.node_id)
        #: Closes client links gone silent (:mod:`.idle`).
        self.idle = IdleLinks(self._conns, refuse_waiting=lambda conn, waited: refuse_waiting(
            conn, node.node_id, self.frame_budget, waited))
        #: Bytes of client frames still arriving, shared by all links (:mod:`.frame_budget`).
        self.frame_budget = FrameBudget(
            access.frame_budget, share=client_share(access.frame_budget, len(access.grants)))
        #: Says which linked clients own ephemeral subscriptions (:mod:`.liveness`).
        self.liveness = ClientLiveness(node, self._conns)
        self._watchers = Watchers(lambda: node.view)
        self._giving = Giving()
        #: The bytes queued to all client links, held within a bound (:mod:`.outbox`).
        self.answers = AnswerBudget(MAX_QUEUED_ANSWERS)
        node.add_event_observer(self._watchers.on_events)
        #: The objects some client watches (the state machine's tap).
        self.watched = self._watchers.by_key.keys()
        self._slots = FairBudget(access.max_total_in_flight, **fair_budget(access))
        window = fair_window(access, fsync=lambda: node.driver.fsync.policy.last)
        self._fair = OpScheduler(node, **window,
                                 answer=lambda *a: self._answer_op(*a),
                                 fail=lambda *a: self._fail(*a), release=lambda c: self._release(c))
        self._listeners: list[AbstractAsyncContextManager[Any]] = []
        #: Where clients reach this member.
        self.addresses: list[str] = []
        self.requests = 0
        self.refused = 0

    # -- lifecycle ----------------------------------------------------------------------

    def on_listen_address(self) -> tuple[CredentialLookup, ChannelHandler] | None:
        """What the node's mesh needs to hand client links here (``None`` when clients
        have addresses of their own)."""
        return (self.access.credential, self.serve) if self.access.listen is None else None

    async def start(self) -> None:
        """Listen on the access's own addresses, if it has them (else the node's mesh
        listener hands client links to :meth:`serve`)."""
        self.addresses = []
        self.idle.start()
        self.liveness.start()
        if self.access.listen is None:
            bound = getattr(self.node.driver.network, "listen_address", None) or self.node.listen
            self.addresses = [] if bound is None else [bound]
            return
        try:
            await listen_for_clients(self.node, self.access, self.access.listen,
                                     self.max_request_bytes, self.serve, self._listeners,
                                     self.addresses)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        await self.idle.stop()
        await self.liveness.stop()
        self.decoder.close()
        for conn in list(self._conns):
            conn.close()
        listeners, self._listeners = self._listeners, []
        for context in listeners:
            await context.__aexit__(None, None, None)

    def stats(self) -> dict[str, Any]:
        """Connected clients, requests served and refused, requests in flight now and
        the ops proposed at most at once (:mod:`.proposal_window`), links closed for their
        silence (:mod:`.idle`), refused over a cap (:mod:`.link_caps`), frames waiting,
        links per client proven with its previous token (:mod:`.token_use`)."""
        return {"addresses": list(self.addresses), "connections": len(self._conns),
                "requests": self.requests, "refused": self.refused,
                "idle_closed": self.idle.closed, "links_refused": self.links.refused,
                "answers_queued": self.answers.held, "answers_closed": self.answers.closed,
                "frame_budget_held": self.frame_budget.held, "frame_budget_waiting":
                self.frame_budget.waiting, "frame_budget_closed": self.idle.budget_closed,
                "frames_waiting": self.in_hand.waiting, "in_flight": self._slots.used,
                "waiting": self._fair.waiting, "window": self._fair.window,
                "watched": len(self._watchers.by_key),
                "previous_token_links": dict(self.previous_tokens.links)}

    # -- a client link -----------------------------------------------------------------------

    async def serve(self, stream: LinkStream) -> None:
        """Serve one authenticated client link until it closes."""
        name = stream.extra(LinkAttribute.credential, None)
        grant = None if name is None else self.access.grants.get(name)
        if grant is None:
            return
        stream.channel.owner_reports_breaks()  # :mod:`.link_log` says how the link ended
        refusal = self.links.admit(grant.name, grant.max_links)
        if refusal is not None:
            await self.links.refuse(stream, refusal)
            return
        stream.channel.use_frame_budget(self.frame_budget, grant.name)
        self.previous_tokens.seen(stream, grant.name)
        try:
            await self._serve(stream, grant)
        finally:
            self.links.release(grant.name)

    async def _serve(self, stream: LinkStream, grant: ClientGrant) -> None:
        conn = ClientConnection(stream, grant, self.access.max_in_flight,
                                lambda name, form: group_topics(self.node.view, name, form),
                                self._giving, self.answers)
        self._conns.add(conn)
        loop = asyncio.get_running_loop()
        wait_ended = stream.channel.wait_ended
        ended: BaseException | None = None
        request: list[Any] | None = None
        held = 0  # bytes of the frame in hand
        try:
            while not conn.closed:
                data = await stream.receive()
                if not await self.in_hand.take(conn, len(data), wait_ended):  # room first
                    ended = dropped(stream)
                    break
                held = len(data)
                if conn.closed:  # refused meanwhile: no frame after its refusal is read
                    break
                conn.frames_read += 1
                conn.heard = loop.time()
                conn.framed = stream.channel.received_bytes
                frame = await self.decoder.decode(data, grant.name, wait_ended)  # in turns
                if frame is None:  # the link ended while the frame waited
                    ended = dropped(stream)
                    break
                for k, request in enumerate(self._requests(conn, frame, data)):
                    if k and not k % YIELD_EVERY:
                        await asyncio.sleep(0)  # heartbeats and other links go first
                    if request[1] == P.WATCH and conn.outbox.oversized:
                        self._flush_ops(conn)  # ops waiting here must not hold their slots
                        conn.blocked = True
                        await conn.outbox.oversized_sent()  # one state at a time
                        conn.blocked = False
                        if conn.closed:
                            break
                    if not (conn.slots.ready and self._slots.ready):
                        self._flush_ops(conn)  # ops waiting here must not hold their slots
                        conn.blocked = True
                        await conn.slots.take()
                        await self._slots.take(conn.slots.used - 1)
                        conn.blocked = False
                    else:  # both free: taken without a suspension
                        conn.slots.free -= 1
                        self._slots.free -= 1
                    self.requests += 1
                    if not self._handle(conn, request):
                        self._release(conn)
                    elif len(conn.ops) >= GROUP_OPS:
                        self._flush_ops(conn)
                self._flush_ops(conn)
                if self.node.driver.step_if_idle():
                    conn.flush()  # the answers of what that step applied leave now
                # a link waiting for its next frame holds nothing of this one: its values,
                # built, can take tens of times its bytes (0.56 MB of decimals, 15 MB)
                data, frame, request = b"", None, None
                self.in_hand.give(grant.name, held)
                held = 0
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            ended = exc
        finally:
            self.in_hand.give(grant.name, held)
            link_ended(conn, stream.channel, ended)
            conn.close()
            self._conns.discard(conn)
            unproposed, conn.ops = conn.ops, []  # read when the task was cancelled
            for _ in unproposed:
                self._release(conn)
            self._fair.drop(conn)
            for key in list(conn.watches):
                self._watchers.drop(conn, key)
            await conn.outbox.wait_closed()

    def _release(self, conn: ClientConnection) -> None:
        conn.slots.give()
        self._slots.give()

    def _refuse(self, conn: ClientConnection, rid: int, code: str, message: str) -> None:
        self.refused += 1
        conn.send([rid, P.ERROR, [code, message]])

    def _fail(self, conn: ClientConnection, rid: int, error: BaseException) -> None:
        self.refused += 1
        conn.send([rid, P.ERROR, P.error_payload(error)])

    def _requests(self, conn: ClientConnection, frame: list[Any] | P.RequestRefused,
                  data: bytes) -> list[list[Any]]:
        """The requests of one frame (one, or a batch); refuses an unreadable frame
        (``data``), answering the request it starts with when its first bytes name one."""
        if isinstance(frame, P.RequestRefused):
            unreadable_frame(conn, str(frame))
            self._refuse(conn, P.request_id(data), "refused",
                         f"{frame}; nothing in it was applied")
            return []
        if frame[0] != 0 or frame[1] != P.BATCH:
            return [frame]
        items = frame[2] if len(frame) == 3 and isinstance(frame[2], list) else None
        if items is None or not all(isinstance(item, list) and len(item) >= 2
                                    and type(item[0]) is int and type(item[1]) is int
                                    for item in items):
            self._refuse(conn, 0, "refused", "a batch is [0, BATCH, [[id, kind, ...], ...]]; "
                         "nothing in it was applied")
            return []
        return items

    def _handle(self, conn: ClientConnection, frame: list[Any]) -> bool:
        """Serve one request; True when an answer will release its slots later."""
        rid, kind = frame[0], frame[1]
        if rid == 0 or kind not in P.REQUESTS:
            self._refuse(conn, rid, "refused", f"unknown request kind {kind} (or id 0)")
            return False
        try:
            if kind == P.OP:
                return self._op(conn, rid, frame)
            self._flush_ops(conn)  # in order: the ops read before this request go first
            if kind == P.HELLO:
                self._hello(conn, rid, frame)
            elif kind == P.WATCH:
                self._watchers.watch(conn, rid, frame)
            elif kind == P.UNWATCH:
                self._watchers.unwatch(conn, rid, frame)
            elif kind == P.BARRIER:
                return self._barrier(conn, rid, frame)
            elif kind == P.REGISTER:
                return register(self, conn, rid, frame)
            else:
                conn.send([rid, P.OK, ping_answer(self.node)])
        except (P.ClientError, MessageTooLarge, TooManyObjects, TooManySubscribers) as exc:
            self._fail(conn, rid, exc)
        except Exception as exc:  # a request no check foresaw: refused, its slots given back
            log.exception("client %r: request %d failed", conn.grant.name, rid)
            self._fail(conn, rid, P.RequestRefused(
                f"the member could not serve this request ({type(exc).__name__}); nothing "
                "was applied"))
        return False

    # -- requests ------------------------------------------------------------------------------

    def _hello(self, conn: ClientConnection, rid: int, frame: list[Any]) -> None:
        hello(self, conn, rid, frame)  # :func:`.greeting.hello`

    def timeout(self, value: Any) -> float:
        """Seconds of a request's ``timeout_ms`` (:func:`.op_admission.timeout_of`)."""
        return timeout_of(value)

    def _op(self, conn: ClientConnection, rid: int, frame: list[Any]) -> bool:
        conn.ops.append(admitted_op(self.node, conn, rid, frame))  # :mod:`.op_admission`
        return True

    def _flush_ops(self, conn: ClientConnection) -> None:
        """Hand the ops read so far to the scheduler (:mod:`.fair`)."""
        pending, conn.ops = conn.ops, []
        if pending and conn.session is not None:
            self._fair.add(conn, conn.session, pending)

    def _propose(self, conn: ClientConnection, rid: int, code: int, args: list[Any],
                 timeout: float, answer: Answering | None = None,
                 on_orphan: Callable[[Any], None] | None = None) -> bool:
        """Propose through the member's replica; the answer goes out once it applied
        (``answer``: :meth:`_answer` or one in its place). With ``on_orphan``, a
        proposal whose deadline passed while it may still apply is kept, and its late
        result goes there (its answer was the deadline's error)."""
        driver = self.node.driver
        reply = self._answer if answer is None else answer
        try:
            if not driver.running or driver.disk_error is not None:
                driver.propose(code, args, timeout=timeout)  # raises why it cannot
            driver.replica.propose(code, args, timeout=timeout,
                                   on_done=lambda result, error: reply(
                                       conn, rid, result, error), on_orphan=on_orphan)
        except Exception as exc:  # not running, no disk, a value replicas would refuse
            self._fail(conn, rid, exc)
            return False
        driver.wake()
        return True

    def _barrier(self, conn: ClientConnection, rid: int, frame: list[Any]) -> bool:
        if len(frame) != 3:
            raise P.RequestRefused("a barrier is [id, BARRIER, timeout_ms]")
        timeout = self.timeout(frame[2])

        def propose() -> None:
            if not self._propose(conn, rid, ops.BARRIER, [], timeout):
                self._release(conn)

        return self._fair.after(conn, propose, lambda: self._release(conn)) or \
            self._propose(conn, rid, ops.BARRIER, [], timeout)

    def _answer_op(self, conn: ClientConnection, op: PendingOp, result: Any,
                   error: BaseException | None) -> None:
        if type(result) is ops.OpError:
            if result.code == UNKNOWN.code:
                conn.session_lost = True  # the link may register another (:mod:`.greeting`)
            elif result.code == GIVE_BACK_REFUSED:  # as it applied (:mod:`.popped`)
                result, error = None, P.PermissionDenied(result.message)
        self._answer(conn, op.rid, result, error)

    def _answer(self, conn: ClientConnection, rid: int, result: Any,
                error: BaseException | None) -> None:
        self._release(conn)
        if error is not None:
            conn.send_answer([rid, P.ERROR, P.error_payload(error)])
        else:
            conn.send_answer([rid, P.OK, encode_result(result)])
