"""``lazily_queue.connect(broker_address, credentials)``: the cells of a process that is
not a cluster member, over an external broker.

    async with lazily_queue.connect("nats://127.0.0.1:4222") as client:
        jobs = client.work_queue("jobs", visibility_timeout=30)
        await jobs.push({"id": 1})
        async for job in jobs.deliveries("worker-1"):
            async with job:
                ...

A :class:`Client` hands out the same cell classes a :class:`~lazily_queue.Node` does
(:class:`QueueCell`, :class:`WorkQueueCell`, :class:`TopicCell`), with the same
awaitable API and reactive readers, over the storages of a *provider*: any object with
``queue(name, capacity=)``, ``work_queue(name, visibility_timeout=, max_deliveries=)``,
``topic(name)`` and ``close()``. ``connect`` picks the provider from the address scheme:

- ``nats://`` (``nats+tls://`` for TLS): :class:`~lazily_queue.brokers.NatsJetStreamStorage`;
- ``redis://`` (``rediss://`` for TLS): :class:`~lazily_queue.brokers.RedisStreamsStorage`.

Addresses of cluster members (``unix:``, ``tcp://``, ``ws://``, ``wss://``) go to
:class:`~lazily_queue.client.ClusterClient` instead (:func:`lazily_queue.connect`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from types import TracebackType
from typing import Any, NoReturn, Protocol, TypeVar, overload
from urllib.parse import urlsplit

from ..brokers.mirrors import QueueMirror
from ..cell_reopening import QueueBounds, queue_reopened
from ..cells import QueueCell, TopicCell, WorkQueueCell
from ..cells.job import settle_background_acks
from ..cells.prefetch import return_taken
from ..core.limits import REJECT, Limits
from ..core.scheduling import RetryPolicy
from ..errors import InvalidConfiguration, TransactionUnsupported, UnsupportedOperation
from ..names import check_name
from ..reactive import Context, resolve_context
from ..serializers import Serializer
from ..storage.queue import QueueStorage
from ..storage.topic import TopicStorage
from ..storage.work import WorkQueueStorage

T = TypeVar("T")

BrokerCredentials = str | Mapping[str, str] | None
"""A secret (``str``: a NATS token, a Redis password), or ``{"user": ..., "password":
...}`` / ``{"token": ...}`` (NATS); ``None`` to use what the address carries."""

BROKER_SCHEMES = {"nats": "nats", "nats+tls": "nats", "redis": "redis", "rediss": "redis"}
#: The options ``connect()`` passes to each broker's provider.
PROVIDER_OPTIONS = {"nats": frozenset({"poll_interval", "view_limit", "timeout"}),
                    "redis": frozenset({"poll_interval", "view_limit", "timeout", "prefix"})}
#: The keys a ``credentials`` mapping may have for each broker.
CREDENTIAL_KEYS = {"nats": frozenset({"user", "password", "token"}),
                   "redis": frozenset({"user", "password"})}


class StorageProvider(Protocol):
    """What a :class:`Client` needs from a backend: one storage per named object."""

    def queue(self, name: str, *, capacity: int | None = None) -> QueueStorage[Any]: ...

    def work_queue(
        self, name: str, *, visibility_timeout: float, max_deliveries: int
    ) -> WorkQueueStorage: ...

    def topic(self, name: str) -> TopicStorage[Any]: ...

    async def close(self) -> None: ...


class Client:
    """Cells over a :class:`StorageProvider`, one per name, on one reactive context."""

    def __init__(self, provider: StorageProvider, *, context: Context | None = None,
                 address: str = "") -> None:
        self.provider = provider
        self.address = address
        self.ctx = resolve_context(context)
        self._queues: dict[str, QueueCell[Any]] = {}
        self._queue_bounds: dict[str, QueueBounds] = {}
        self._work: dict[str, WorkQueueCell] = {}
        self._topics: dict[str, TopicCell[Any]] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"Client({self.address or self.provider!r})"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

    @overload
    def queue(self, name: str, *, capacity: int | None = None, serializer: Serializer[T],
              limits: Limits | None = None, ttl: float | None = None) -> QueueCell[T]: ...

    @overload
    def queue(self, name: str, *, capacity: int | None = None, serializer: None = None,
              limits: Limits | None = None, ttl: float | None = None) -> QueueCell[Any]: ...

    def queue(self, name: str, *, capacity: int | None = None,
              serializer: Serializer[Any] | None = None, limits: Limits | None = None,
              ttl: float | None = None) -> QueueCell[Any]:
        """The queue ``name`` (created on first use with ``capacity``), taking a node's
        arguments. A broker bounds a queue's length with ``reject`` only: ``limits`` may
        be ``Limits(max_length=n)`` (the same broker object as ``capacity=n``, though
        this client refuses to reopen a queue with the other form, as a node does);
        other limits and a ``ttl`` raise
        :class:`~lazily_queue.errors.UnsupportedOperation` naming the broker."""
        self._check_open()
        check_name(name, "queue name")
        self._no_expiry("queue", name, ttl=ttl)
        bound = capacity if limits is None else self._broker_capacity(name, capacity, limits)
        cell = self._queues.get(name)
        if cell is None:
            storage = self.provider.queue(name, capacity=bound)
            if isinstance(storage, QueueMirror):  # reported as the cell's limits()
                storage.declared_limits = limits
            cell = self._queues[name] = QueueCell(storage, context=self.ctx, name=name,
                                                  serializer=serializer)
            self._queue_bounds[name] = (capacity, limits)
        elif (mismatch := queue_reopened(name, self._queue_bounds[name],
                                         (capacity, limits))) is not None:
            raise mismatch  # as a node refuses it, though the broker object is the same
        _same_serializer("queue", name, cell.serializer, serializer)
        return cell

    def _no_expiry(self, kind: str, name: str, **rules: float | None) -> None:
        given = [f"{key}={value!r}" for key, value in rules.items() if value is not None]
        if given:
            raise UnsupportedOperation(
                f"{kind} {name!r}: the {type(self.provider).__name__} backend has no message "
                f"expiry, not {', '.join(given)}; open it without them, or use a cluster's "
                "cells for expiry")

    def _broker_capacity(self, name: str, capacity: int | None, limits: Limits) -> int | None:
        if capacity is not None:
            raise ValueError("give the bound as Limits(max_length=...) or capacity=, not both")
        if limits.max_bytes is None and limits.overflow == REJECT:
            return limits.max_length
        raise self._no_limits("queue", name, limits, " bounds a queue's length with "
                              "overflow='reject' only (Limits(max_length=n), or capacity=n)")

    def _no_limits(self, kind: str, name: str, limits: Limits,
                   what: str = " has no limits for it") -> UnsupportedOperation:
        return UnsupportedOperation(
            f"{kind} {name!r}: the {type(self.provider).__name__} backend{what}, not "
            f"{limits.describe()}; use a cluster's cells for max_bytes, drop_oldest and "
            "retention")

    def work_queue(
        self, name: str, *, visibility_timeout: float = 30.0, max_deliveries: int = 3,
        serializer: Serializer[Any] | None = None, retry: RetryPolicy | None = None,
        ttl: float | None = None, limits: Limits | None = None,
    ) -> WorkQueueCell:
        """The work queue ``name``: leases of ``visibility_timeout`` seconds, dead letters
        after ``max_deliveries`` attempts (``retry``, ``ttl``, ``limits``: refused, a
        broker has no back-off, expiry or limits of ours)."""
        self._check_open()
        check_name(name, "work queue name")
        self._no_expiry("work queue", name, ttl=ttl)
        if retry is not None:
            raise UnsupportedOperation(
                f"work queue {name!r}: the {type(self.provider).__name__} backend has no "
                "retry back-off (no 'scheduling' capability): a nacked or expired job is "
                "delivered again at once; open it without retry=")
        if limits is not None:
            raise self._no_limits("work queue", name, limits)
        cell = self._work.get(name)
        if cell is None:
            storage = self.provider.work_queue(
                name, visibility_timeout=visibility_timeout, max_deliveries=max_deliveries)
            cell = self._work[name] = WorkQueueCell(storage, context=self.ctx, name=name,
                                                    serializer=serializer)
        elif (cell.visibility_timeout, cell.max_deliveries) != (
                visibility_timeout, max_deliveries):
            raise InvalidConfiguration(
                f"work queue {name!r} is already open with visibility_timeout "
                f"{cell.visibility_timeout} and max_deliveries {cell.max_deliveries}")
        _same_serializer("work queue", name, cell.serializer, serializer)
        return cell

    @overload
    def topic(self, name: str, *, serializer: Serializer[T], limits: Limits | None = None,
              ttl: float | None = None, max_age: float | None = None) -> TopicCell[T]: ...

    @overload
    def topic(self, name: str, *, serializer: None = None, limits: Limits | None = None,
              ttl: float | None = None, max_age: float | None = None) -> TopicCell[Any]: ...

    def topic(self, name: str, *, serializer: Serializer[Any] | None = None,
              limits: Limits | None = None, ttl: float | None = None,
              max_age: float | None = None) -> TopicCell[Any]:
        """The topic ``name`` (``limits``, ``ttl``, ``max_age``: refused, a broker topic
        keeps no retention limits of ours)."""
        self._check_open()
        check_name(name, "topic name")
        self._no_expiry("topic", name, ttl=ttl, max_age=max_age)
        if limits is not None:
            raise self._no_limits("topic", name, limits)
        cell = self._topics.get(name)
        if cell is None:
            cell = self._topics[name] = TopicCell(
                self.provider.topic(name), context=self.ctx, name=name, serializer=serializer)
        _same_serializer("topic", name, cell.serializer, serializer)
        return cell

    def transaction(self) -> NoReturn:
        """Refused: a broker commits each operation on its own."""
        raise TransactionUnsupported(
            f"the {type(self.provider).__name__} backend has no transactions: each push, "
            "publish, ack and nack commits on its own; give pushes a msg_id to retry them "
            "safely, or use a cluster's cells (node.transaction(), client.transaction())")

    async def close(self) -> None:
        """Stop the cells' refreshes and close the connection (idempotent)."""
        if not self._closed:
            self._closed = True
            await return_taken([*(cell.storage for cell in self._queues.values()),
                                *(cell.storage for cell in self._work.values())])
            await settle_background_acks([cell.storage for cell in self._work.values()])
            await self.provider.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _same_serializer(kind: str, name: str, opened: object, asked: object) -> None:
    if asked is not opened:
        raise InvalidConfiguration(
            f"{kind} {name!r} is already open with serializer {opened!r}, not {asked!r}; "
            "open it once and share the cell")


class Connecting:
    """What :func:`connect` returns: ``await`` it for a :class:`Client`, or use it as
    ``async with connect(...) as client`` (closed on exit)."""

    def __init__(
        self, address: str, credentials: BrokerCredentials, options: dict[str, Any]
    ) -> None:
        self.address = address
        self.credentials = credentials
        self.options = options
        self._client: Client | None = None

    def __await__(self) -> Generator[Any, None, Client]:
        return self._open().__await__()

    async def __aenter__(self) -> Client:
        self._client = await self._open()
        return self._client

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._client is not None:
            await self._client.close()

    async def _open(self) -> Client:
        context = self.options.pop("context", None)
        provider = await open_provider(self.address, self.credentials, **self.options)
        return Client(provider, context=context, address=self.address)


def connect(address: str, credentials: BrokerCredentials = None, **options: Any) -> Connecting:
    """A :class:`Client` for ``address`` (see the module docstring for the schemes).

    ``options`` go to the provider (``poll_interval``, ``view_limit``, ...) and may
    include ``context`` for the cells. Raises
    :class:`~lazily_queue.brokers.errors.UnsupportedAddress` for other schemes,
    :class:`~lazily_queue.brokers.errors.BrokerUnavailable` when the broker cannot be
    reached and :class:`~lazily_queue.brokers.errors.BrokerAuthenticationFailed` when it
    refuses the credentials.
    """
    scheme_of(address)
    return Connecting(address, credentials, dict(options))


def scheme_of(address: str) -> str:
    """``"nats"`` or ``"redis"`` for a broker address; raises ``UnsupportedAddress``."""
    from ..brokers.errors import UnsupportedAddress

    if not isinstance(address, str):
        raise UnsupportedAddress(f"an address must be a string, got {type(address).__name__}")
    parts = urlsplit(address)
    scheme = parts.scheme.lower()
    kind = BROKER_SCHEMES.get(scheme)
    if kind is None:
        raise UnsupportedAddress(
            f"cannot connect to {address!r}: connect() serves brokers at nats://, "
            "nats+tls://, redis:// and rediss:// and cluster members at unix:, tcp://, tls://, "
            "ws:// or wss://")
    try:
        _ = parts.port  # raises ValueError when it is not a number
    except ValueError:
        port = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise UnsupportedAddress(
            f"cannot connect to {scheme}://{parts.hostname or '?'}: its port {port!r} is not "
            "a number from 0 to 65535") from None
    return kind


async def open_provider(address: str, credentials: BrokerCredentials = None,
                        **options: Any) -> StorageProvider:
    """The broker storage provider for ``address``, connected."""
    kind = scheme_of(address)
    unknown = sorted(set(options) - PROVIDER_OPTIONS[kind])
    if unknown:
        raise InvalidConfiguration(
            f"connect() to a {kind} broker takes no option {', '.join(map(repr, unknown))}; "
            f"it takes {', '.join(sorted(PROVIDER_OPTIONS[kind]))} (and context)")
    secret: dict[str, str] = {}
    if isinstance(credentials, str):
        secret["token" if kind == "nats" else "password"] = credentials
    elif credentials is not None:
        if not isinstance(credentials, Mapping):
            raise InvalidConfiguration(
                "credentials must be a str (a token or password) or a mapping, not "
                f"{type(credentials).__name__}")
        wrong = sorted(set(credentials) - CREDENTIAL_KEYS[kind])
        if wrong:
            raise InvalidConfiguration(
                f"credentials for a {kind} broker take {', '.join(sorted(CREDENTIAL_KEYS[kind]))}"
                f", not {', '.join(map(repr, wrong))}")
        secret.update(credentials)
    if kind == "nats":
        from ..brokers.nats_backend import NatsJetStreamStorage

        url = "tls" + address[len("nats+tls"):] if address.startswith("nats+tls") else address
        return await NatsJetStreamStorage.connect(url, **secret, **options)
    from ..brokers.redis_backend import RedisStreamsStorage

    if "user" in secret:
        options["username"] = secret.pop("user")
    return await RedisStreamsStorage.connect(address, **secret, **options)
