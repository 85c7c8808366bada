"""WebRTC links (``webrtc://``, ``webrtc+ws://``, ``webrtc+wss://``) and their signaling.

The links need aiortc, installed by the ``webrtc`` extra
(``pip install -e '.[webrtc]'`` in the lazily-queue clone); without it, reading any name
below raises
``MissingDependencyError`` naming the extra. ``lazily_transports.webrtc.signaling``
(the signaling server, client and frames) needs only websockets and always imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import MissingDependencyError

if TYPE_CHECKING:
    from .channel import MESSAGE_SIZE, PROTOCOL, WebRTCChannel
    from .ice import IceSettings
    from .transport import WebRTCAddress, WebRTCListener, WebRTCTransport, parse_webrtc_address

__all__ = [
    "MESSAGE_SIZE",
    "PROTOCOL",
    "IceSettings",
    "WebRTCAddress",
    "WebRTCChannel",
    "WebRTCListener",
    "WebRTCTransport",
    "parse_webrtc_address",
]

_HOMES = {
    "MESSAGE_SIZE": "channel",
    "PROTOCOL": "channel",
    "WebRTCChannel": "channel",
    "IceSettings": "ice",
    "WebRTCAddress": "transport",
    "WebRTCListener": "transport",
    "WebRTCTransport": "transport",
    "parse_webrtc_address": "transport",
}


def require_aiortc() -> None:
    """Raise ``MissingDependencyError`` unless aiortc (the ``webrtc`` extra) imports."""
    try:
        importlib.import_module("aiortc")
    except ImportError as exc:
        raise MissingDependencyError("WebRTC links", "webrtc", "aiortc") from exc


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require_aiortc()
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
