"""The client protocol: CBOR frames between a client and the member it is linked to.

Every frame is one CBOR array, decoded with the bounded decoder of
:mod:`lazily_transports.safe_cbor` (values profile). A request is
``[id, kind, *fields]`` with ``id >= 1``; the member answers each with
``[id, OK, payload]`` or ``[id, ERROR, [code, message]]``. Frames with id ``0`` are
the member's own: notifications and refusals of frames it could not read.
``[0, ERROR, ["too_many_links", message]]``, the first frame of a link, refuses the
link (over a cap of :mod:`.link_caps`); the member then closes it.
``[0, ERROR, ["frame_budget", message, frames_read]]`` closes a link whose frame waited
too long for room in the member's frame budget (:mod:`.frame_budget`): the member read
the link's first ``frames_read`` frames and nothing of the later ones (a member of an
earlier version leaves ``frames_read`` out: then any of them may have applied).

Requests (client to member):

- ``[id, HELLO, version, session]``: first on every link; ``session`` is the client's
  session id: one registered (``REGISTERED_BASE`` or above) or ``0`` while it has none
  (protocol 5), or one it chose at random (above ``CLIENT_SESSION_BASE``, below
  ``REGISTERED_BASE``: what clients of protocols 3 and 4 name), opened at its first op.
  Answer
  ``{"node", "cluster", "leader", "features"}`` (``features``, optional: what the member
  serves beyond the version, see :data:`FEATURES`).
- ``[id, REGISTER, timeout_ms]`` (protocol 5): register a new client session
  (:mod:`..replicated.session_register`); answer its id, under which the link's ops go
  from then on.
- ``[id, OP, seq, floor, code, args, timeout_ms]``: propose one state-machine op
  under the session: ``seq`` numbers it (a retry, through any member, reuses it),
  ``floor`` says every answer below it was received. Answer: the op's result
  (:func:`~lazily_queue.replicated.results.encode_result` form).
- ``[id, WATCH, kind, name]``: mirror an object. Answer ``[index, doc]``: the object
  as applied now (``None`` if undeclared) and the member's count of applied ops; from
  then on ``REPLAY`` frames carry every op applied to it with a higher index.
- ``[id, UNWATCH, kind, name]``, ``[id, BARRIER, timeout_ms]`` (answered once the
  member applied everything committed before it, and sent what it applied),
  ``[id, PING]`` (answered ``None``, or why the member cannot commit: :mod:`.ping`).

Notifications (member to client, id 0): ``[0, REPLAY, [[kind, name, index, now, op],
...]]`` in apply order; ``[0, RESET, [kind, name, index, doc]]`` after the member
installed a snapshot; ``[0, PART, piece, last]`` carries a piece of a frame too large
for one (the pieces up to the one with ``last`` true, concatenated, are that frame);
``[0, ERROR, [code, message]]`` refuses a frame that had no readable id;
``[0, ERROR, ["permission", message, kind, name]]`` ends a watch the client may no
longer read (a name it read as a consumer group's became another object).

Either side may send ``[0, BATCH, [frame, ...]]``: the frames, handled in order (the
requests, answers and notifications of one loop iteration travel together).
"""

from __future__ import annotations

from typing import Any

import cbor2
from lazily_transports.safe_cbor import VALUES, UntrustedDataError

from ..errors import (
    LazilyQueueError,
    MessageTooLarge,
    OperationFailed,
    TooManyObjects,
    TooManySubscribers,
    UnsupportedValue,
)
from ..raft import values
from ..raft.errors import (
    CommitTimeout,
    NodeNotRunning,
    NoQuorum,
    ProposalRejected,
    StorageUnavailable,
)

#: 2: message ids (queue pops answer ids and stamps, claims enqueue stamps). 3: session
#: ids tagged with the client's name (:mod:`..replicated.client_sessions`). 4: a consumer
#: group's run of retained values sent as one run (a work queue's ``run``,
#: :mod:`..core.work_snapshot`), not item by item. 5: sessions registered (``REGISTER``),
#: never opened by an op.
VERSION = 5
#: The protocols a member of this version serves: a client of protocol 3 or 4 reads a
#: consumer group's retained values item by item (:attr:`ClientConnection.protocol`) and
#: chooses its session id, opened at its first op.
SERVED_VERSIONS = (3, 4, 5)
#: The first protocol reading a group's run in its current form (its deadlines' own ttls
#: as runs: a client of protocol 4 reads an older form).
RUNS_VERSION = 5
#: A member serves a topic's consumer groups to clients: it reports what a topic feeds
#: a mirrored group, and opens a group with the permission on its topic.
GROUPS_FEATURE = "client-groups-v1"
#: A member takes ``SESSION_END``, a closing client's last op ending its session.
SESSION_END_FEATURE = "client-session-end-v1"
#: A member registers client sessions (``REGISTER``).
SESSION_REGISTER_FEATURE = "client-session-register-v1"
#: A member takes an op's floor negated (``-floor``) as the sized form: a take or claim
#: held to the room its session's kept results leave, answered ``no_room`` when that
#: holds not even one element (:mod:`..replicated.take_bytes`).
TAKE_ROOM_FEATURE = "client-take-room-v1"
#: The features a member of this version announces in its hello answer.
FEATURES = (GROUPS_FEATURE, SESSION_END_FEATURE, SESSION_REGISTER_FEATURE, TAKE_ROOM_FEATURE)

# Request kinds.
HELLO = 1
OP = 2
WATCH = 3
UNWATCH = 4
BARRIER = 5
PING = 6
REGISTER = 7
REQUESTS = frozenset({HELLO, OP, WATCH, UNWATCH, BARRIER, PING, REGISTER})

# Answer statuses and notification kinds (frames with id 0).
OK = 0
ERROR = 1
REPLAY = 2
RESET = 3
PART = 4
BATCH = 5

#: Room in a request frame beyond its op's command (the request's own fields).
REQUEST_OVERHEAD = 4096
#: The largest request frame every member reads (a member's own limit, said in its hello
#: answer, is at least this): a larger op waits for that answer before it is sent.
MIN_REQUEST_BYTES = 1024 * 1024
#: What an op's request frame adds to its encoded arguments (id, kind, seq, floor, code,
#: timeout: CBOR heads of at most 9 bytes each).
OP_FRAME_OVERHEAD = 64
#: Frames a member sends are cut into PART pieces of at most this size.
PART_BYTES = 256 * 1024
#: Largest frame a client reassembles from parts (a mirrored object's snapshot).
MAX_ASSEMBLED_BYTES = 512 * 1024 * 1024
#: Nesting a request may have: values at the depth the replicated log allows.
MAX_DEPTH = 64


class ClientError(LazilyQueueError):
    """A problem between a client and the cluster; subclasses say which."""


class AccessDenied(ClientError):
    """The member refused the client's credential: unknown client or wrong token."""


class PermissionDenied(ClientError):
    """The client's token lacks the permission (produce, consume or admin) an operation
    on this name needs; nothing was applied."""


class RequestRefused(ClientError, ValueError):
    """The member could not read a request (malformed, oversized or out of order);
    nothing was applied."""


class Unreachable(ClientError, OperationFailed, ConnectionError):
    """No member could be reached; the message gives each address's failure. For an
    operation, ``applied`` says whether it may have been applied (``None``) or not."""


class TooManyLinks(Unreachable):
    """Members refused the client's link: the client holds as many links to them as its
    grant's ``max_links`` allows, or a member as many client links as it serves in all;
    the message names the cap, its setting and the fix. Its ops were not applied
    (``applied``) unless said otherwise."""


class FrameBudgetFull(Unreachable):
    """A member closed the client's link: a frame of it waited longer than the member's
    idle timeout for room in the member's ``client_frame_budget`` (the bytes of client
    frames still arriving it holds); the message names the setting and the fix."""


class ClientClosed(ClientError, OperationFailed):
    """The client is closed; operations still waiting were not applied (``applied``
    ``False``) or their outcome is unknown (``None``)."""


#: What a call on a client that is closed, or was never opened, is told to do.
NOT_OPEN = ("the client is closed, or not open yet: use it inside `async with connect(...) "
            "as client:` or after `client = await connect(...)`")


class SessionForgotten(ClientError, OperationFailed):
    """The cluster forgot the client's session while an operation of it was in flight
    (idle for an hour, given up for the bound on client sessions, or its end forgotten):
    its outcome is unknown (``applied`` ``None``); the client registered a new session
    for its other operations."""


#: Error codes on the wire and the exception each becomes on the client.
ERRORS: dict[str, type[Exception]] = {
    "no_quorum": NoQuorum,
    "commit_timeout": CommitTimeout,
    "not_running": NodeNotRunning,
    "storage_unavailable": StorageUnavailable,
    "rejected": ProposalRejected,
    "unsupported_value": UnsupportedValue,
    "permission": PermissionDenied,
    "refused": RequestRefused,
}
#: Errors after which the client tries another member (the op may be retried).
RETRYABLE = frozenset({"no_quorum", "not_running", "storage_unavailable"})
#: Errors refusing an op for what it is (the same on every member): not applied anywhere.
REFUSALS = frozenset({"permission", "refused", "unsupported_value", "too_large",
                      "too_many_objects", "too_many_subscribers"})


def code_of(exc: BaseException) -> str:
    """The wire code of an exception raised serving a request."""
    for code, kind in ERRORS.items():
        if type(exc) is kind:
            return code
    for code, kind in ERRORS.items():
        if isinstance(exc, kind):
            return code
    return "refused"


def error_payload(exc: BaseException) -> list[Any]:
    """An exception as the payload of an ``ERROR`` answer: ``[code, message]``, plus
    ``size`` and ``limit`` for :class:`MessageTooLarge`, ``limit`` for
    :class:`TooManyObjects` and :class:`TooManySubscribers`, ``applied`` (``False``
    or ``None``) for an :class:`~lazily_queue.errors.OperationFailed`."""
    if isinstance(exc, MessageTooLarge):
        return ["too_large", str(exc), exc.size, exc.limit]
    if isinstance(exc, TooManyObjects):
        return ["too_many_objects", str(exc), exc.limit]
    if isinstance(exc, TooManySubscribers):
        return ["too_many_subscribers", str(exc), exc.limit]
    if isinstance(exc, OperationFailed):
        return [code_of(exc), str(exc), exc.applied]
    return [code_of(exc), str(exc)]


#: The ops a member proposes a client's op in; its replica names them in its errors.
_WRAPPERS = ("client_ops", "client_op")


def named(op: str, text: str) -> str:
    """``text`` about client op ``op``, starting with its name: a member's word for the
    op's wrapper is replaced by it, and a text naming no op is prefixed with it."""
    for wrapper in _WRAPPERS:
        if text.startswith(f"{wrapper} ") or text.startswith(f"{wrapper}:"):
            return op + text[len(wrapper):]
    return text if text.startswith((f"{op} ", f"{op}:")) else f"{op}: {text}"


def error_of(code: Any, message: Any, *details: Any, op: str | None = None) -> Exception:
    """The client-side exception of a wire error (``details`` as :func:`error_payload`),
    its message starting with the name of the client ``op`` it answers (:func:`named`)."""
    text = str(message)[:2000]
    if op is not None:
        text = named(op, text)
    if code == "too_large":
        size, limit = (*details, None, 0)[:2]
        return MessageTooLarge(text, size=size if isinstance(size, int) else None,
                               limit=limit if isinstance(limit, int) else 0)
    if code in ("too_many_objects", "too_many_subscribers"):
        cap = details[0] if details else 0
        over = TooManyObjects if code == "too_many_objects" else TooManySubscribers
        return over(text, limit=cap if isinstance(cap, int) else 0)
    kind = ERRORS.get(code, RequestRefused) if isinstance(code, str) else RequestRefused
    if issubclass(kind, OperationFailed):
        return kind(text, applied=False if details and details[0] is False else None)
    return kind(text)


def encode(frame: list[Any]) -> bytes:
    """A frame in CBOR; tuples in it stay tuples (the value model's tag)."""
    return values.dumps(frame)


def decode(data: bytes, *, max_bytes: int, max_tags: int | None = None) -> list[Any]:
    """One frame: a list whose first two items are ints, holding at most ``max_tags``
    tagged values when given. Raises :class:`RequestRefused`."""
    try:
        frame = VALUES.loads(data, max_bytes=max_bytes, max_depth=MAX_DEPTH, max_tags=max_tags)
    except UntrustedDataError as exc:
        raise RequestRefused(f"unreadable frame: {exc.reason}") from None
    if (not isinstance(frame, list) or len(frame) < 2 or type(frame[0]) is not int
            or type(frame[1]) is not int or frame[0] < 0):
        raise RequestRefused("a frame is a CBOR array [id, kind, ...] with integer id and kind")
    return frame


def request_id(data: bytes) -> int:
    """The id the frame ``data`` (``[id, kind, ...]``) starts with, read from its first
    bytes alone, so that a frame refused unread still answers its request (0: the frame
    does not start so, or is a batch)."""
    if len(data) < 2 or not 0x82 <= data[0] <= 0x9B:  # an array of 2+ items (or long)
        return 0
    at = 1 if data[0] <= 0x97 else 1 + (1 << (data[0] - 0x98))
    if at >= len(data) or data[at] > 0x1B:  # not an unsigned int
        return 0
    if data[at] < 24:
        return data[at]
    width = 1 << (data[at] - 24)
    return int.from_bytes(data[at + 1:at + 1 + width]) if len(data) > at + width else 0


def uint(n: int) -> bytes:
    """``cbor2.dumps(n)`` for an int, without the call for a 64-bit one."""
    if n < 0 and n >= -18446744073709551616:
        head = uint(-1 - n)
        return bytes((head[0] | 0x20,)) + head[1:]
    if n < 0 or n >= 18446744073709551616:
        return cbor2.dumps(n)
    if n < 24:
        return bytes((n,))
    if n < 256:
        return bytes((0x18, n))
    if n < 65536:
        return b"\x19" + n.to_bytes(2, "big")
    if n < 4294967296:
        return b"\x1a" + n.to_bytes(4, "big")
    return b"\x1b" + n.to_bytes(8, "big")


def array_head(n: int) -> bytes:
    """The CBOR head of an array of ``n`` items."""
    if n < 24:
        return bytes((0x80 + n,))
    if n < 256:
        return bytes((0x98, n))
    if n < 65536:
        return bytes((0x99,)) + n.to_bytes(2, "big")
    return bytes((0x9a,)) + n.to_bytes(4, "big")


def batch(frames: list[bytes]) -> bytes:
    """Encoded frames as one ``[0, BATCH, [...]]`` frame (or the one frame itself)."""
    if len(frames) == 1:
        return frames[0]
    return b"\x83\x00" + bytes((BATCH,)) + array_head(len(frames)) + b"".join(frames)


def parts(data: bytes) -> list[bytes]:
    """``data`` as the frames to send: itself, or PART frames carrying it in pieces."""
    if len(data) <= PART_BYTES:
        return [data]
    ends = range(PART_BYTES, len(data) + PART_BYTES, PART_BYTES)
    return [encode([0, PART, data[end - PART_BYTES:end], end >= len(data)]) for end in ends]
