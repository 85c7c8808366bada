"""The signaling room as a pure state machine: no I/O, no clock, no tasks.

``RoomCore.feed(conn, frame)`` returns the frames to deliver as ``(conn, frame)``
pairs. Connections are opaque hashable keys chosen by the caller (a websocket,
a string in fixtures). Every refused client frame produces exactly one
``error`` frame back to its sender and changes nothing; the connection stays
usable (closing it for bytes that are not JSON at all is the server's call).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeAlias, TypeVar

from ._frames import (
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
)

__all__ = ["ErrorCode", "Output", "Permissions", "RoomCore"]

C = TypeVar("C", bound=Hashable)

Output: TypeAlias = tuple[C, ServerFrame]


class ErrorCode:
    """The ``code`` values of server ``error`` frames."""

    UNKNOWN_TARGET = "unknown_target"
    PERMISSION_DENIED = "permission_denied"
    MALFORMED_FRAME = "malformed_frame"
    NOT_JOINED = "not_joined"
    ALREADY_JOINED = "already_joined"
    PEER_TAKEN = "peer_taken"
    INVALID_TARGET = "invalid_target"
    TARGET_BUSY = "target_busy"


@dataclass(frozen=True, slots=True)
class Permissions:
    """Who may send directed frames to whom.

    ``open``: anyone to anyone in the room. ``allowlist``: deny unless
    ``target in allowed[sender]``. Joining and the roster are never filtered.
    """

    mode: Literal["open", "allowlist"] = "open"
    allowed: Mapping[int, frozenset[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("open", "allowlist"):
            raise ValueError(f"permission mode must be 'open' or 'allowlist', not {self.mode!r}")
        if self.mode == "open" and self.allowed:
            raise ValueError("an 'open' room takes no allowlist")

    @classmethod
    def allowlist(
        cls, pairs: Mapping[int, Iterable[int]], *, symmetric: bool = True
    ) -> Permissions:
        """Allow ``sender -> target`` for each listed target (and back, if ``symmetric``)."""
        allowed: dict[int, set[int]] = {}
        for sender, targets in pairs.items():
            for target in targets:
                allowed.setdefault(sender, set()).add(target)
                if symmetric:
                    allowed.setdefault(target, set()).add(sender)
        return cls("allowlist", {k: frozenset(v) for k, v in allowed.items()})

    def may_signal(self, sender: int, target: int) -> bool:
        return self.mode == "open" or target in self.allowed.get(sender, frozenset())


class RoomCore(Generic[C]):
    """One signaling session: a roster of ``peer id -> connection`` and routing rules."""

    def __init__(self, permissions: Permissions | None = None) -> None:
        self.permissions = permissions if permissions is not None else Permissions()
        self._conn_of: dict[int, C] = {}
        self._peer_of: dict[C, int] = {}

    @property
    def peers(self) -> tuple[int, ...]:
        """Joined peer ids, ascending."""
        return tuple(sorted(self._conn_of))

    def peer_of(self, conn: C) -> int | None:
        return self._peer_of.get(conn)

    def feed_wire(self, conn: C, wire: object) -> list[Output[C]]:
        """Decode a parsed JSON value from ``conn`` and route it; invalid frames get an error."""
        try:
            frame = decode_client_frame(wire)
        except SignalingFrameError as exc:
            return [(conn, Error(ErrorCode.MALFORMED_FRAME, str(exc)))]
        return self.feed(conn, frame)

    def feed(self, conn: C, frame: ClientFrame) -> list[Output[C]]:
        """Route one client frame from ``conn``."""
        if isinstance(frame, Join):
            return self._join(conn, frame)
        sender = self._peer_of.get(conn)
        if sender is None:
            return [(conn, Error(ErrorCode.NOT_JOINED, "join the session first"))]
        if isinstance(frame, Leave):
            return self._remove(conn)
        return self._direct(conn, sender, frame)

    def disconnect(self, conn: C) -> list[Output[C]]:
        """``conn`` went away: announce its peer (if any) to the others."""
        return self._remove(conn)

    def _join(self, conn: C, frame: Join) -> list[Output[C]]:
        current = self._peer_of.get(conn)
        if current is not None:
            return [(conn, Error(ErrorCode.ALREADY_JOINED, f"already joined as peer {current}"))]
        if frame.peer in self._conn_of:
            return [(conn, Error(ErrorCode.PEER_TAKEN, f"peer {frame.peer} is already joined"))]
        out: list[Output[C]] = [(conn, Welcome(frame.peer, self.peers))]
        out.extend((self._conn_of[p], PeerJoined(frame.peer)) for p in self.peers)
        self._conn_of[frame.peer] = conn
        self._peer_of[conn] = frame.peer
        return out

    def _remove(self, conn: C) -> list[Output[C]]:
        peer = self._peer_of.pop(conn, None)
        if peer is None:
            return []
        del self._conn_of[peer]
        return [(self._conn_of[p], PeerLeft(peer)) for p in self.peers]

    def _direct(self, conn: C, sender: int, frame: Offer | Answer | Ice | Relay) -> list[Output[C]]:
        target = frame.to
        if target == sender:
            return [(conn, Error(ErrorCode.INVALID_TARGET, f"peer {sender} cannot signal itself"))]
        if not self.permissions.may_signal(sender, target):
            message = f"peer {sender} is not allowed to signal peer {target}"
            return [(conn, Error(ErrorCode.PERMISSION_DENIED, message))]
        target_conn = self._conn_of.get(target)
        if target_conn is None:
            message = f"peer {target} is not in this session"
            return [(conn, Error(ErrorCode.UNKNOWN_TARGET, message))]
        forwarded: ServerFrame
        match frame:
            case Offer(sdp=sdp):
                forwarded = ForwardedOffer(sender, sdp)
            case Answer(sdp=sdp):
                forwarded = ForwardedAnswer(sender, sdp)
            case Ice(candidate=candidate):
                forwarded = ForwardedIce(sender, candidate)
            case Relay(payload=payload):
                forwarded = ForwardedRelay(sender, payload)
        return [(target_conn, forwarded)]
