"""Typed lazily signaling frames and their canonical JSON wire form.

Frames are JSON objects tagged by ``type`` (kebab-case). Every object is closed
(no extra keys) and the tag set is closed. Client frames address a peer with
``to``; the server forwards them with ``from`` stamped from the sender's
registered peer id, so a client frame carrying ``from`` is rejected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from itertools import pairwise
from typing import Any, Literal, TypeAlias

from ...safe_cbor import brief as _brief
from ...safe_cbor import collection_paused
from ._json import MAX_DEPTH, MAX_FRAME_BYTES, MAX_INT_DIGITS, JSONLimitError, check, parse_int

__all__ = [
    "MAX_DEPTH",
    "MAX_FRAME_BYTES",
    "MAX_INT_DIGITS",
    "MAX_PEER_ID",
    "Answer",
    "ClientFrame",
    "Error",
    "ForwardedAnswer",
    "ForwardedIce",
    "ForwardedOffer",
    "ForwardedRelay",
    "Ice",
    "Join",
    "Leave",
    "Offer",
    "PeerJoined",
    "PeerLeft",
    "Relay",
    "ServerFrame",
    "SignalingFrameError",
    "Welcome",
    "decode_client_frame",
    "decode_server_frame",
    "dumps",
    "encode_frame",
    "loads",
]

MAX_PEER_ID = 2**53 - 1
"""Largest peer id: peers are bare JSON integers that every JSON number type holds exactly."""

Direction: TypeAlias = Literal["client", "server"]


class SignalingFrameError(ValueError):
    """A signaling frame is not valid JSON or does not match the frame grammar."""


def _check_peer(value: object, field: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_PEER_ID:
        raise SignalingFrameError(
            f"{field!r} must be an integer in [0, 2**53-1], got {_brief(value)}"
        )
    return value


def _check_str(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise SignalingFrameError(f"{field!r} must be a string, got {type(value).__name__}")
    return value


def _check_json(value: object, field: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise SignalingFrameError(f"{field!r} must be a JSON value: {exc}") from None


_PEER_FIELDS = frozenset({"peer", "to", "from_"})
_TEXT_FIELDS = frozenset({"sdp", "candidate", "message"})


class _Frame:
    """Validates the common fields of every frame dataclass by name."""

    __slots__ = ()

    def __post_init__(self) -> None:
        for spec in fields(self):  # type: ignore[arg-type]
            name, value = spec.name, getattr(self, spec.name)
            if name in _PEER_FIELDS:
                _check_peer(value, _wire_key(name))
            elif name in _TEXT_FIELDS:
                _check_str(value, name)
            elif name == "payload":
                _check_json(value, name)


# --------------------------------------------------------------------------- client -> server


@dataclass(frozen=True, slots=True)
class Join(_Frame):
    """Register this connection as ``peer`` in the room."""

    peer: int
    capabilities: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _Frame.__post_init__(self)
        if self.capabilities is not None:
            if isinstance(self.capabilities, str | bytes) or not isinstance(
                self.capabilities, Sequence
            ):
                raise SignalingFrameError("'capabilities' must be a list of strings")
            for item in self.capabilities:
                _check_str(item, "capabilities[]")
            object.__setattr__(self, "capabilities", tuple(self.capabilities))


@dataclass(frozen=True, slots=True)
class Offer(_Frame):
    """An SDP offer for peer ``to``."""

    to: int
    sdp: str


@dataclass(frozen=True, slots=True)
class Answer(_Frame):
    """An SDP answer for peer ``to``."""

    to: int
    sdp: str


@dataclass(frozen=True, slots=True)
class Ice(_Frame):
    """One trickled ICE candidate (SDP ``candidate:`` line) for peer ``to``."""

    to: int
    candidate: str


@dataclass(frozen=True, slots=True)
class Relay(_Frame):
    """An opaque JSON payload for peer ``to``."""

    to: int
    payload: Any


@dataclass(frozen=True, slots=True)
class Leave(_Frame):
    """Leave the room; the connection stays open and may join again."""


# --------------------------------------------------------------------------- server -> client


@dataclass(frozen=True, slots=True)
class Welcome(_Frame):
    """Join accepted: ``peers`` is the rest of the room, ascending, without ``peer``."""

    peer: int
    peers: tuple[int, ...]

    def __post_init__(self) -> None:
        _Frame.__post_init__(self)
        if isinstance(self.peers, str | bytes) or not isinstance(self.peers, Sequence):
            raise SignalingFrameError("'peers' must be a list of peer ids")
        peers = tuple(_check_peer(p, "peers[]") for p in self.peers)
        if self.peer in peers:
            raise SignalingFrameError(f"welcome roster must exclude the joining peer {self.peer}")
        if any(a >= b for a, b in pairwise(peers)):
            raise SignalingFrameError("welcome roster must be sorted ascending without duplicates")
        object.__setattr__(self, "peers", peers)


@dataclass(frozen=True, slots=True)
class PeerJoined(_Frame):
    """``peer`` joined the room."""

    peer: int


@dataclass(frozen=True, slots=True)
class PeerLeft(_Frame):
    """``peer`` left the room (or its connection closed)."""

    peer: int


@dataclass(frozen=True, slots=True)
class ForwardedOffer(_Frame):
    """An offer from ``from_``, as stamped by the server."""

    from_: int
    sdp: str


@dataclass(frozen=True, slots=True)
class ForwardedAnswer(_Frame):
    """An answer from ``from_``, as stamped by the server."""

    from_: int
    sdp: str


@dataclass(frozen=True, slots=True)
class ForwardedIce(_Frame):
    """An ICE candidate from ``from_``, as stamped by the server."""

    from_: int
    candidate: str


@dataclass(frozen=True, slots=True)
class ForwardedRelay(_Frame):
    """A relayed payload from ``from_``, as stamped by the server."""

    from_: int
    payload: Any


@dataclass(frozen=True, slots=True)
class Error(_Frame):
    """The server refused a frame; ``code`` is machine-readable, ``message`` for humans."""

    code: str
    message: str

    def __post_init__(self) -> None:
        _Frame.__post_init__(self)
        if not _check_str(self.code, "code"):
            raise SignalingFrameError("'code' must not be empty")


ClientFrame: TypeAlias = Join | Offer | Answer | Ice | Relay | Leave
ServerFrame: TypeAlias = (
    Welcome
    | PeerJoined
    | PeerLeft
    | ForwardedOffer
    | ForwardedAnswer
    | ForwardedIce
    | ForwardedRelay
    | Error
)

# tag -> (class, required wire keys, optional wire keys); wire key "from" is attribute "from_"
_Spec: TypeAlias = tuple[type[Any], tuple[str, ...], tuple[str, ...]]
_CLIENT: dict[str, _Spec] = {
    "join": (Join, ("peer",), ("capabilities",)),
    "offer": (Offer, ("to", "sdp"), ()),
    "answer": (Answer, ("to", "sdp"), ()),
    "ice": (Ice, ("to", "candidate"), ()),
    "relay": (Relay, ("to", "payload"), ()),
    "leave": (Leave, (), ()),
}
_SERVER: dict[str, _Spec] = {
    "welcome": (Welcome, ("peer", "peers"), ()),
    "peer-joined": (PeerJoined, ("peer",), ()),
    "peer-left": (PeerLeft, ("peer",), ()),
    "offer": (ForwardedOffer, ("from", "sdp"), ()),
    "answer": (ForwardedAnswer, ("from", "sdp"), ()),
    "ice": (ForwardedIce, ("from", "candidate"), ()),
    "relay": (ForwardedRelay, ("from", "payload"), ()),
    "error": (Error, ("code", "message"), ()),
}
_TAGS: dict[type[Any], tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    cls: (tag, required, optional)
    for table in (_CLIENT, _SERVER)
    for tag, (cls, required, optional) in table.items()
}


def _attr(key: str) -> str:
    return "from_" if key == "from" else key


def _wire_key(attr: str) -> str:
    return "from" if attr == "from_" else attr


def _decode(obj: object, table: Mapping[str, _Spec], direction: Direction) -> Any:
    if not isinstance(obj, Mapping):
        raise SignalingFrameError(f"a signaling frame must be a JSON object, got {_brief(obj)}")
    tag = obj.get("type")
    if not isinstance(tag, str) or tag not in table:
        raise SignalingFrameError(f"unknown {direction} frame type {_brief(tag)}")
    cls, required, optional = table[tag]
    keys = set(obj) - {"type"}
    if direction == "client" and "from" in keys:
        raise SignalingFrameError(
            f"client {tag!r} frame must not carry 'from': the server stamps the sender"
        )
    extra = keys - set(required) - set(optional)
    if extra:
        named = ", ".join(_brief(key) for key in sorted(extra)[:5])
        more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        raise SignalingFrameError(f"{tag!r} frame has unexpected field(s) {named}{more}")
    missing = [key for key in required if key not in keys]
    if missing:
        raise SignalingFrameError(f"{tag!r} frame is missing field(s) {missing}")
    kwargs = {_attr(key): obj[key] for key in keys}
    if tag == "join" and "capabilities" in kwargs:
        if not isinstance(kwargs["capabilities"], list):
            raise SignalingFrameError("'capabilities' must be a list of strings")
        kwargs["capabilities"] = tuple(kwargs["capabilities"])
    if tag == "welcome":
        if not isinstance(kwargs["peers"], list):
            raise SignalingFrameError("'peers' must be a list of peer ids")
        kwargs["peers"] = tuple(kwargs["peers"])
    return cls(**kwargs)


def decode_client_frame(obj: object) -> ClientFrame:
    """Validate a parsed JSON value as a client → server frame."""
    frame: ClientFrame = _decode(obj, _CLIENT, "client")
    return frame


def decode_server_frame(obj: object) -> ServerFrame:
    """Validate a parsed JSON value as a server → client frame."""
    frame: ServerFrame = _decode(obj, _SERVER, "server")
    return frame


def encode_frame(frame: ClientFrame | ServerFrame) -> dict[str, Any]:
    """The canonical wire object of ``frame`` (``type`` first, optional fields omitted)."""
    try:
        tag, required, optional = _TAGS[type(frame)]
    except KeyError:
        raise TypeError(f"not a signaling frame: {frame!r:.80}") from None
    wire: dict[str, Any] = {"type": tag}
    for key in required + optional:
        value = getattr(frame, _attr(key))
        if value is None and key in optional:
            continue
        wire[key] = list(value) if isinstance(value, tuple) else value
    return wire


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise SignalingFrameError(f"duplicate key {_brief(key)} in signaling frame")
        out[key] = value
    return out


def _no_constant(name: str) -> float:
    raise SignalingFrameError(f"{name} is not valid JSON")


def loads(text: str | bytes, *, max_bytes: int = MAX_FRAME_BYTES) -> object:
    """Parse strict JSON (no duplicate keys, no NaN/Infinity) or raise SignalingFrameError.

    Also refused: more than ``max_bytes`` of UTF-8, arrays and objects nested deeper than
    :data:`MAX_DEPTH` levels, integers of more than :data:`MAX_INT_DIGITS` digits.
    """
    try:
        if isinstance(text, bytes | bytearray):
            if len(text) > max_bytes:
                raise JSONLimitError(
                    f"frame of {len(text)} bytes exceeds the {max_bytes}-byte limit"
                )
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        check(text, max_bytes=max_bytes)
        with collection_paused(len(text)):
            value: object = json.loads(
                text, object_pairs_hook=_unique_keys, parse_constant=_no_constant,
                parse_int=parse_int,
            )
    except SignalingFrameError:
        raise
    except JSONLimitError as exc:
        raise SignalingFrameError(f"signaling frame refused: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise SignalingFrameError(f"signaling frame is not valid JSON: {str(exc)[:200]}") from None
    return value


def dumps(frame: ClientFrame | ServerFrame) -> str:
    """Compact JSON text of ``frame``'s canonical wire object."""
    return json.dumps(encode_frame(frame), separators=(",", ":"), ensure_ascii=False)
