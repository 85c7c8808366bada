"""lazily signaling: the JSON frames that broker WebRTC setup, a room, a server and a client.

The server is untrusted plumbing: it only stamps ``from`` and routes. Peers
authenticate each other on the data channel they set up through it.
"""

from ._client import SignalingClient, SignalingError
from ._frames import (
    MAX_PEER_ID,
    Answer,
    ClientFrame,
    Error,
    ForwardedAnswer,
    ForwardedIce,
    ForwardedOffer,
    ForwardedRelay,
    Ice,
    Join,
    Leave,
    Offer,
    PeerJoined,
    PeerLeft,
    Relay,
    ServerFrame,
    SignalingFrameError,
    Welcome,
    decode_client_frame,
    decode_server_frame,
    dumps,
    encode_frame,
    loads,
)
from ._room import ErrorCode, Output, Permissions, RoomCore
from ._server import SignalingServer

__all__ = [
    "MAX_PEER_ID",
    "Answer",
    "ClientFrame",
    "Error",
    "ErrorCode",
    "ForwardedAnswer",
    "ForwardedIce",
    "ForwardedOffer",
    "ForwardedRelay",
    "Ice",
    "Join",
    "Leave",
    "Offer",
    "Output",
    "PeerJoined",
    "PeerLeft",
    "Permissions",
    "Relay",
    "RoomCore",
    "ServerFrame",
    "SignalingClient",
    "SignalingError",
    "SignalingFrameError",
    "SignalingServer",
    "Welcome",
    "decode_client_frame",
    "decode_server_frame",
    "dumps",
    "encode_frame",
    "loads",
]
