"""Requests to JetStream that share one reply subscription.

:class:`Replies` holds one wildcard inbox subscription for the connection; a request
publishes with the reply subject ``<inbox>.<token>`` and its answer is routed to it by
token. Publishes and acknowledgements made meanwhile go out together and share one
timeout (no subscription, timer or task per message).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import nats.errors
import nats.js.errors as jserr
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from .batching import Coalescer
from .errors import BrokerError, BrokerObjectLost
from .mirror import MAX_BATCH

Publish = tuple[str, bytes, dict[str, str]]
#: A pull's end: no messages (404), the request expired (408), or was superseded (409).
PULL_END = frozenset({"404", "408", "409"})
#: A pull's answer when no consumer of that name listens (no responders).
NO_CONSUMER = "503"
#: A pull consumer's ``max_ack_pending`` without a limit. With a limit reached and more
#: messages ready, a ``no_wait`` pull is answered neither with messages nor with an end
#: status, so it would fail as a broker that does not answer.
UNLIMITED_ACK_PENDING = -1


class ConnectionDropped(nats.errors.TimeoutError):
    """A request's answer that will not come: the connection dropped while it waited
    (core NATS keeps no reply for a connection that is gone). A timeout, so what
    follows one follows it (a publish sent once more under its ``Nats-Msg-Id``)."""

    def __str__(self) -> str:
        return "the connection dropped before the answer came"

    def __repr__(self) -> str:
        return "ConnectionDropped(the connection dropped before the answer came)"


@dataclass(frozen=True, slots=True)
class PubAck:
    """JetStream's answer to a stored publish."""

    stream: str
    seq: int
    duplicate: bool


def _fail(futures: Iterable[asyncio.Future[Any]]) -> None:
    for future in list(futures):
        if not future.done():
            future.set_exception(ConnectionDropped())


def _status(msg: Msg) -> str | None:
    headers = msg.headers
    return headers.get("Status") if headers else None


class Replies:
    """One connection's request/reply routing (see the module docstring)."""

    def __init__(self, nc: NATS, timeout: float, address: str) -> None:
        self.nc = nc
        self.timeout = timeout
        self.address = address
        self._prefix: str | None = None
        self._sub: Any = None
        self._lock = asyncio.Lock()
        self._tokens = itertools.count()
        self._waiting: dict[str, Callable[[Msg], None]] = {}
        #: The answers requests and pulls wait for (see :meth:`drop_waiting`).
        self._inflight: set[asyncio.Future[Any]] = set()
        self._free: list[_Inbox] = []
        self._closed = False
        self._publishes: Coalescer[Publish, PubAck | BaseException] = Coalescer(
            self._publish_batch)
        self._acks: Coalescer[tuple[Msg, bytes], BaseException | None] = Coalescer(
            self._ack_batch)

    async def _inbox(self) -> str:
        if self._prefix is None:
            async with self._lock:
                if self._prefix is None:
                    prefix = self.nc.new_inbox()
                    self._sub = await self.nc.subscribe(f"{prefix}.*", cb=self._route)
                    self._prefix = prefix
        return self._prefix

    async def _route(self, msg: Msg) -> None:
        waiter = self._waiting.get(msg.subject.rpartition(".")[2])
        if waiter is not None:
            waiter(msg)

    async def close(self) -> None:
        self._closed = True
        free, self._free = self._free, []
        for inbox in free:
            await inbox.drop()
        if self._sub is not None:
            sub, self._sub = self._sub, None
            try:
                await sub.unsubscribe()
            except Exception:  # the connection is gone: so is the subscription
                pass

    def drop_waiting(self) -> None:
        """The connection dropped: every request and pull of this object waiting for an
        answer fails now with :class:`ConnectionDropped`, not at its timeout."""
        _fail(self._inflight)

    def drop_requests(self) -> None:
        """The connection dropped: nats-py's own requests waiting for an answer (the
        JetStream API's: a refresh's reads, and any other request made on the
        connection) fail now, not at their timeout: nats-py raises its own
        ``nats.errors.TimeoutError`` for the :class:`ConnectionDropped` set here, so they
        read as unanswered rather than dropped."""
        resp_map: dict[str, asyncio.Future[Any]] = getattr(self.nc, "_resp_map", None) or {}
        _fail(resp_map.values())

    @staticmethod
    def _answer(future: asyncio.Future[Msg]) -> Callable[[Msg], None]:
        def got(msg: Msg) -> None:
            if not future.done():
                future.set_result(msg)
        return got

    async def _round_trip(self, requests: list[tuple[str, bytes, dict[str, str] | None]]
                          ) -> list[Msg | BaseException]:
        """Publish each request with its own reply token; wait (one timeout) for every
        answer. A request not answered in time gets ``nats.errors.TimeoutError``."""
        prefix = await self._inbox()
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[Msg]] = [loop.create_future() for _ in requests]
        tokens = [str(next(self._tokens)) for _ in requests]
        results: list[Msg | BaseException] = []
        try:
            for i, (subject, data, headers) in enumerate(requests):
                self._waiting[tokens[i]] = self._answer(futures[i])
                try:
                    await self.nc.publish(subject, data, reply=f"{prefix}.{tokens[i]}",
                                          headers=headers)
                except Exception as exc:
                    for rest in futures[i:]:
                        rest.set_exception(exc)
                    break
                self._inflight.add(futures[i])  # sent: its answer may be dropped
            pending = [f for f in futures if not f.done()]
            if pending:
                await asyncio.wait(pending, timeout=self.timeout)
            for future in futures:
                if not future.done():
                    results.append(nats.errors.TimeoutError())
                elif future.exception() is not None:
                    results.append(future.exception())  # type: ignore[arg-type]
                else:
                    results.append(future.result())
        finally:
            self._inflight.difference_update(futures)
            for token in tokens:
                self._waiting.pop(token, None)
        return results

    async def answered(self, subject: str, data: bytes) -> bool:
        """Send a request to ``subject`` until one is answered (``True``) or ``timeout``
        seconds have passed (``False``): again 5 ms later, then twice as long each time
        (at most 0.1 s apart), since a request no one listens for yet may be dropped
        without an answer. A no-responders status is no answer."""
        prefix = await self._inbox()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        pending: list[asyncio.Future[Msg]] = []
        tokens: list[str] = []
        pause = 0.005
        try:
            while True:
                future: asyncio.Future[Msg] = loop.create_future()
                tokens.append(str(next(self._tokens)))
                self._waiting[tokens[-1]] = self._answer(future)
                pending.append(future)
                await self.nc.publish(subject, data, reply=f"{prefix}.{tokens[-1]}")
                await asyncio.wait(pending, timeout=max(0.0, min(pause, deadline - loop.time())),
                                   return_when=asyncio.FIRST_COMPLETED)
                if any(_status(f.result()) != "503" for f in pending if f.done()):
                    return True
                pending = [f for f in pending if not f.done()]
                if loop.time() >= deadline:
                    return False
                pause = min(pause * 2, 0.1)
        finally:
            for token in tokens:
                self._waiting.pop(token, None)

    # -- publishes -------------------------------------------------------------------------

    async def publish(self, subject: str, data: bytes, headers: dict[str, str]) -> PubAck:
        """A JetStream publish; raises as ``js.publish`` does (``APIError``,
        ``NoStreamResponseError``, ``nats.errors.TimeoutError``)."""
        result = await self._publishes.call((subject, data, headers))
        if isinstance(result, BaseException):
            raise result
        return result

    async def _publish_batch(self, batch: list[Publish]) -> list[PubAck | BaseException]:
        answers = await self._round_trip([(s, d, h) for s, d, h in batch])
        return [self._pub_ack(answer) for answer in answers]

    @staticmethod
    def _pub_ack(answer: Msg | BaseException) -> PubAck | BaseException:
        if isinstance(answer, BaseException):
            return answer
        if _status(answer) == "503":
            return jserr.NoStreamResponseError()
        try:
            resp = json.loads(answer.data)
            if "error" in resp:
                jserr.APIError.from_error(resp["error"])
            return PubAck(str(resp["stream"]), int(resp["seq"]), bool(resp.get("duplicate")))
        except jserr.APIError as exc:
            return exc
        except (ValueError, KeyError, TypeError) as exc:
            return jserr.APIError(description=f"unreadable publish answer: {exc}")

    # -- acknowledgements ------------------------------------------------------------------

    async def ack(self, msg: Msg, kind: bytes = b"+ACK") -> None:
        """Acknowledge (``+ACK``, ``+TERM``, ``-NAK``) and wait for the server's answer."""
        result = await self._acks.call((msg, kind))
        if result is not None:
            raise result

    async def ack_many(self, msgs: list[Msg], kind: bytes = b"+ACK") -> list[BaseException | None]:
        """Acknowledge every message in one round trip: per message ``None`` (confirmed)
        or the error."""
        return await self._ack_batch([(msg, kind) for msg in msgs]) if msgs else []

    async def ack_subjects(self, subjects: list[str], kind: bytes
                           ) -> list[BaseException | None]:
        """Send ``kind`` to each ack subject (a delivery's reply subject) in one round
        trip: per subject ``None`` (answered) or the error."""
        answers = await self._round_trip([(subject, kind, None) for subject in subjects])
        return [a if isinstance(a, BaseException) else None for a in answers]

    async def _ack_batch(self, batch: list[tuple[Msg, bytes]]) -> list[BaseException | None]:
        answers = await self._round_trip([(msg.reply, kind, None) for msg, kind in batch])
        return [a if isinstance(a, BaseException) else None for a in answers]

    # -- pulls -----------------------------------------------------------------------------

    async def pull(self, stream: str, consumer: str, n: int,
                   answered: asyncio.Future[None] | None = None) -> list[Msg]:
        """Up to ``n`` messages the consumer has ready now (a ``no_wait`` pull); raises
        :class:`BrokerObjectLost` when the consumer does not exist. ``answered`` (when
        given) is resolved at the first answer (a message or a status).

        Pulled messages carry their own subject, not the reply's, so each pull has an
        inbox of its own: one from a pool, returned to it once the pull ended cleanly
        (``n`` messages or an end status), dropped after a timeout."""
        inbox = self._free.pop() if self._free else await self._new_inbox()
        got: list[Msg] = []
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def deliver(msg: Msg) -> None:
            if answered is not None and not answered.done():
                answered.set_result(None)
            if done.done():
                return
            status = _status(msg)
            if status in PULL_END:
                done.set_result(None)
            elif status == NO_CONSUMER:
                done.set_exception(BrokerObjectLost(
                    f"nats at {self.address}: consumer {consumer} of stream {stream} does "
                    "not exist (deleted, or its stream was)"))
            elif status:
                description = (msg.headers or {}).get("Description", "")
                done.set_exception(BrokerError(
                    f"nats at {self.address}: pull from {stream}: {status} {description}"))
            else:
                got.append(msg)
                if len(got) >= n:
                    done.set_result(None)

        inbox.handler = deliver
        clean = False
        try:
            request = json.dumps({"batch": min(n, MAX_BATCH), "no_wait": True}).encode()
            await self.nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", request,
                                  reply=inbox.subject)
            self._inflight.add(done)  # sent: its answer may be dropped
            try:
                async with asyncio.timeout(self.timeout):
                    await done
            except ConnectionDropped:
                raise
            except TimeoutError:
                raise nats.errors.TimeoutError() from None
            clean = True
            return got
        finally:
            self._inflight.discard(done)
            inbox.handler = None
            if clean and not self._closed:
                self._free.append(inbox)
            else:
                await inbox.drop()

    async def _new_inbox(self) -> _Inbox:
        inbox = _Inbox(self.nc.new_inbox())
        inbox.sub = await self.nc.subscribe(inbox.subject, cb=inbox.route)
        return inbox


class _Inbox:
    """A pull's reply subscription; messages go to the pull that holds it."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.sub: Any = None
        self.handler: Callable[[Msg], None] | None = None

    async def route(self, msg: Msg) -> None:
        if self.handler is not None:
            self.handler(msg)

    async def drop(self) -> None:
        sub, self.sub = self.sub, None
        if sub is not None:
            try:
                await sub.unsubscribe()
            except Exception:  # the connection is gone: so is the subscription
                pass
