"""NatsQueueStorage: a QueueCell backend on a JetStream work-queue stream.

The FIFO is a stream with work-queue retention and one durable pull consumer ``lq``
without a ``max_ack_pending`` limit (lifted from one declared with it), so a pop of
any size is answered. A push is a publish (``Nats-Msg-Id`` deduplicated); a bounded
queue's stream has ``max_msgs`` with ``discard: new``, so the server refuses a push
past the capacity (``Full``) atomically. A pop pulls what the consumer has ready
(``no_wait``) and acknowledges each message with a confirmed ack (``AckSync``): the
consumer hands each message to one puller, and the confirmed ack removes it.

How far JetStream allows exactly-once pops: a process that dies between the pull and
the ack loses nothing (the message is redelivered after the consumer's ``ack_wait``,
possibly after younger ones); an ack whose confirmation is lost is unknown, and that
element is not handed out (if the ack did land it is lost: at most once). ``close``
moves the stream to the subject ``lq.q.<name>.closed``: a later publish finds no
stream (``Closed``) while the messages still drain. ``unpoll`` publishes the elements
again, at the tail: JetStream cannot put a message back at the head.

A consumer deleted outside this library is declared again at the next pop or refresh
(the stream keeps every element not acknowledged); an operator's edit of its settings
is refused or put back by a refresh within ``poll_interval``
(:mod:`.nats_consumer_settings`).
JetStream matches an ack to a pending message by its stream sequence only, so an
element another process pulled from the old consumer just then, and the new one
delivered again, may be handed out by both (as when a slow ack comes after
``ack_wait``).

Readers follow pushes made elsewhere by the stream's subject, and pops made by other
processes of this library by their announcements on ``lq.n.q.<name>`` (at most one
per process every few milliseconds); pops by other programs, by bounded polling.

A push given a producer ``msg_id`` (capability ``dedup``) publishes with it as the
``Nats-Msg-Id``; on a closed queue the stream is asked, without storing anything,
whether the id is in its window (a repeat of a push made before the close succeeds).

Capabilities: ``observable``, ``peek`` and ``dedup``. ``len`` counts the stream's messages (an
element being pulled counts until its ack).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

import nats.errors
import nats.js.errors as jserr
from nats.js.api import AckPolicy, ConsumerConfig, DiscardPolicy, RetentionPolicy, StorageType

from ..core.queue import EMPTY, QueuePopError, QueuePushError, validate_capacity
from ..errors import shown
from ..storage.attempts import bounds_timeouts
from ..storage.capabilities import StorageCapabilities
from ..storage.queue import QueueChangeListener
from .codec import decode, encode
from .errors import IncompatibleBrokerObject
from .mirrors import QueueMirror
from .nats_api_errors import MAX_MESSAGES, MAX_MESSAGES_EXCEEDED
from .nats_consumer_settings import PUT_BACK, declared_problem, put_back, refreshed
from .nats_limits import MAX_INT, check_within, silent_deletions
from .nats_names import object_token
from .nats_requests import UNLIMITED_ACK_PENDING
from .nats_streams import StreamDeclared

if TYPE_CHECKING:
    from .nats_backend import NatsJetStreamStorage

T = TypeVar("T")
log = logging.getLogger(__name__)
CONSUMER = "lq"
#: What a queue declares of its consumer (:mod:`.nats_consumer_settings`): under other
#: acks (``all``) an ack would also take elements another pop has not acknowledged.
DECLARED = {"ack_policy": AckPolicy.EXPLICIT}
#: Put back as :data:`~.nats_consumer_settings.PUT_BACK`: past a ``max_deliver``, an
#: element whose pop was interrupted before its ack would never be delivered again.
PUT_BACK_TOO = {**PUT_BACK, "max_deliver": -1}


@bounds_timeouts
class NatsQueueStorage(StreamDeclared, QueueMirror[T]):
    """A FIFO on a JetStream work-queue stream: the QueueStorage seam, observable and
    peekable."""

    kind = "queue"
    capabilities = StorageCapabilities(observable=True, peek=True, lifecycle=True,
                                       dedup=True)

    def __init__(
        self, backend: NatsJetStreamStorage, name: str, *, capacity: int | None = None,
        ack_wait: float = 30.0,
    ) -> None:
        self._backend = backend
        self._capacity = validate_capacity(capacity)
        if self._capacity is not None:
            check_within("capacity", self._capacity, MAX_INT, "max_msgs")
        self._ack_wait = ack_wait
        tok = object_token(name, len("LQ_Q_"))
        self.stream = f"LQ_Q_{tok}"
        self.subject = f"lq.q.{tok}"
        #: Where this library's processes announce the pops they made.
        self.notices = f"lq.n.q.{tok}"
        self._listener: QueueChangeListener | None = None
        self._len = 0
        self._head_id: object = None
        self._closed = False
        self._items: list[tuple[int, Any]] = []
        self._subscribed = False
        self._noticing = backend.outages.check
        super().__init__(name, poll_interval=backend.poll_interval,
                         label=f"nats queue {shown(name)}")

    def __repr__(self) -> str:
        return f"NatsQueueStorage({self.name!r}, len={self._len}, capacity={self._capacity})"

    async def _declare(self) -> None:
        b = self._backend
        cap = -1 if self._capacity is None else self._capacity
        async with b.errors(f"declaring stream {self.stream}"):
            info = await b.stream(
                self.stream, holds=("queue", self.name), again=self._created is not None,
                subjects=[self.subject],
                storage=StorageType.FILE,
                retention=RetentionPolicy.WORK_QUEUE, max_msgs=cap,
                discard=DiscardPolicy.NEW, allow_direct=True)
            config = info.config
            problems = []
            if config.retention != RetentionPolicy.WORK_QUEUE:
                problems.append(f"retention {config.retention}, not workqueue")
            if config.subjects not in ([self.subject], [f"{self.subject}.closed"]):
                problems.append(f"subjects {config.subjects}")
            if problems:
                raise IncompatibleBrokerObject(
                    f"nats at {b.address}: stream {self.stream} exists with "
                    f"{'; '.join(problems)}; use another name or delete the stream")
            if (config.max_msgs or -1) != cap:
                raise IncompatibleBrokerObject(
                    f"nats at {b.address}: stream {self.stream} exists with max_msgs "
                    f"{config.max_msgs} (its capacity), this queue wants {cap}: open it with "
                    f"that capacity, or set the stream's back (`nats stream edit "
                    f"{self.stream} --max-msgs {cap}`); nothing was changed")
            deleting = silent_deletions(config, self.stream, "this queue")
            if deleting is not None:
                raise IncompatibleBrokerObject(f"nats at {b.address}: {deleting}")
            self._created = info.created
            try:
                consumer = await b.js.consumer_info(self.stream, CONSUMER)
            except jserr.NotFoundError:
                consumer = await b.js.add_consumer(self.stream, ConsumerConfig(
                    durable_name=CONSUMER, ack_policy=AckPolicy.EXPLICIT,
                    ack_wait=self._ack_wait, max_ack_pending=UNLIMITED_ACK_PENDING))
            problem = declared_problem(consumer.config, self.stream, "this queue", DECLARED)
            if problem is not None:
                raise IncompatibleBrokerObject(f"nats at {b.address}: {problem}")
            await put_back(b.js, self.stream, consumer.config, **PUT_BACK_TOO)
            if not self._subscribed:
                self._subscribed = True
                await b.subscribe(self.subject, self._changed)
                await b.subscribe(self.notices, self._changed)
                await b.subscribe(f"$JS.EVENT.ADVISORY.STREAM.*.{self.stream}", self._changed)
                # A limit set later (announced, or while disconnected) is checked again.
                await b.watch_stream(self.stream, self.redeclare)

    async def _read(self) -> None:
        self._reading()
        try:
            await self._read_stream()
        except BaseException:
            self._read_failed()
            raise

    async def _read_stream(self) -> None:
        b = self._backend
        async with b.errors(f"reading stream {self.stream}"):
            info, anew = await self._stream_declared(self.stream)
            if self._check_due():  # one request more, at most every poll_interval
                await refreshed(b.js, self.stream, CONSUMER, {**DECLARED, **PUT_BACK_TOO},
                                self._declare_again, self._check_again)
            if anew:  # another stream: its sequences say nothing of the old one's
                self._version, self._items = -1, []
            state = info.state
            first = state.first_seq if state.messages else None
            known = {seq: value for seq, value in self._items}
            if first is None:
                items: list[tuple[int, Any]] = []
            elif self._items and self._items[0][0] == first and not self._views_wanted:
                items = self._items
            else:
                limit = max(1, b.view_limit) if self._views_due() else 1
                raws = await b.messages(self.stream, first, limit)
                items = [(seq, known[seq] if seq in known else decode(raw.data or b""))
                         for seq, raw in raws]
        closed = info.config.subjects != [self.subject]
        self._read_state(state.last_seq, (state.messages, first, closed), items)

    # -- reads (the mirror) --------------------------------------------------------------

    def peek(self) -> Any:
        return self._items[0][1] if self._len and self._items else EMPTY

    def elements(self) -> list[Any]:
        """The first ``view_limit`` elements as of the last refresh that read the views
        (between those, a new head may be listed alone)."""
        return [value for _, value in self._items]

    def _pushed(self, value: Any, seq: int) -> None:
        """An element this process pushed counts at once (see
        :meth:`~.mirrors.QueueMirror._count_push`; the stream's last sequence orders
        reads and pushes)."""
        self._count_push(seq, seq, (seq, value))

    # -- operations ----------------------------------------------------------------------

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        return await self._offer(value, None)

    async def offer_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> QueuePushError | None:
        return await self._offer(value, msg_id)

    async def _offer(self, value: T, msg_id: str | None) -> QueuePushError | None:
        data = encode(value)
        await self._ready()
        b = self._backend
        try:
            ack = await self._send(self.stream, self.subject, data, msg_id)
        except jserr.APIError as exc:
            if exc.err_code != MAX_MESSAGES_EXCEEDED or exc.description != MAX_MESSAGES:
                async with b.errors(f"pushing to {self.stream}"):
                    raise
            await self.sync()
            return QueuePushError.Full
        except (jserr.NoStreamResponseError, nats.errors.NoRespondersError):
            await self.sync()
            if self._closed:
                if msg_id is not None:
                    async with b.errors(f"pushing to {self.stream}"):
                        if await b.seen(f"{self.subject}.closed", msg_id) is not None:
                            return None
                return QueuePushError.Closed
            async with b.errors(f"pushing to {self.stream}"):
                raise
        except Exception:
            async with b.errors(f"pushing to {self.stream}"):
                raise
        if not ack.duplicate:
            self._pushed(value, int(ack.seq))
        return None

    async def _declare_again(self) -> None:
        log.warning("%r: consumer %s of stream %s is gone (deleted outside this library); "
                    "declaring the queue again", self, CONSUMER, self.stream)
        self._declared.forget()
        await self._declared.ensure()

    async def poll_many(self, n: int, *, timeout: float | None = None) -> list[T] | QueuePopError:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {shown(n)}")
        await self._ready()
        b = self._backend
        async with b.errors(f"popping from {self.stream}"):
            msgs = await b.pull_declared(self.stream, CONSUMER, n, self._declare_again,
                                         self.redeclare)
            acks = await b.replies.ack_many(msgs)
        taken: list[T] = []
        for msg, ack in zip(msgs, acks, strict=True):
            if isinstance(ack, BaseException):
                log.warning("%r: the ack of message %s was not confirmed (%s); it is not "
                            "handed out", self, msg.metadata.sequence.stream, ack)
                continue
            taken.append(decode(msg.data))
        if taken:
            self._backend.announce(self.notices)
            self._changed()
            return taken
        await self.sync()
        return QueuePopError.Closed if self._closed and self._len == 0 else QueuePopError.Empty

    async def unpoll(self, values: list[T], *, timeout: float | None = None) -> None:
        """Publish ``values`` again, at the tail (JetStream has no way back to the head)."""
        await self._ready()
        for value in values:
            async with self._backend.errors(f"returning an element to {self.stream}"):
                await self._backend.publish(self.subject, encode(value))
        self._changed()

    async def close(self, *, timeout: float | None = None) -> None:
        await self._ready()
        b = self._backend
        async with b.errors(f"closing {self.stream}"):
            info = await b.js.stream_info(self.stream)
            if info.config.subjects == [self.subject]:
                info.config.subjects = [f"{self.subject}.closed"]
                await b.js.update_stream(info.config)
        await self.sync()
