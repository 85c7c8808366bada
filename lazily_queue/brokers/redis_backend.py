"""RedisStreamsStorage: the cells' storages on one Redis server (redis-py asyncio).

``RedisStreamsStorage`` owns a connection pool and hands out one storage per object:
:meth:`~RedisStreamsStorage.queue` (a list), :meth:`~RedisStreamsStorage.work_queue` (a
stream with one consumer group) and :meth:`~RedisStreamsStorage.topic` (a stream with a
consumer group per subscriber). Keys are ``{prefix}:{<kind>:<name>}:<part>``, so one
object's keys share a cluster hash slot. Every mutation is a Lua script (atomic) that
also publishes on the object's change channel (at most one message per object every
5 ms); mirrors refresh on those messages (and once more after that window), on keyspace
events when the server emits them, and every ``poll_interval`` seconds.

Durability is the server's: run it with ``appendonly yes`` and ``appendfsync always``
for a reply to mean the change is on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
import redis.exceptions as rexc

from ..names import check_name
from . import redis_once_scripts, redis_queue_scripts, redis_scripts, redis_topic_scripts
from .errors import BrokerUnavailable, UnsupportedAddress
from .mirror import DEFAULT_POLL_INTERVAL, DEFAULT_VIEW_LIMIT, check_options
from .redis_errors import mapped_errors
from .redis_eviction import Eviction

log = logging.getLogger(__name__)

Listener = Callable[[], None]
SCRIPTS: dict[str, str] = {
    name: text for module in (redis_scripts, redis_queue_scripts, redis_topic_scripts,
                   redis_once_scripts)
    for name, text in vars(module).items() if name.isupper() and not name.startswith("_")
}
#: Pipelines (connections) a storage keeps in flight at once.
PIPELINES = 4
#: Seconds :meth:`RedisStreamsStorage.connect` waits for the server to take the
#: connection and answer its first command (an operation's answer may take longer).
CONNECT_TIMEOUT = 5.0
#: Seconds a call waits for the server's answer unless ``connect(timeout=)`` says
#: otherwise (the client's socket timeout).
REPLY_TIMEOUT = 30.0
#: A listener refreshes again this long after a change message: the scripts send at most
#: one per object every 5 ms (see :data:`~.redis_scripts._NOTIFY`).
QUIET_SECONDS = 0.007


def _checked_pool() -> dict[str, Any]:
    """Options that keep the pool checking a connection before handing it out.

    redis-py >= 7 skips that check (a closed socket is reconnected there, before
    anything is sent) while maintenance notifications are on, and they are on
    ("auto") by default: after a server restart every pooled connection then failed the
    next call made on it with "Connection closed by server" (BrokerUnavailable from a
    server that is up). This backend reads no maintenance notifications."""
    try:
        from redis.maint_notifications import MaintNotificationsConfig
    except ImportError:  # redis-py < 7: the pool always checks
        return {}
    return {"maint_notifications_config": MaintNotificationsConfig(enabled=False)}


_CHECKED_POOL = _checked_pool()


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _bad_address(url: str, exc: Exception) -> UnsupportedAddress:
    return UnsupportedAddress(
        f"cannot connect to {redacted(url)}: redis-py refused the address ({exc}); give "
        "redis://[:password@]host:port/db, with options as connect() arguments")


class RedisStreamsStorage:
    """Storages for queues, work queues and topics on one Redis database."""

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        address: str = "redis",
        prefix: str = "lq",
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        view_limit: int = DEFAULT_VIEW_LIMIT,
        owns_client: bool = False,
    ) -> None:
        self.client = client
        self.address = address
        self.prefix = prefix
        self.poll_interval = poll_interval
        self.view_limit = view_limit
        self._owns_client = owns_client
        self._scripts: dict[str, str] = {}
        self._channels: dict[str, list[Listener]] = {}
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._objects: list[Any] = []
        self._closed = False
        self._batch: list[tuple[str, list[str], list[Any], asyncio.Future[Any]]] = []
        self._flushers: set[asyncio.Task[None]] = set()
        self._sending = 0
        self._eviction = Eviction(client, address, self._evicting, CONNECT_TIMEOUT)

    @classmethod
    async def connect(
        cls, url: str, *, password: str | None = None, username: str | None = None,
        **options: Any,
    ) -> RedisStreamsStorage:
        """Connect to ``redis://[:password@]host:port/db`` (or ``rediss://`` for TLS) and
        check the server answers, within :data:`CONNECT_TIMEOUT` seconds; a call then
        waits up to ``timeout`` seconds (:data:`REPLY_TIMEOUT`) for an answer. Raises
        :class:`BrokerUnavailable` (naming the address) or
        :class:`BrokerAuthenticationFailed`."""
        check_options(options)
        db = urlsplit(url).path.strip("/")
        if db and not (db.isascii() and db.isdigit()):
            raise UnsupportedAddress(
                f"cannot connect to {redacted(url)}: the database {db!r} is not a number "
                "(redis://[:password@]host:port/db, db from 0)")
        kwargs: dict[str, Any] = {"socket_connect_timeout": CONNECT_TIMEOUT,
                                  "socket_timeout": options.pop("timeout", REPLY_TIMEOUT)}
        kwargs.update(_CHECKED_POOL)
        if password is not None:
            kwargs["password"] = password
        if username is not None:
            kwargs["username"] = username
        try:
            client = aioredis.Redis.from_url(url, **kwargs)
        except (TypeError, ValueError) as exc:
            raise _bad_address(url, exc) from None
        self = cls(client, address=redacted(url), owns_client=True, **options)
        try:
            await self._first_answer()
        except TypeError as exc:  # a query option the connection does not take
            await client.aclose()
            raise _bad_address(url, exc) from None
        except BaseException:
            await client.aclose()
            raise
        return self

    def __repr__(self) -> str:
        return f"RedisStreamsStorage({self.address!r})"

    async def _first_answer(self) -> None:
        """A ``PING`` answered within :data:`CONNECT_TIMEOUT`: a port that takes the
        connection but never answers (not a server, a stopped process) fails then."""
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT), self.errors("connecting"):
                await self.client.ping()
        except TimeoutError:
            raise BrokerUnavailable(
                f"redis at {self.address} did not answer within {CONNECT_TIMEOUT:g} s of "
                "connecting: check the host and port, and that the server is running and "
                "not overloaded") from None
        refusal = await self._eviction.current()
        if refusal is not None:
            raise refusal

    # -- objects -------------------------------------------------------------------------

    def key(self, kind: str, name: str, part: str) -> str:
        """The key of ``part`` of object ``name`` (:class:`~lazily_queue.errors.InvalidName`
        unless the name passes :func:`~lazily_queue.names.check_name`)."""
        return f"{self.prefix}:{{{kind}:{check_name(name)}}}:{part}"

    def once_key(self, kind: str, name: str, msg_id: str) -> str:
        """The key that remembers a producer's ``msg_id`` for the object (a digest:
        every id makes a key of the same short length)."""
        digest = hashlib.blake2b(msg_id.encode(), digest_size=16).hexdigest()
        return self.key(kind, name, f"once:{digest}")

    def queue(self, name: str, *, capacity: int | None = None) -> Any:
        from .redis_queue import RedisQueueStorage

        return self._track(RedisQueueStorage(self, name, capacity=capacity))

    def work_queue(self, name: str, *, visibility_timeout: float, max_deliveries: int) -> Any:
        from .redis_work import RedisWorkQueueStorage

        return self._track(RedisWorkQueueStorage(
            self, name, visibility_timeout=visibility_timeout, max_deliveries=max_deliveries))

    def topic(self, name: str) -> Any:
        from .redis_topic import RedisTopicStorage

        return self._track(RedisTopicStorage(self, name))

    def _track(self, storage: Any) -> Any:
        self._objects.append(storage)
        return storage

    def _evicting(self) -> None:
        """The server was found evicting keys: every object is checked again (and refused)."""
        for storage in self._objects:
            storage.redeclare()

    async def declare(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run the declaring script ``name`` (see :meth:`run`), once the server is known
        not to evict keys (:mod:`.redis_eviction`): :class:`IncompatibleBrokerObject`
        while it does."""
        refusal = await self._eviction.current()
        if refusal is not None:
            raise type(refusal)(str(refusal))
        return await self.run(name, keys, args)

    async def close(self) -> None:
        """Stop every storage's refreshes and the notification reader; close the pool
        when this object opened it."""
        if self._closed:
            return
        self._closed = True
        for storage in self._objects:
            await storage.aclose()
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
        if self._owns_client:
            with contextlib.suppress(Exception):
                await self.client.aclose()

    # -- scripts and errors ----------------------------------------------------------------

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run the script ``name`` of :mod:`.redis_scripts` or :mod:`.redis_topic_scripts`
        (EVALSHA, loaded on demand).

        The calls made while round trips are in flight go together in the next pipeline;
        up to :data:`PIPELINES` pipelines (connections) are in flight at once, so calls
        made concurrently may run in any order (an object's pushes keep theirs: each
        object sends them in one script call at a time, see :mod:`.batching`).
        """
        loop = asyncio.get_running_loop()
        if loop.time() >= self._eviction.due:
            self._eviction.read_soon()
        future: asyncio.Future[Any] = loop.create_future()
        self._batch.append((name, keys, args, future))
        if len(self._flushers) == self._sending and self._sending < PIPELINES:
            task = loop.create_task(self._flush())
            self._flushers.add(task)
            task.add_done_callback(self._flushers.discard)
        return await future

    def _sha(self, name: str) -> str:
        sha = self._scripts.get(name)
        if sha is None:
            sha = self._scripts[name] = hashlib.sha1(SCRIPTS[name].encode()).hexdigest()
        return str(sha)

    async def _pipeline(self, batch: list[Any]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for name, keys, args, _ in batch:
            pipe.execute_command("EVALSHA", self._sha(name), len(keys), *keys, *args)
        return list(await pipe.execute(raise_on_error=False))

    async def _execute(self, batch: list[Any]) -> list[Any]:
        """One pipeline of EVALSHA calls; scripts the server does not have (first use,
        or a restart emptied its cache) are loaded and their calls sent again, in order
        (right after such a reload, calls of different scripts may interleave)."""
        results = await self._pipeline(batch)
        missing = [i for i, r in enumerate(results) if isinstance(r, rexc.NoScriptError)]
        if missing:
            for name in {batch[i][0] for i in missing}:
                await self.client.script_load(SCRIPTS[name])
            again = await self._pipeline([batch[i] for i in missing])
            for i, result in zip(missing, again, strict=True):
                results[i] = result
        return results

    async def _flush(self) -> None:
        try:
            while self._batch:
                batch, self._batch = self._batch, []
                self._sending += 1
                try:
                    await self._send(batch)
                finally:
                    self._sending -= 1
        finally:
            # Leaves the set in the same step as it finds nothing more to send, so a
            # call made after this step starts a new flusher.
            self._flushers.discard(asyncio.current_task())

    async def _send(self, batch: list[Any]) -> None:
        try:
            async with self.errors("sending a pipeline"):
                results = await self._execute(batch)
        except Exception as exc:
            for *_, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (name, *_, future), result in zip(batch, results, strict=True):
            if future.done():
                continue
            if isinstance(result, Exception):
                try:
                    async with self.errors(name.lower().replace("_", " ")):
                        raise result
                except Exception as exc:
                    future.set_exception(exc)
            else:
                future.set_result(result)

    def errors(self, doing: str) -> AbstractAsyncContextManager[None]:
        """Map redis-py's exceptions to the typed broker errors (:mod:`.redis_errors`)."""
        return mapped_errors(self.address, doing)

    # -- notifications -----------------------------------------------------------------------

    def listen(self, channel: str, key: str, listener: Listener) -> None:
        """Call ``listener`` on every message of ``channel`` and on keyspace events of
        ``key`` (when the server emits them)."""
        self._channels.setdefault(channel, []).append(listener)
        db = self.client.connection_pool.connection_kwargs.get("db", 0)
        self._channels.setdefault(f"__keyspace@{db}__:{key}", []).append(listener)
        if self._reader is None and not self._closed:
            self._reader = asyncio.get_running_loop().create_task(self._read_notifications())
        elif self._pubsub is not None:
            asyncio.get_running_loop().create_task(self._subscribe_quietly())

    async def _subscribe_quietly(self) -> None:
        with contextlib.suppress(Exception):
            await self._pubsub.subscribe(*self._channels)

    async def _read_notifications(self) -> None:
        backoff = 0.05
        while not self._closed:
            try:
                self._pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                await self._pubsub.subscribe(*self._channels)
                backoff = 0.05
                while True:
                    message = await self._pubsub.get_message(timeout=self.poll_interval)
                    if message is None:
                        continue
                    channel = message.get("channel")
                    if isinstance(channel, bytes):
                        channel = channel.decode()
                    loop = asyncio.get_running_loop()
                    for listener in self._channels.get(channel, ()):
                        listener()
                        # the scripts announce at most one change per QUIET window
                        loop.call_later(QUIET_SECONDS, listener)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("redis notifications from %s interrupted: %s", self.address, exc)
                with contextlib.suppress(Exception):
                    await self._pubsub.aclose()
                self._eviction.due = 0.0  # its settings may have changed meanwhile
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.poll_interval)
                for listeners in list(self._channels.values()):
                    for listener in listeners:
                        listener()
