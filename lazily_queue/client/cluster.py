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
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import ssl
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import cbor2
from lazily_transports import HandshakeError, LinkConfig, SchemeTable, dial

from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..errors import InvalidConfiguration, UnsupportedValue
from ..raft.engine import MAX_COMMAND_BYTES
from ..raft.errors import CommitTimeout
from ..reactive import Context, resolve_context
from ..replicated import ops
from ..replicated.state_machine import CLIENT_SESSION_BASE, CLIENT_WINDOW, decode_result
from ..storage.remote import RemoteQueueStorage, RemoteTopicStorage, RemoteWorkQueueStorage
from . import protocol as P
from .access import Credentials
from .budget import Budget
from .link import Answer, Link
from .mirror import Key, Mirror

log = logging.getLogger(__name__)

#: How long the result of a cancelled pop is still awaited (to return its elements).
ORPHAN_HORIZON = 600.0
#: How often outstanding operations are checked against their deadlines (seconds).
SWEEP_INTERVAL = 0.05
_MAX_OP_BYTES = MAX_COMMAND_BYTES - 1024


def encode_args(code: int, args: list[Any]) -> bytes:
    """The op's arguments in CBOR, checked against the replicated command limit."""
    try:
        encoded = cbor2.dumps(args)
    except (cbor2.CBOREncodeError, TypeError, ValueError) as exc:
        raise UnsupportedValue(
            f"{ops.op_name(code)}: the value cannot be replicated: {str(exc)[:200]}"
        ) from None
    if len(encoded) > _MAX_OP_BYTES:
        raise ValueError(
            f"operation of {len(encoded)} bytes exceeds the {_MAX_OP_BYTES}-byte replicated "
            "command limit; store large payloads elsewhere and queue a reference"
        )
    return encoded


class _Op:
    """One operation until its answer arrives."""

    __slots__ = ("args", "attempts", "code", "deadline", "done", "error", "future",
                 "on_orphan", "orphaned", "rid", "seq")

    def __init__(self, seq: int, code: int, args: bytes, deadline: float,
                 future: asyncio.Future[Any], on_orphan: Callable[[Any], None] | None) -> None:
        self.seq, self.code, self.args, self.deadline = seq, code, args, deadline
        self.future, self.on_orphan = future, on_orphan
        self.rid = 0
        self.attempts = 0
        self.done = False
        self.orphaned = False
        self.error: Exception | None = None


class ClusterClient:
    """A client of a cluster's members (module docstring)."""

    def __init__(
        self,
        addresses: str | Sequence[str],
        credentials: Credentials | tuple[str, bytes | str],
        *,
        context: Context | None = None,
        op_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        max_in_flight: int = 128,
        ping_interval: float = 1.0,
        ping_timeout: float = 5.0,
        prefer_leader: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        schemes: SchemeTable | None = None,
    ) -> None:
        self.addresses = [addresses] if isinstance(addresses, str) else list(addresses)
        if not self.addresses or not all(isinstance(a, str) for a in self.addresses):
            raise InvalidConfiguration("give the address of at least one member")
        if not isinstance(credentials, Credentials):
            name, token = credentials
            credentials = Credentials(name, token.encode() if isinstance(token, str) else token)
        self.credentials = credentials
        self.ctx = resolve_context(context)
        self.op_timeout = op_timeout
        self.connect_timeout = connect_timeout
        self.ping_interval, self.ping_timeout = ping_interval, ping_timeout
        self._ssl, self._schemes = ssl_context, schemes
        self._config = LinkConfig(peer_id=0, session_id="lazily-client",
                                  secret=credentials.token, credential=credentials.name,
                                  max_frame_size=1024 * 1024)
        self.session = CLIENT_SESSION_BASE + 1 + secrets.randbelow(2**62 - 2)
        self._next_seq = 1
        self._ops: dict[int, _Op] = {}
        self._window = Budget(max_in_flight)
        self._held: deque[_Op] = deque()
        self._sweeper: asyncio.TimerHandle | None = None
        self._link: Link | None = None
        self._linked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._fatal: Exception | None = None
        self.failures: dict[str, str] = {}
        self.links = 0
        self.prefer_leader = prefer_leader
        #: The member id found at each address (learned when linking).
        self.members: dict[str, str] = {}
        self._next: str | None = None
        self._mirror = Mirror(self.ctx, self._request_watch)
        self._cells: dict[Key, Any] = {}

    def __repr__(self) -> str:
        state = f"linked to member {self.member}" if self._link else "not linked"
        return f"ClusterClient({self.credentials.name!r}, {state})"

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def member(self) -> str | None:
        """The id of the member this client is linked to now."""
        return None if self._link is None else self._link.member

    async def start(self) -> None:
        """Link to a member; raises :class:`Unreachable` (or :class:`AccessDenied`) when
        none accepts this client within ``connect_timeout``."""
        if self._task is not None:
            return
        self._closing = False
        self._task = asyncio.create_task(self._run(), name="lazily-client")
        linked = asyncio.ensure_future(self._linked.wait())
        try:
            await asyncio.wait({linked, self._task}, timeout=self.connect_timeout,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            linked.cancel()
        if not self._linked.is_set():
            error = self._fatal or P.Unreachable(self._failure_text("no member accepted"))
            await self.close()
            raise error

    async def close(self) -> None:
        """Unlink; operations still waiting fail with :class:`ClientClosed`."""
        self._closing = True
        task, self._task = self._task, None
        if self._link is not None:
            self._link.close("the client closed")
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for op in list(self._ops.values()):
            outcome = "its outcome is unknown" if op.attempts else "it was not applied"
            self._finish(op, P.ClientClosed(f"{ops.op_name(op.code)}: the client closed; "
                                            f"{outcome}"))

    async def __aenter__(self) -> ClusterClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _failure_text(self, what: str) -> str:
        found = "; ".join(f"{a}: {self.failures.get(a, 'not tried')}" for a in self.addresses)
        return f"{what} ({found})"

    async def _run(self) -> None:
        index, delay, denied = 0, 0.05, 0
        while not self._closing:
            address, self._next = self._next, None
            if address is None:
                address = self.addresses[index % len(self.addresses)]
                index += 1
            try:
                stream = await dial(address, self._config, timeout=self.connect_timeout,
                                    ssl_context=self._ssl, schemes=self._schemes)
            except HandshakeError as exc:
                self.failures[address] = f"refused: {exc}"
                denied += exc.field in ("credential", "auth")
            except (OSError, TimeoutError) as exc:
                self.failures[address] = f"unreachable: {exc}"
            else:
                delay, denied = 0.05, 0
                try:
                    await self._serve(Link(stream, address, on_notice=self._notice))
                except Exception:
                    log.exception("the link to %s failed", address)
                continue
            if index % len(self.addresses) == 0:
                if denied == len(self.addresses) and self.links == 0:
                    self._fatal = P.AccessDenied(self._failure_text(
                        f"every member refused client {self.credentials.name!r}"))
                    return
                denied = 0
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def _serve(self, link: Link) -> None:
        self._link = link
        self.links += 1
        runner = asyncio.ensure_future(
            link.run(ping_interval=self.ping_interval, ping_timeout=self.ping_timeout))
        link.request([P.HELLO, P.VERSION, self.session], lambda a: self._hello(link, a))
        for key in self._mirror.relinked():
            self._request_watch(key)
        self._held.clear()
        for op in list(self._ops.values()):
            self._send(link, op)
        self._linked.set()
        try:
            await runner
        finally:
            self._linked.clear()
            self._link = None
            self.failures[link.address] = f"link lost: {link.failure}"
            for op in self._ops.values():
                op.rid = 0

    def _hello(self, link: Link, answer: Answer) -> None:
        if answer is not None and answer[0] == P.OK and isinstance(answer[1], dict):
            member, leader = answer[1].get("node"), answer[1].get("leader")
            link.member = str(member) if member is not None else None
            link.leader = str(leader) if leader is not None else None
            if link.member is not None:
                self.members[link.address] = link.member
            if self.prefer_leader:
                self._seek_leader(link)
        elif answer is not None:
            link.close(f"the member refused the session: {answer[1]}")

    def _seek_leader(self, link: Link) -> None:
        """Linked to a follower: move to the leader's address when it is known, or to an
        address not tried yet, which may be the leader's (what was sent is sent again
        there, and applies once)."""
        if link.leader is None or link.leader == link.member:
            return
        known = [a for a, m in self.members.items() if m == link.leader]
        untried = [a for a in self.addresses if a not in self.members]
        if not known and not untried:
            return
        self._next = known[0] if known else untried[0]
        self._drop(link, f"moving to leader {link.leader}")

    def _notice(self, kind: int, payload: Any) -> None:
        if kind == P.REPLAY:
            self._mirror.replay(payload)
        elif kind == P.RESET:
            kind_, name, index, doc = payload
            self._mirror.install((kind_, name), index, doc)
        elif kind == P.ERROR:
            log.warning("the member refused a frame of this client: %s", payload)

    def _drop(self, link: Link, reason: str) -> None:
        log.info("leaving member %s (%s): %s", link.member, link.address, reason)
        link.close(reason)

    # -- operations (the Proposer of the remote storages) ------------------------------------

    def propose(
        self, code: int, args: list[Any], *, timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
    ) -> tuple[Any, asyncio.Future[Any]]:
        """Send one op; the future resolves with its result once the member applied it.

        Raises :class:`ClientClosed` when closed, ``UnsupportedValue`` for a value CBOR
        cannot carry and ``ValueError`` for an op over the replicated command limit
        (nothing sent); the member refuses values its replicas would not decode.
        """
        if self._closing or self._task is None:
            raise P.ClientClosed("the client is not started; use `async with client:`")
        encoded = encode_args(code, args)
        seq = self._next_seq
        self._next_seq += 1
        loop = asyncio.get_running_loop()
        op = _Op(seq, code, encoded, loop.time() + timeout, loop.create_future(), on_orphan)
        self._ops[seq] = op
        if self._sweeper is None:
            self._sweeper = loop.call_later(SWEEP_INTERVAL, self._sweep)
        if self._link is not None:
            self._send(self._link, op)
        return op, op.future

    async def call(
        self, code: int, args: list[Any], *, timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
    ) -> Any:
        """Propose and await (at most ``max_in_flight`` at once); a cancelled caller's op
        is abandoned, or with ``on_orphan`` awaited on its behalf."""
        window = self._window
        await window.take()
        try:
            op, fut = self.propose(code, args, timeout=timeout, on_orphan=on_orphan)
            try:
                return await fut
            except asyncio.CancelledError:
                if not op.done and (op.attempts == 0 or op.on_orphan is None):
                    self._finish(op, None)
                raise
        finally:
            window.give()

    def _floor(self) -> int:
        return next(iter(self._ops), self._next_seq)

    def _send(self, link: Link, op: _Op) -> None:
        floor = self._floor()
        if op.seq >= floor + CLIENT_WINDOW:
            # The member keeps CLIENT_WINDOW results above the floor: wait for the oldest.
            self._held.append(op)
            return
        remaining = op.deadline - asyncio.get_running_loop().time()
        timeout_ms = min(3_600_000, max(1, math.ceil(remaining * 1000)))
        op.attempts += 1
        op.rid = link.send_op(op.seq, floor, op.code, op.args, timeout_ms,
                              lambda answer: self._answered(link, op, answer))

    def _send_held(self) -> None:
        """Send the ops held back by the session window that fit in it now."""
        link, held = self._link, self._held
        if link is None:
            return
        limit = self._floor() + CLIENT_WINDOW
        while held and (held[0].done or held[0].seq < limit):
            op = held.popleft()
            if not op.done:
                self._send(link, op)

    def _answered(self, link: Link, op: _Op, answer: Answer) -> None:
        if op.done or answer is None:
            return  # the link ended: the op is sent again on the next one
        status, payload = answer
        if status == P.OK:
            try:
                result = decode_result(payload)
            except Exception:
                self._drop(link, "the member sent an unreadable result")
                return
            self._resolve(op, result)
            return
        code, message = payload if isinstance(payload, list) and len(payload) == 2 else (
            "refused", payload)
        error = P.error_of(code, message)
        if code in P.RETRYABLE and asyncio.get_running_loop().time() < op.deadline:
            op.error = error
            op.rid = 0
            self._drop(link, f"{code}: {message}")
            return
        self._finish(op, error)

    def _resolve(self, op: _Op, result: Any) -> None:
        op.done = True
        self._ops.pop(op.seq, None)
        if self._held:
            self._send_held()
        if not op.future.done():
            op.future.set_result(result)
        elif op.on_orphan is not None:
            try:
                op.on_orphan(result)
            except Exception:
                log.exception("handling the late result of %s failed", ops.op_name(op.code))

    def _finish(self, op: _Op, error: Exception | None) -> None:
        op.done = True
        self._ops.pop(op.seq, None)
        if self._held:
            self._send_held()
        if error is not None and not op.future.done():
            op.future.set_exception(error)
        if self._link is not None and op.rid:
            self._link.forget(op.rid)

    def _sweep(self) -> None:
        """Expire the ops past their deadline; runs while any op is outstanding."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for op in [op for op in self._ops.values() if op.deadline <= now]:
            self._expire(op, now)
        self._sweeper = (loop.call_later(SWEEP_INTERVAL, self._sweep) if self._ops
                         else None)

    def _expire(self, op: _Op, now: float) -> None:
        error = self._timeout_error(op, op.attempts > 0)
        if op.on_orphan is not None and op.attempts > 0 and not op.orphaned:
            # It may have applied: its result is still awaited a while, to undo it.
            if not op.future.done():
                op.future.set_exception(error)
            op.orphaned = True
            op.deadline = now + ORPHAN_HORIZON
            return
        self._finish(op, error)

    def _timeout_error(self, op: _Op, unknown: bool) -> Exception:
        outcome = ("its outcome is unknown (it may have applied)" if unknown
                   else "it was not applied")
        name = ops.op_name(op.code)
        if op.error is not None:
            return type(op.error)(f"{name}: {op.error}; no member could commit it before "
                                  f"its timeout, {outcome}")
        if self._link is None:
            return P.Unreachable(self._failure_text(
                f"{name}: no member reachable before its timeout, {outcome}"))
        return CommitTimeout(f"{name} did not commit before its timeout; {outcome}")

    # -- mirrors ------------------------------------------------------------------------------

    def _request_watch(self, key: Key) -> None:
        link = self._link
        if link is None:
            return  # asked for again once linked
        link.request([P.WATCH, *key], lambda answer: self._watched(key, answer))

    def _watched(self, key: Key, answer: Answer) -> None:
        if answer is None:
            return
        status, payload = answer
        if status == P.OK and isinstance(payload, list) and len(payload) == 2:
            self._mirror.install(key, payload[0], payload[1])
        else:
            self._mirror.refuse(key, str(payload))

    async def barrier(self, *, timeout: float | None = None) -> None:
        """Return once the member has applied (and sent this client) everything committed
        before the call: reads right after it are linearizable."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.op_timeout)
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise CommitTimeout("barrier did not complete before its timeout")
            try:
                await asyncio.wait_for(self._linked.wait(), remaining)
            except TimeoutError:
                raise P.Unreachable(self._failure_text("barrier: no member reachable")) from None
            link = self._link
            if link is None:
                continue
            answer = await link.ask([P.BARRIER, max(1, math.ceil(remaining * 1000))])
            if answer is None:
                continue
            if answer[0] == P.OK:
                return
            code, message = answer[1]
            if code in P.RETRYABLE:
                self._drop(link, f"{code}: {message}")
                continue
            raise P.error_of(code, message)

    # -- cells ----------------------------------------------------------------------------------

    def queue(self, name: str, *, capacity: int | None = None) -> QueueCell[Any]:
        """The queue ``name`` (declared on first use; the same capacity everywhere)."""
        cell = self._cells.get(("queue", name))
        if cell is None:
            storage: RemoteQueueStorage[Any] = RemoteQueueStorage(
                self, self._mirror.view, name, capacity=capacity, timeout=self.op_timeout)
            cell = QueueCell(storage, context=self.ctx, name=name)
            self._mirror.router.queues[name] = storage
            self._cells[("queue", name)] = cell
        elif cell.capacity() != capacity:
            raise InvalidConfiguration(f"queue {name!r} is already open with capacity "
                                       f"{cell.capacity()}")
        return cell  # type: ignore[no-any-return]

    def topic(self, name: str) -> TopicCell[Any]:
        """The topic ``name`` (declared on first use)."""
        cell = self._cells.get(("topic", name))
        if cell is None:
            storage = RemoteTopicStorage(self, self._mirror.view, name, timeout=self.op_timeout)
            cell = TopicCell(storage, context=self.ctx, name=name)
            self._mirror.router.topics[name] = storage
            self._cells[("topic", name)] = cell
        return cell  # type: ignore[no-any-return]

    def work_queue(self, name: str, *, visibility_timeout: float = 30.0,
                   max_deliveries: int = 3) -> WorkQueueCell:
        """The work queue ``name`` (the same settings as every other user of it)."""
        timeout_ms = round(visibility_timeout * 1000)
        cell = self._cells.get(("work_queue", name))
        if cell is None:
            storage = RemoteWorkQueueStorage(
                self, self._mirror.view, name, visibility_timeout=timeout_ms,
                max_deliveries=max_deliveries, timeout=self.op_timeout)
            cell = WorkQueueCell(storage, context=self.ctx, name=name)
            self._mirror.router.work_queues[name] = storage
            self._cells[("work_queue", name)] = cell
        elif (cell.visibility_timeout, cell.max_deliveries) != (timeout_ms, max_deliveries):
            raise InvalidConfiguration(f"work queue {name!r} is already open with other settings")
        return cell  # type: ignore[no-any-return]
