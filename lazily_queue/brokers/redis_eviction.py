"""Whether a Redis server may evict this library's keys: a ``maxmemory`` with an
``allkeys-*`` policy (as a cache has) would drop queued elements silently. The settings
are read where the server is connected to (one that evicts is refused there) and again
while it is in use, at most every :data:`CHECK_INTERVAL` seconds and soon after the
connection to it was interrupted, so that an operator's later ``CONFIG SET`` refuses the
objects too."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from typing import Any

import redis.exceptions as rexc

from .errors import IncompatibleBrokerObject
from .redis_errors import mapped_errors

log = logging.getLogger(__name__)

#: Least seconds between two readings of the settings while the server is in use.
CHECK_INTERVAL = 1.0


class Eviction:
    """The eviction settings of the server ``client`` talks to, as last read.

    ``refusal`` is the error a server that evicts any key is refused with (``None``
    while it does not); ``changed`` is called when a reading finds the server newly
    evicting. A client that may not read the settings (``CONFIG`` refused or renamed)
    is taken with one warning, and they are not read again."""

    def __init__(self, client: Any, address: str, changed: Callable[[], None],
                 timeout: float) -> None:
        self._client = client
        self._address = address
        self._changed = changed
        self._timeout = timeout
        self.refusal: IncompatibleBrokerObject | None = None
        #: Loop time from which a use reads the settings again.
        self.due = 0.0
        self._reading: asyncio.Task[None] | None = None
        self._warned: str | None = None

    def read_soon(self) -> None:
        """Read the settings in the background when they are due and no reading is
        under way (its failure is left to the next one)."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.get_running_loop().create_task(self._read())
            self._reading.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def current(self) -> IncompatibleBrokerObject | None:
        """The refusal, once the settings were read again if they were due."""
        if asyncio.get_running_loop().time() >= self.due:
            self.read_soon()
            assert self._reading is not None
            await asyncio.shield(self._reading)
        return self.refusal

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        self.due = loop.time() + CHECK_INTERVAL
        async with mapped_errors(self._address, "reading its maxmemory-policy"):
            try:
                async with asyncio.timeout(self._timeout):
                    settings = await self._client.config_get("maxmemory*")
            except (rexc.ResponseError, TimeoutError) as exc:
                if isinstance(exc, rexc.ResponseError):
                    self.due = math.inf
                self._warn_once("unreadable", "redis at %s: cannot read its maxmemory-policy "
                                "(%s); make sure it never evicts keys (noeviction), or "
                                "queued elements can vanish", self._address, exc)
                return
        policy = str(settings.get("maxmemory-policy", ""))
        limit = str(settings.get("maxmemory", "0"))
        was, self.refusal = self.refusal, None
        if policy == "noeviction" or limit in ("", "0"):
            return
        if not policy.startswith("volatile-"):
            self.refusal = IncompatibleBrokerObject(
                f"redis at {self._address} evicts keys when it reaches its maxmemory "
                f"({limit} bytes, maxmemory-policy {policy}), which would drop queued "
                "elements silently: set maxmemory-policy noeviction (pushes are then "
                "refused with BrokerOutOfMemory when it is full) or use another server "
                "than a cache")
            if was is None:
                self._changed()
            return
        self._warn_once(policy, "redis at %s evicts keys with a TTL at its maxmemory (%s "
                        "bytes, maxmemory-policy %s): the keys remembering msg_ids may go "
                        "before their window ends, and a repeated msg_id then be stored "
                        "again; set maxmemory-policy noeviction to keep them",
                        self._address, limit, policy)

    def _warn_once(self, about: str, message: str, *args: Any) -> None:
        if self._warned != about:
            self._warned = about
            log.warning(message, *args)
