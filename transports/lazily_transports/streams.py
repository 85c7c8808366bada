"""``LinkStream``, the authenticated link every entry point hands out, and ``establish``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._core._authentication import (
    CredentialLookup,
    FailureReport,
    PeerFilter,
    PeerVetter,
    ProbeAnswer,
    exchange,
)
from .abc import DataChannel, FrameStream, LinkAttribute
from .config import LinkConfig

__all__ = ["LinkStream", "establish"]


class LinkStream(FrameStream):
    """An authenticated link to one peer, over a raw ``DataChannel``.

    The handshake's outcome is read as typed attributes (``LinkAttribute``), e.g.
    ``stream.extra(LinkAttribute.peer_id)``; they never change for the stream's life.
    Sending, receiving and waiting are the raw channel's own bound methods, so a frame
    costs what it costs on ``channel``; closing the stream closes the channel.
    """

    def __init__(self, channel: DataChannel, attributes: Mapping[Any, Callable[[], Any]]) -> None:
        self.channel = channel
        self._attributes: dict[Any, Callable[[], Any]] = {
            **channel.extra_attributes,
            **attributes,
        }
        # Instance attributes shadow the delegating methods below: no call in between.
        self.send_nowait = channel.send_nowait  # type: ignore[method-assign]
        self.send = channel.send  # type: ignore[method-assign]
        self.receive_nowait = channel.receive_nowait  # type: ignore[method-assign]
        self.receive = channel.receive  # type: ignore[method-assign]
        self.wait_send_ready = channel.wait_send_ready  # type: ignore[method-assign]
        self.wait_receive_ready = channel.wait_receive_ready  # type: ignore[method-assign]
        self.flush = channel.flush  # type: ignore[method-assign]

    def flush(self) -> None:
        """Hand frames queued by ``send_nowait`` to the connection now rather than later
        in this loop iteration (see :meth:`DataChannel.flush`)."""
        self.channel.flush()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return self._attributes

    def send_nowait(self, item: bytes) -> None:
        self.channel.send_nowait(item)

    async def send(self, item: bytes) -> None:
        await self.channel.send(item)

    def receive_nowait(self) -> bytes:
        return self.channel.receive_nowait()

    async def receive(self) -> bytes:
        return await self.channel.receive()

    def send_ready(self) -> bool:
        return self.channel.send_ready()

    async def wait_send_ready(self) -> None:
        await self.channel.wait_send_ready()

    async def wait_receive_ready(self) -> None:
        await self.channel.wait_receive_ready()

    @property
    def close_reason(self) -> str | None:
        return self.channel.close_reason

    async def send_eof(self) -> None:
        await self.channel.send_eof()

    async def aclose(self) -> None:
        await self.channel.aclose()

    def abort(self) -> None:
        """Close now, dropping the frames not yet handed to the operating system
        (``channel.sent_bytes`` tells how many bytes may have left)."""
        self.channel.abort()

    def __repr__(self) -> str:
        peer = self.extra(LinkAttribute.peer_id)
        epoch = self.extra(LinkAttribute.epoch)
        return f"<LinkStream peer={peer} epoch={epoch} over {self.channel!r}>"


async def establish(
    channel: DataChannel,
    config: LinkConfig,
    *,
    initiator: bool,
    accept_peer: PeerFilter | None = None,
    admit: PeerVetter | None = None,
    answer_probe: ProbeAnswer | None = None,
    on_failure: FailureReport | None = None,
    credentials: CredentialLookup | None = None,
) -> LinkStream:
    """Run handshake and authentication on a raw ``channel``; return the authenticated link.

    ``initiator`` is True on the dialing side. ``accept_peer`` may refuse the announced
    peer id before authentication and ``admit`` the authenticated one after it (both
    refusals are sent to the peer, field ``peer_id``); the id is bound into the
    authentication, so the stream's ``LinkAttribute.peer_id`` is the one checked.
    Until both sides sent ``ready`` the channel keeps the handshake limits
    (``HANDSHAKE_FRAME_LIMIT``, one frame queued); each side raises them to the
    negotiated ones before sending its ``ready``, so no payload frame can outrun them.
    An accepting side that receives a probe hello (``PROBE_FEATURE``) answers it
    after authentication with ``answer_probe``'s note, closes the channel and raises
    ``ProbeAnswered``. On any failure the channel is closed and a ``HandshakeError``
    subclass naming the field is raised (``AuthenticationError``,
    ``IncompatiblePeerError``, ``PeerRejectedError``, ``HandshakeTimeoutError``), after
    it was logged, or passed to ``on_failure`` instead when given.

    ``credentials`` lets the accepting side take *client* links: a dialer that names a
    credential (``LinkConfig.credential``) proves that credential's token, which
    ``credentials(name)`` returns (``None`` refuses the name, field ``credential``);
    without it client hellos are refused. ``LinkAttribute.credential`` names the
    client on both ends of such a link and is ``None`` between peers.
    """
    agreed = await exchange(
        channel,
        config,
        initiator=initiator,
        accept_peer=accept_peer,
        admit=admit,
        answer_probe=answer_probe,
        on_failure=on_failure,
        credentials=credentials,
    )
    remote, negotiated = agreed.remote, agreed.negotiated
    values: dict[Any, Any] = {
        LinkAttribute.local_peer_id: config.peer_id,
        LinkAttribute.peer_id: remote.peer_id,
        LinkAttribute.session_id: config.session_id,
        LinkAttribute.epoch: agreed.epoch,
        LinkAttribute.remote_features: remote.features,
        LinkAttribute.max_frame_size: negotiated.max_frame_size,
        LinkAttribute.fragmentation_supported: negotiated.fragmentation_supported,
        LinkAttribute.authenticated: agreed.authenticated,
        LinkAttribute.credential: agreed.credential,
        LinkAttribute.credential_token: agreed.credential_token,
    }
    return LinkStream(channel, {key: _constant(value) for key, value in values.items()})


def _constant(value: Any) -> Callable[[], Any]:
    return lambda: value
