"""The Raft wire format: a frame is a CBOR array of PySyncObj messages, checked on entry.

PySyncObj trusts every field of every message. Here each message is checked against
the shape its type must have before the engine sees it; a frame that fails is refused
as a whole with :class:`FrameError` (the caller closes that link). Entries come back
as tuples, the form the engine compares with its journal. Frames are decoded with the
protocol profile of :mod:`lazily_transports.safe_cbor` (no tags, string keys, shallow nesting).
"""

from __future__ import annotations

from typing import Any

import cbor2
from lazily_transports.safe_cbor import PROTOCOL, UntrustedDataError, describe

#: Frames are packed below this size, and accepted up to it at least.
MAX_FRAME_BYTES = 4 * 1024 * 1024
#: Room for the message fields and encoding around the entries of one frame.
_FRAME_SLACK = 64 * 1024


def frame_limit(max_command_bytes: int, append_batch_bytes: int) -> int:
    """The largest frame a member accepts: at least :data:`MAX_FRAME_BYTES`, and room for
    one append of ``append_batch_bytes`` of entries plus the largest command."""
    return max(MAX_FRAME_BYTES, append_batch_bytes + max_command_bytes + _FRAME_SLACK)


class FrameError(ValueError):
    """A frame from a peer is not a valid batch of Raft messages."""


_INT = int
_BOOL = bool

# type -> (required fields, optional fields); a field spec is a type or a checker name.
_SCHEMA: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "request_vote": ({"term": _INT, "last_log_index": _INT, "last_log_term": _INT}, {}),
    "response_vote": ({"term": _INT}, {}),
    "append_entries": (
        {"term": _INT, "commit_index": _INT},
        {"prevLogIdx": _INT, "prevLogTerm": _INT, "entries": "entries", "serialized": "chunk"},
    ),
    "next_node_idx": ({"next_node_idx": _INT, "reset": _BOOL, "success": _BOOL}, {}),
    "apply_command": ({"command": bytes}, {"request_id": _INT}),
    "apply_command_response": (
        {"request_id": _INT},
        {"error": _INT, "log_idx": _INT, "log_term": _INT},
    ),
    "timeout_now": ({"term": _INT}, {}),
    "pre_vote": ({"term": _INT, "last_log_index": _INT, "last_log_term": _INT}, {}),
    "pre_vote_response": ({"term": _INT, "granted": _BOOL}, {}),
}


#: Terms, indexes and ids fit the journal's unsigned 64-bit fields with room to spare.
MAX_INT = 2**63 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value <= MAX_INT


def _check(name: str, spec: Any, value: Any) -> Any:
    if spec is _INT:  # decoded CBOR ints are exact ints (bools are their own type)
        if type(value) is not int or not 0 <= value <= MAX_INT:
            raise FrameError(f"field {name!r} must be an int in 0..2**63-1")
        return value
    if spec is _BOOL:
        if type(value) is not bool:
            raise FrameError(f"field {name!r} must be a bool")
        return value
    if spec is bytes:
        if not isinstance(value, bytes):
            raise FrameError(f"field {name!r} must be bytes")
        return value
    if spec == "entries":
        if not isinstance(value, list):
            raise FrameError("entries must be a list")
        out = []
        for e in value:
            if (
                not isinstance(e, list)
                or len(e) != 3
                or not isinstance(e[0], bytes)
                or not _is_int(e[1])
                or not _is_int(e[2])
            ):
                raise FrameError(f"malformed log entry: {_describe_entry(e)}")
            out.append((e[0], e[1], e[2]))
        return out
    if spec == "chunk":
        if value is None:
            return None
        if (
            not isinstance(value, list)
            or len(value) != 3
            or not isinstance(value[0], bytes)
            or not isinstance(value[1], bool)
            or not isinstance(value[2], bool)
        ):
            raise FrameError("malformed snapshot chunk")
        return (value[0], value[1], value[2])
    raise AssertionError(spec)


def _describe_entry(entry: Any) -> str:
    if isinstance(entry, list):
        return "[" + ", ".join(describe(item) for item in entry[:3]) + (
            ", ...]" if len(entry) > 3 else "]"
        )
    return describe(entry)


#: type -> (every field it may carry -> its spec, the fields it must carry)
_FIELDS: dict[str, tuple[dict[str, Any], frozenset[str]]] = {
    kind: ({**required, **optional}, frozenset(required))
    for kind, (required, optional) in _SCHEMA.items()
}


#: The fields of the two messages every round carries: a leader's append and the
#: follower's answer.
_APPEND_FIELDS = frozenset(_FIELDS["append_entries"][0]) - {"serialized"} | {"type"}
_ANSWER_FIELDS = frozenset(_FIELDS["next_node_idx"][0]) | {"type"}


def _round_message(message: dict[str, Any]) -> bool:
    """Whether ``message`` is a well-formed append with entries or answer to one, checked
    field by field without the general walk (the entries made tuples when it is); False
    leaves it untouched for :func:`check_message`'s walk to judge."""
    keys = message.keys()
    if keys == _APPEND_FIELDS:
        term, commit = message["term"], message["commit_index"]
        prev, prev_term = message["prevLogIdx"], message["prevLogTerm"]
        entries = message["entries"]
        if not (type(term) is int and type(commit) is int and type(prev) is int
                and type(prev_term) is int and type(entries) is list
                and message["type"] == "append_entries"
                and 0 <= term <= MAX_INT and 0 <= commit <= MAX_INT
                and 0 <= prev <= MAX_INT and 0 <= prev_term <= MAX_INT):
            return False
        out = []
        for entry in entries:
            if type(entry) is not list or len(entry) != 3:
                return False
            data, index, entry_term = entry
            if not (type(data) is bytes and type(index) is int and type(entry_term) is int
                    and 0 <= index <= MAX_INT and 0 <= entry_term <= MAX_INT):
                return False
            out.append((data, index, entry_term))
        message["entries"] = out
        return True
    if keys == _ANSWER_FIELDS:
        index = message["next_node_idx"]
        return (type(index) is int and 0 <= index <= MAX_INT
                and type(message["reset"]) is bool and type(message["success"]) is bool
                and message["type"] == "next_node_idx")
    return False


def check_message(message: Any) -> dict[str, Any]:
    """Validate one message; return it with entries as tuples (the decoded map itself,
    its entries replaced)."""
    if type(message) is dict and _round_message(message):
        return message
    if not isinstance(message, dict):
        raise FrameError("a message must be a map")
    kind = message.get("type")
    schema = _FIELDS.get(kind) if isinstance(kind, str) else None
    if schema is None:
        raise FrameError(f"unknown message type {describe(kind)}")
    fields, required = schema
    if not required <= message.keys():
        missing = next(n for n in fields if n in required and n not in message)
        raise FrameError(f"{kind} lacks field {missing!r}")
    for name, value in message.items():
        spec = fields.get(name)
        # most fields are ints: those that pass need no call (see _check)
        if spec is _INT and type(value) is int and 0 <= value <= MAX_INT:
            continue
        if spec is None:
            if name == "type":
                continue
            raise FrameError(f"{kind} has unexpected field {describe(name)}")
        checked = _check(name, spec, value)
        if checked is not value:
            message[name] = checked  # the same key: the map does not change size
    if kind == "append_entries" and ("prevLogIdx" in message) != ("prevLogTerm" in message):
        raise FrameError("append_entries needs both prevLogIdx and prevLogTerm")
    return message


def encode_frames(messages: list[dict[str, Any]]) -> list[bytes]:
    """Pack messages into as few frames as fit under :data:`MAX_FRAME_BYTES`."""
    if len(messages) == 1:  # one message (the common case) always makes one frame
        return [b"\x81" + cbor2.dumps(messages[0])]
    frames: list[bytes] = []
    batch: list[bytes] = []
    size = 0
    for message in messages:
        raw = cbor2.dumps(message)
        if batch and size + len(raw) > MAX_FRAME_BYTES:
            frames.append(_array(batch))
            batch, size = [], 0
        batch.append(raw)
        size += len(raw)
    if batch:
        frames.append(_array(batch))
    return frames


def _array(items: list[bytes]) -> bytes:
    n = len(items)
    if n < 24:
        head = bytes([0x80 | n])
    elif n < 256:
        head = bytes([0x98, n])
    elif n < 65536:
        head = bytes([0x99]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x9A]) + n.to_bytes(4, "big")
    return head + b"".join(items)


def decode_frame(frame: bytes, max_bytes: int = MAX_FRAME_BYTES) -> list[dict[str, Any]]:
    """Decode and validate a frame of at most ``max_bytes`` (see :func:`frame_limit`);
    raises :class:`FrameError` on anything malformed or larger."""
    if len(frame) > max_bytes + 1024:
        raise FrameError(f"frame of {len(frame)} bytes exceeds {max_bytes}")
    try:
        messages = PROTOCOL.loads(frame, max_bytes=max_bytes + 1024)
    except UntrustedDataError as exc:
        raise FrameError(f"frame is not valid CBOR: {exc.reason}") from None
    if not isinstance(messages, list):
        raise FrameError("a frame must be an array of messages")
    round_message = _round_message
    return [m if type(m) is dict and round_message(m) else check_message(m)
            for m in messages]
