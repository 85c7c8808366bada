"""ClusterClient: a process that is not a cluster member, using the queues through one.

::

    async with lazily_queue.connect(["unix:///run/q/1.sock", "unix:///run/q/2.sock"],
                                    Credentials.from_env("web", "Q_WEB_TOKEN")) as client:
        jobs = client.work_queue("jobs")
        await jobs.push({"resize": "cat.png"})

The client links to one member at a time (the first reachable address, in order) and
gives out the same cells a member does (:class:`~lazily_queue.QueueCell`,
:class:`~lazily_queue.TopicCell`, :class:`~lazily_queue.WorkQueueCell`) over remote
storages (:mod:`lazily_queue.storage.remote`). Every operation carries the client's
session id and a sequence number; the member proposes it (forwarded to the leader as
its own proposals are) and answers once it applied. When the member dies, stops
answering (``ping_timeout``) or answers that it cannot commit (no quorum, stopping, a
failing disk), the client links to the next address and sends the unanswered
operations again under the same numbers: the replicated state machine applies each at
most once. Leases of work items are replicated state, so they survive the switch
within their visibility timeout. An operation that finds no member able to commit it
before its ``timeout`` fails with the last member's error (or :class:`Unreachable`),
saying whether it may have applied.

Reads (readers, ``len``, views) come from the client's mirror of each object it read
(:mod:`.mirror`), current to what its member applied; :meth:`barrier` makes them
linearizable. At most ``max_in_flight`` operations are outstanding; more wait.

A client hears of the deletion only of the objects it mirrors, so it does not keep
every cell it opened: it holds the cells of the last :data:`RECENT_CELLS` names opened,
and the others only while the application holds them (opening such a name again returns
the cell held; one freed is opened anew, declaring its object again with its first
operation). A client pushing to ever new names it never reads takes bounded memory.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import OrderedDict
from collections.abc import Generator, Sequence
from typing import Any

from lazily_transports import LinkConfig, SchemeTable, scheme_of

from ..cells.job import settle_background_acks
from ..cells.prefetch import return_taken
from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..errors import InvalidConfiguration
from ..names import check_max_objects
from ..node_cells import NodeCells
from ..node_settings import check_seconds
from ..outermost import OutermostBlock
from ..reactive import Context, resolve_context
from ..replicated.view import ReadView
from ..storage.give_backs import settle_returns
from ..storage.remote import (
    RemoteLimitedWorkQueueStorage,
    RemoteQueueStorage,
    RemoteWorkQueueStorage,
)
from . import protocol as P
from .access import Credentials
from .barrier import Barrier
from .certificates import CertificateCredentials
from .dialling import Dialling
from .ending import end_session
from .ephemeral import EphemeralTrackingTopicStorage, end_ephemeral
from .frame_budget import FRAME_BUDGET
from .idle import check_ping_interval
from .leader_seeking import LeaderSeeking, dial_timeout
from .link import Answer, Link
from .mirror import Key, Mirror
from .op_args import MAX_OP_BYTES
from .session import Session

#: The cells a client holds for the names opened last, whether or not the application
#: holds them (module docstring).
RECENT_CELLS = 1024

log = logging.getLogger(__name__)


def _check_options(*, max_in_flight: Any, **seconds: Any) -> None:
    """Refuse options no client can run with: a window of no operation (every one would
    wait forever), and times that are no number of seconds above 0 (a zero ping interval
    pings on every loop iteration, a NaN ping timeout never notices a dead member)."""
    check_max_objects(max_in_flight, "max_in_flight")
    for name, value in seconds.items():
        check_seconds(value, name)
    check_ping_interval(seconds["ping_interval"])


def _refuse_tls_without_context(addresses: Sequence[str]) -> None:
    """A ``tls://`` or ``wss://`` member is dialled only with an ``ssl_context``: refuse
    such an address without one before anything runs."""
    for address in addresses:
        if scheme_of(address) in ("tls", "wss"):
            raise InvalidConfiguration(
                f"cannot connect to {address!r} without TLS settings: pass "
                "ssl_context= (an ssl.SSLContext that trusts the members' CA, e.g. "
                "ssl.create_default_context(cafile='members-ca.pem')), or prove the "
                "client's name with CertificateCredentials, which carry them")


class ClusterClient(OutermostBlock, NodeCells, Dialling, Barrier, LeaderSeeking):
    """A client of a cluster's members (module docstring); its cell factories are a
    node's (``queue``, ``topic``, ``work_queue``, with ``serializer=``)."""

    queue_storage = RemoteQueueStorage
    topic_storage = EphemeralTrackingTopicStorage
    work_queue_storage = RemoteWorkQueueStorage
    limited_work_queue_storage = RemoteLimitedWorkQueueStorage
    #: The cells held for the names opened last (module docstring).
    recent_cells: int = RECENT_CELLS

    def __init__(
        self,
        addresses: str | Sequence[str],
        credentials: Credentials | CertificateCredentials | tuple[str, bytes | str],
        *,
        context: Context | None = None,
        op_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        max_in_flight: int = 256,
        ping_interval: float = 1.0,
        ping_timeout: float = 5.0,
        prefer_leader: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        schemes: SchemeTable | None = None,
    ) -> None:
        _check_options(op_timeout=op_timeout, connect_timeout=connect_timeout,
                       ping_interval=ping_interval, ping_timeout=ping_timeout,
                       max_in_flight=max_in_flight)
        self.addresses = [addresses] if isinstance(addresses, str) else list(addresses)
        if not self.addresses or not all(isinstance(a, str) for a in self.addresses):
            raise InvalidConfiguration("give the address of at least one member")
        if not isinstance(credentials, Credentials | CertificateCredentials):
            name, given = credentials
            credentials = Credentials(name, given.encode() if isinstance(given, str) else given)
        self.credentials: Credentials | CertificateCredentials = credentials
        token = credentials.token if isinstance(credentials, Credentials) else None
        if ssl_context is None and isinstance(credentials, CertificateCredentials):
            ssl_context = credentials.ssl_context()
        if ssl_context is None and schemes is None:
            _refuse_tls_without_context(self.addresses)
        self.ctx = resolve_context(context)
        self.op_timeout = op_timeout
        self.connect_timeout = connect_timeout
        self.ping_interval, self.ping_timeout = ping_interval, ping_timeout
        self._ssl, self._schemes = ssl_context, schemes
        #: Seconds one member has to connect and handshake (:func:`dial_timeout`).
        self._dial_timeout = dial_timeout(connect_timeout, len(self.addresses))
        self._config = LinkConfig(peer_id=0, session_id="lazily-client",
                                  handshake_timeout=self._dial_timeout,
                                  secret=token, credential=credentials.name,
                                  max_frame_size=MAX_OP_BYTES + P.REQUEST_OVERHEAD)
        self._link: Link | None = None
        self.session = Session(owner=credentials.name, max_in_flight=max_in_flight,
                               link=lambda: self._link,
                               drop=self._drop, unreachable=self._unreachable,
                               register_timeout=op_timeout, registered=self._registered)
        self._linked = asyncio.Event()
        #: Set while the client is closed (wakes a barrier waiting for a link).
        self._closed = asyncio.Event()
        self._closed.set()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._fatal: Exception | None = None
        self.failures: dict[str, str] = {}
        #: The addresses whose last dial was refused for good (:mod:`.dialling`).
        self.dead_ends: set[str] = set()
        self.links = 0
        #: Links in a row left because their member could not commit (:meth:`_served`),
        #: and what the last of them said.
        self._unserved = 0
        self._left_for: str | None = None
        #: Links in a row refused over a member's cap (:mod:`.link_caps`).
        self._capped = 0
        self._budget_refused = False
        self.prefer_leader = prefer_leader
        #: The member id found at each address (learned when linking).
        self.members: dict[str, str] = {}
        self._next: str | None = None
        self._mirror = Mirror(self.ctx, self._request_watch, self._release_watch)
        self._router = self._mirror.router
        self._queue_cells: dict[str, QueueCell[Any]] = {}
        self._topic_cells: dict[str, TopicCell[Any]] = {}
        self._work_cells: dict[str, WorkQueueCell] = {}
        #: The names opened last, oldest first: their cells are held.
        self._recent: OrderedDict[Key, None] = OrderedDict()
        #: The topics holding ephemeral subscriptions they started (ended at close).
        self._ephemeral: set[EphemeralTrackingTopicStorage] = set()
        self._let_deleted_go()

    def __repr__(self) -> str:
        state = f"linked to member {self.member}" if self._link else "not linked"
        return f"ClusterClient({self.credentials.name!r}, {state})"

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def driver(self) -> Session:
        """The session the cells' operations go through."""
        return self.session

    @property
    def view(self) -> ReadView:
        """The mirror of the objects this client reads."""
        return self._mirror.view

    @property
    def member(self) -> str | None:
        """The id of the member this client is linked to now."""
        return None if self._link is None else self._link.member

    async def start(self) -> None:
        """Link to a member; raises :class:`Unreachable` (or :class:`AccessDenied`, or
        :class:`TooManyLinks` when members refuse its links over a cap) when none accepts
        this client within ``connect_timeout``."""
        if self._task is not None:
            return
        self._closing = False
        self.session.open = True
        self.session.loop = asyncio.get_running_loop()
        self.session.bad_answers, self.session.unregistrable = 0, None
        self._closed.clear()
        self._task = asyncio.create_task(self._run(), name="lazily-client")
        if not await self._first_link(
                asyncio.get_running_loop().time() + self.connect_timeout):
            task = self._task
            crash = (task.exception() if task is not None and task.done()
                     and not task.cancelled() else None)
            error = self._fatal or (P.Unreachable(self._failure_text(
                f"the client stopped linking: {crash!r}")) if crash is not None
                else self._unreachable("no member accepted"))
            await self.close()
            raise error

    async def close(self) -> None:
        """End its session (:mod:`.ending`: the ephemeral subscriptions it owns go with
        it), or, where that cannot be done, disconnect the ephemeral subscriptions it
        started (:mod:`.ephemeral`; linked again first when its member has just gone),
        and unlink; operations still waiting fail with :class:`ClientClosed`."""
        ended = False
        try:
            if self._task is not None and not self._closing:
                if self._link is not None:
                    storages = list(self._router.storages())
                    await return_taken(storages)
                    await settle_returns(storages, self.op_timeout)
                    await settle_background_acks(storages)
                ended = await end_session(self.session, self._link, self.op_timeout)
                if not ended:
                    await end_ephemeral(list(self._ephemeral), self.op_timeout)
        finally:  # cancelled meanwhile: it still unlinks
            await self._unlink()
        if ended:  # started again, it opens a new session
            self.session.renew(self.credentials.name)

    async def _unlink(self) -> None:
        self._closing = True
        task, self._task = self._task, None
        if self._link is not None:
            self._link.close("the client closed")
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.session.close()
        self._closed.set()
        self._mirror.router.reset()  # waiting pops, claims and streams wake and fail

    async def _begin_block(self) -> None:
        await self.start()

    async def _end_blocks(self) -> None:
        await self.close()

    def __await__(self) -> Generator[Any, None, ClusterClient]:
        """``client = await connect(...)``: the client, linked."""
        return self._connected().__await__()

    async def _connected(self) -> ClusterClient:
        await self.start()
        return self

    async def _serve(self, link: Link) -> None:
        self._link = link
        self.links += 1
        runner = asyncio.ensure_future(
            link.run(ping_interval=self.ping_interval, ping_timeout=self.ping_timeout))
        link.request([P.HELLO, P.VERSION, self.session.id], lambda a: self._hello(link, a))
        if self._unserved and self._left_for is not None:
            link.doubt_commits(self._left_for)  # answered before the watches below
        for key in self._mirror.relinked():
            self._request_watch(key)
        self.session.relinked(link)
        self._linked.set()
        try:
            await runner
        finally:
            self._linked.clear()
            self._link = None
            self.failures[link.address] = f"link lost: {link.failure}"
            if link.cannot_commit:
                self._left_for = f"{link.address} said {link.failure}"
            if link.refusal_code == FRAME_BUDGET:
                self.session.refused(link, P.FrameBudgetFull(f"refused: {link.refusal}"))
            self.session.unlinked()

    def _notice(self, kind: int, payload: Any) -> None:
        if kind == P.REPLAY:
            self._mirror.replay(payload)
        elif kind == P.RESET:
            kind_, name, index, doc = payload
            self._mirror.install((kind_, name), index, doc)
        elif kind == P.ERROR:
            if (isinstance(payload, list) and len(payload) == 4 and payload[0] == "permission"
                    and isinstance(payload[2], str) and isinstance(payload[3], str)):
                self._mirror.refuse((payload[2], payload[3]), str(payload[1]))
                return
            log.warning("the member refused a frame of this client: %s", payload)

    def _drop(self, link: Link, reason: str) -> None:
        if link.open:  # every op it answers so says why: the first one is logged
            log.info("leaving member %s (%s): %s", link.member, link.address, reason)
        link.close(reason)

    # -- cells ---------------------------------------------------------------------------------

    def _opened(self, kind: str, name: str) -> None:
        """Hold the cell of ``kind`` ``name`` among the recent ones; let the oldest go
        beyond :attr:`recent_cells` (it stays while the application holds it)."""
        key = (kind, name)
        if kind == "topic":
            topic = self._router.topics.get(name)
            if isinstance(topic, EphemeralTrackingTopicStorage) and topic.held is None:
                topic.held = self._ephemeral
        recent = self._recent
        recent[key] = None
        recent.move_to_end(key)
        while len(recent) > self.recent_cells:
            oldest, _ = recent.popitem(last=False)
            self._release(*oldest)

    # -- mirrors ------------------------------------------------------------------------------

    def _request_watch(self, key: Key) -> None:
        link = self._link
        if link is None:
            return  # asked for again once linked
        link.request([P.WATCH, *key], lambda answer: self._watched(key, answer))

    def _release_watch(self, key: Key) -> None:
        if self._link is not None:
            self._link.request([P.UNWATCH, *key], lambda _answer: None)

    def _watched(self, key: Key, answer: Answer) -> None:
        if answer is None:
            return
        status, payload = answer
        if status == P.OK and isinstance(payload, list) and len(payload) == 2:
            if self._link is not None:
                self._link.served = True
            self._mirror.install(key, payload[0], payload[1])
        else:
            self._mirror.refuse(key, str(payload[1]) if isinstance(payload, list)
                                and len(payload) >= 2 else str(payload))
