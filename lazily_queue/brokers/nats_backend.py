"""NatsJetStreamStorage: the cells' storages on NATS JetStream (nats-py).

``NatsJetStreamStorage`` owns a connection and hands out one storage per object:
:meth:`~NatsJetStreamStorage.queue` (a work-queue-retention stream with one pull
consumer), :meth:`~NatsJetStreamStorage.work_queue` (the same, with leases, ``nak`` and
``max_deliver``, plus a dead-letter stream) and :meth:`~NatsJetStreamStorage.topic` (a
limits stream with a durable consumer per subscriber). Object names become stream
names ``LQ_<KIND>_<name>`` and subjects ``lq.<kind>.<name>`` (names outside
``[A-Za-z0-9_-]`` are hex-encoded, and hashed when their hex would make a name longer
than JetStream's 255 characters: see :func:`.nats_names.token`).

Pushes carry a ``Nats-Msg-Id``, so a push retried after a lost reply is stored once
(within the stream's duplicate window). A producer's ``msg_id`` (capability ``dedup``)
becomes that header (hashed, so any id is a valid header value): its window is the
stream's ``duplicate_window``, two minutes unless the stream was created otherwise, and
it is bounded by age only. Mirrors refresh on the subjects' messages,
JetStream advisories, the announcements this library's processes make of their pops,
claims and settlements (``lq.n.<kind>.<name>``; other programs' are seen by polling),
and every ``poll_interval`` seconds.

Durability is the server's: JetStream acknowledges a publish before it is fsynced
(``sync_interval`` defaults to 2 minutes); set ``jetstream { sync_interval: always }``
(nats-server >= 2.10) for an acknowledgement to mean the message is on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import nats
import nats.errors
import nats.js.errors as jserr
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from ..errors import shown
from .errors import (
    UNREACHABLE_FIX,
    BrokerAuthenticationFailed,
    BrokerUnavailable,
    IncompatibleBrokerObject,
)
from .mirror import DEFAULT_POLL_INTERVAL, DEFAULT_VIEW_LIMIT, check_options
from .nats_api_errors import (
    STREAM_NAME_IN_USE,
    SUBJECTS_OVERLAP,
    WRONG_LAST_SEQUENCE,
    typed_error,
)
from .nats_connection import Outages, hold_publishes, redacted, require_tls, within
from .nats_limits import MAX_INT
from .nats_names import of_this_library, once_id, stream_description
from .nats_reads import NatsReads
from .nats_requests import PubAck, Replies
from .nats_streams import SETTLE

log = logging.getLogger(__name__)

#: Least seconds between two announcements of changes to one object.
ANNOUNCE_INTERVAL = 0.005


class NatsJetStreamStorage(NatsReads):
    """Storages for queues, work queues and topics on one NATS JetStream account."""

    def __init__(
        self,
        nc: NATS,
        *,
        address: str = "nats",
        timeout: float = 10.0,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        view_limit: int = DEFAULT_VIEW_LIMIT,
        owns_connection: bool = False,
        outages: Outages | None = None,
    ) -> None:
        self.nc = nc
        #: Told when the connection drops and comes back (on one :meth:`connect` opened;
        #: on the caller's own connection, when an operation finds it reconnected).
        self.outages = outages or Outages().follow(nc)
        self.js: JetStreamContext = nc.jetstream(timeout=timeout)
        self.address = address
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.view_limit = view_limit
        self._owns = owns_connection
        self.replies = Replies(nc, timeout, address)
        self.outages.dropped.append(self.replies.drop_waiting)
        if owns_connection:  # else nats-py's requests may be the application's own
            self.outages.dropped.append(self.replies.drop_requests)
        self._objects: list[Any] = []
        self._subs: list[Any] = []
        self._closed = False
        self._announcing: dict[str, bool] = {}
        self._sending: set[asyncio.Task[None]] = set()
        #: Message ids: 64 random bits for this storage, then a counter.
        self._id_prefix = uuid.uuid4().hex[:16]
        self._id_counter = itertools.count()

    @classmethod
    async def connect(
        cls, url: str, *, user: str | None = None, password: str | None = None,
        token: str | None = None, **options: Any,
    ) -> NatsJetStreamStorage:
        """Connect to ``nats://[user:password@]host:port`` (``tls://`` for TLS) and check
        that JetStream answers; raises :class:`BrokerUnavailable` or
        :class:`BrokerAuthenticationFailed`."""
        check_options(options)
        refused: list[str] = []
        seen: list[str] = []  # the last error nats-py met, which its own hides

        async def error_cb(exc: Exception) -> None:
            text = str(exc)
            seen[:] = [text or repr(exc)]
            if "uthorization" in text or "uthentication" in text:
                refused.append(text)
            log.debug("nats %s: %s", redacted(url), text)

        # The first connection is tried twice, 0.25 s apart (nats-py would retry it
        # forever, and its pool tries a refused address 60 times); once up, the
        # connection reconnects for as long as it takes. Nothing is buffered while it
        # reconnects (pending_size 0: a publish then raises at once): a push, ack or
        # close that raised BrokerUnavailable must not be sent when the server is back.
        outages = Outages()
        kwargs: dict[str, Any] = {"servers": [url], "connect_timeout": 5, "no_echo": True,
                                  "allow_reconnect": False, "reconnect_time_wait": 0.25,
                                  "max_reconnect_attempts": 1,
                                  "pending_size": 0, "error_cb": error_cb,
                                  "disconnected_cb": outages.disconnected_cb,
                                  "reconnected_cb": outages.reconnected_cb}
        if user is not None:
            kwargs["user"], kwargs["password"] = user, password
        elif password is not None:
            kwargs["password"] = password
        if token is not None:
            kwargs["token"] = token
        address = redacted(url)
        if urlsplit(url).scheme == "tls":
            await require_tls(url, address)
        try:
            nc = await nats.connect(**kwargs)
        except Exception as exc:
            if refused or "uthorization" in str(exc):
                raise BrokerAuthenticationFailed(
                    f"nats at {address} refused the credentials; put them in the URL "
                    "(nats://user:password@host:port) or pass credentials=") from None
            cause = seen[0] if seen and isinstance(exc, nats.errors.NoServersError) else repr(exc)
            raise BrokerUnavailable(
                f"nats at {address} is unreachable: {cause}{UNREACHABLE_FIX}") from None
        nc.options["allow_reconnect"] = True
        nc.options["max_reconnect_attempts"] = -1
        hold_publishes(nc, outages.reconnected, options.get("timeout", 10.0))
        try:
            self = cls(nc, address=address, owns_connection=True, outages=outages, **options)
            async with self.errors("checking JetStream"):
                await self.js.account_info()
        except BaseException:
            await nc.close()
            raise
        return self

    def __repr__(self) -> str:
        return f"NatsJetStreamStorage({self.address!r})"

    # -- objects -------------------------------------------------------------------------

    def queue(self, name: str, *, capacity: int | None = None) -> Any:
        from .nats_queue import NatsQueueStorage

        return self._track(NatsQueueStorage(self, name, capacity=capacity))

    def work_queue(self, name: str, *, visibility_timeout: float, max_deliveries: int) -> Any:
        from .nats_work import NatsWorkQueueStorage

        return self._track(NatsWorkQueueStorage(
            self, name, visibility_timeout=visibility_timeout, max_deliveries=max_deliveries))

    def topic(self, name: str) -> Any:
        from .nats_topic import NatsTopicStorage

        return self._track(NatsTopicStorage(self, name))

    def _track(self, storage: Any) -> Any:
        self._objects.append(storage)
        return storage

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for storage in self._objects:
            await storage.aclose()
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self.outages.unfollow()
        await self.replies.close()
        if self._owns:
            # A broker that went away makes nats-py's drain and close raise; the
            # connection is gone either way. Neither may hold the caller past the timeout.
            for step in (self.nc.drain, self.nc.close):
                if not await within(step(), self.timeout):
                    log.warning("nats %s: closing the connection took over %ss; left to "
                                "finish in the background", self.address, self.timeout)

    # -- errors --------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def errors(self, doing: str) -> AsyncIterator[None]:
        """Map nats-py's exceptions to the typed broker errors (:mod:`.nats_api_errors`)."""
        try:
            yield
        except Exception as exc:
            typed = typed_error(exc, self.address, doing, int(self.nc.max_payload))
            if typed is None or typed is exc:
                raise
            raise typed from None

    # -- helpers -------------------------------------------------------------------------

    async def stream(self, name: str, *, holds: tuple[str, str], again: bool = False,
                     **config: Any) -> Any:
        """The info of stream ``name``, added with ``config`` when it does not exist (when
        another process adds it at the same moment, the stream it added), once the stream
        answers (see :meth:`_answering`). ``holds`` is ``(kind, object name)``, kept in the
        description of a stream this adds: a stream whose description names another
        object of this library raises :class:`IncompatibleBrokerObject` (two names mapped
        to one stream name). ``again``: the object had it before, so one found gone is
        added :data:`~.nats_streams.SETTLE` seconds later."""
        description = stream_description(*holds)
        try:
            info = await self.js.stream_info(name)
        except jserr.NotFoundError:
            if again:
                await asyncio.sleep(SETTLE)
            try:
                info = await self.js.add_stream(name=name, description=description, **config)
            except jserr.APIError as exc:
                if exc.err_code not in (STREAM_NAME_IN_USE, SUBJECTS_OVERLAP):
                    raise
                info = await self.js.stream_info(name)
        found = info.config.description
        if found and found != description and of_this_library(found):
            kind, holder = holds
            raise IncompatibleBrokerObject(
                f"nats at {self.address}: stream {name} belongs to another object "
                f"({shown(found)}); {kind} {shown(holder)} maps to the same stream name: "
                "use another name")
        if info.config.allow_direct:
            await self._answering(name)
        return info

    async def _answering(self, name: str) -> None:
        """Return once stream ``name`` answers a direct get (of a sequence it cannot hold).
        nats-server before 2.9.15 lists a stream another connection is creating before
        it is set up; a consumer added to it then never answers a pull nor delivers a
        message. Raises :class:`BrokerUnavailable` when it does not answer in time."""
        probe = f'{{"seq": {MAX_INT}}}'.encode()
        if not await self.replies.answered(f"$JS.API.DIRECT.GET.{name}", probe):
            raise BrokerUnavailable(
                f"nats at {self.address}: stream {name} exists but did not answer within "
                f"{self.timeout}s (a server before 2.9.15 lists a stream while another "
                "connection is still creating it); nothing was added to it: try again, "
                "and upgrade nats-server if it persists")

    async def subscribe(self, subject: str, callback: Callable[[], None]) -> None:
        """Call ``callback`` for every message on ``subject`` (notifications)."""

        async def handler(_: Msg) -> None:
            callback()

        self._subs.append(await self.nc.subscribe(subject, cb=handler))

    async def watch_stream(self, stream: str, changed: Callable[[], None]) -> None:
        """Call ``changed`` when the server announces a change to stream ``stream``'s
        settings, and when the connection drops and again when it is back (a change made
        meanwhile is announced to no one here)."""
        await self.subscribe(f"$JS.EVENT.ADVISORY.STREAM.UPDATED.{stream}", changed)
        self.outages.listeners.append(changed)

    def announce(self, subject: str) -> None:
        """Tell the other processes' mirrors that this one changed an object: a core
        message on ``subject`` now, then at most one more when
        :data:`ANNOUNCE_INTERVAL` has passed if more changes were announced meanwhile
        (fire and forget: a lost one is covered by their bounded polling)."""
        if subject in self._announcing:
            self._announcing[subject] = True
            return
        self._announcing[subject] = False
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._send_announcement(subject))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)
        loop.call_later(ANNOUNCE_INTERVAL, self._announce_again, subject)

    def _announce_again(self, subject: str) -> None:
        if self._announcing.pop(subject, False) and not self._closed:
            self.announce(subject)

    async def _send_announcement(self, subject: str) -> None:
        with contextlib.suppress(Exception):
            await self.nc.publish(subject, b"")

    async def publish(self, subject: str, data: bytes,
                      headers: dict[str, str] | None = None) -> PubAck:
        """A JetStream publish with a ``Nats-Msg-Id``: retried once after a lost reply
        with the same id, so it is stored once."""
        headers = dict(headers or {})
        if "Nats-Msg-Id" not in headers:
            headers["Nats-Msg-Id"] = f"{self._id_prefix}{next(self._id_counter):x}"
        try:
            return await self.replies.publish(subject, data, headers)
        except nats.errors.TimeoutError as lost:
            try:
                return await self.replies.publish(subject, data, headers)
            except (nats.errors.OutboundBufferLimitError,
                    nats.errors.ConnectionReconnectingError):
                raise lost from None  # the first one may have been stored: unknown

    async def publish_once(self, subject: str, data: bytes, msg_id: str) -> PubAck:
        """:meth:`publish` with the producer's ``msg_id`` as its ``Nats-Msg-Id``: a repeat
        inside the stream's duplicate window stores nothing and is answered with the
        first publish's sequence and ``duplicate`` set."""
        return await self.publish(subject, data, {"Nats-Msg-Id": once_id(msg_id)})

    async def seen(self, subject: str, msg_id: str) -> PubAck | None:
        """The first publish of ``msg_id`` to the stream that holds ``subject``, if it is
        in the duplicate window; ``None`` otherwise. Stores nothing: the probe expects a
        last sequence no stream has, which the server checks after duplicates."""
        headers = {"Nats-Msg-Id": once_id(msg_id),
                   "Nats-Expected-Last-Sequence": str(2**64 - 1)}
        try:
            ack = await self.replies.publish(subject, b"", headers)
        except jserr.APIError as exc:
            if exc.err_code != WRONG_LAST_SEQUENCE:
                raise
            return None
        return ack if ack.duplicate else None

