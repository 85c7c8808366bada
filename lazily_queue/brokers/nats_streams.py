"""What a NATS storage does when its stream is deleted or made again outside this library
(``nats stream rm``, a server restarted without its data): the object is declared again,
as where it is opened (a stream made again with settings it cannot use is refused
with :class:`~.errors.IncompatibleBrokerObject`), by the next refresh that finds the
stream gone or newer than the one it declared, and by a publish that no stream took
(nothing was stored), which is then sent once more.

nats-server 2.9 answers a stream's deletion before it has torn all of it down: a stream
made again under the name at once may lose its consumers' subscriptions (a pull is
never answered; seen 8 times in 60 deletions, none with a pause of 0.1 s), so a stream
found gone is made again :data:`SETTLE` seconds later (``again`` of
:meth:`~.nats_backend.NatsJetStreamStorage.stream`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import nats.js.errors as jserr

if TYPE_CHECKING:
    from .mirror import Declared
    from .nats_backend import NatsJetStreamStorage
    from .nats_requests import PubAck

#: Seconds between finding a stream gone and making it again.
SETTLE = 0.25


class StreamDeclared:
    """Mixed into a NATS storage (before its mirror class), whose ``_declare`` sets
    ``_created`` from the info of the stream it declared."""

    #: When the stream the object was last declared on was created.
    _created: Any = None
    #: When the stream the mirror was last read from was created.
    _mirrored: Any = None

    if TYPE_CHECKING:
        _backend: NatsJetStreamStorage
        _declared: Declared

        async def _ensure_declared(self) -> None: ...

    async def _redeclared(self, stream: str) -> tuple[Any, bool]:
        """The info of ``stream``, and whether the object was declared again first (the
        stream was gone, or made again since it was declared)."""
        js = self._backend.js
        try:
            info = await js.stream_info(stream)
        except jserr.NotFoundError:
            info = None
        if info is not None and info.created == self._created:
            return info, False
        self._declared.forget()
        await self._ensure_declared()
        return await js.stream_info(stream), True

    async def _stream_declared(self, stream: str) -> tuple[Any, bool]:
        """:meth:`_redeclared`'s info, and whether it is another stream than the one the
        mirror was last read from (what the mirror shows of that one is void)."""
        info, _ = await self._redeclared(stream)
        other = self._mirrored is not None and info.created != self._mirrored
        self._mirrored = info.created
        return info, other

    async def _send(self, stream: str, subject: str, data: bytes,
                    msg_id: str | None) -> PubAck:
        """Publish ``data`` (once per ``msg_id``, when given); when no stream takes
        ``subject`` and ``stream`` is gone or new, declare the object again and publish
        once more (otherwise the error stands: a closed queue's stream, say)."""
        try:
            return await self._publish_to(subject, data, msg_id)
        except jserr.NoStreamResponseError:
            _, again = await self._redeclared(stream)
            if not again:
                raise
        return await self._publish_to(subject, data, msg_id)

    async def _publish_to(self, subject: str, data: bytes, msg_id: str | None) -> PubAck:
        b = self._backend
        if msg_id is None:
            return await b.publish(subject, data)
        return await b.publish_once(subject, data, msg_id)
