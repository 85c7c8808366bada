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
from typing import TYPE_CHECKING, Any

import anyio
from lazily_transports import (
    ChannelHandler,
    CredentialLookup,
    FrameBudget,
    LinkAttribute,
    LinkStream,
)

from ..errors import InvalidConfiguration
from . import protocol as P
from .access import ClientAccess, ClientGrant
from .connection import MAX_QUEUED_ANSWERS, ClientConnection
from .fair import OpScheduler, fair_budget, fair_window
from .fair_budget import FairBudget
from .frame_budget import refuse_waiting
from .frame_decoding import FrameDecoder, dropped, request_limit
from .frames_in_hand import IN_HAND_FRAMES, FramesInHand
from .group_names import group_topics
from .idle import IdleLinks
from .link_caps import LinkCaps, client_share, fd_room
from .link_log import link_ended
from .listening import listen_for_clients
from .liveness import ClientLiveness
from .outbox import AnswerBudget
from .popped import Giving
from .request_serving import RequestServing
from .token_use import PreviousTokens
from .watchers import Watchers

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from ..node import Node

#: Requests of one frame served before the loop runs its other work (Raft ticks first).
YIELD_EVERY = 32
#: Ops of one frame read across yields before they are proposed (the rest of the frame's
#: go at its end): fewer, larger proposals, each at most this many ops.
GROUP_OPS = 256


class ClientServer(RequestServing):
    """Serves the clients of one member (module docstring; its requests: the mixin
    :class:`~.request_serving.RequestServing`)."""

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
