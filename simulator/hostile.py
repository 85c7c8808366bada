"""Frames a hostile or broken peer might send, for the simulator's ``hostile`` fault.

Each is handed to the receiving member's real frame decoder; every one must be
refused (the link is closed and reconnects) without stalling the member or
disturbing what the checker verifies.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import cbor2

from lazily_queue.raft.codec import encode_frames


def _shared_dag(depth: int) -> bytes:
    """A tuple DAG through CBOR shared references (tags 28/29), used as a map key:
    hashing it costs 2**depth unless the decoder refuses the tags."""
    body = b"\xd8\x1c\x82\x01\x01"  # shareable [1, 1]
    for level in range(depth):
        body = b"\xd8\x1c\x82" + body + b"\xd8\x1d" + _uint(level)
    return b"\x81\xa1" + body + b"\x01"


def _uint(value: int) -> bytes:
    if value < 24:
        return bytes([value])
    if value < 256:
        return bytes([0x18, value])
    return bytes([0x19]) + value.to_bytes(2, "big")


def _string_refs(count: int) -> bytes:
    text = "x" * 200
    return cbor2.dumps([{"type": "timeout_now", "term": 1, "pad": [text] * count}],
                       string_referencing=True)


def _deep(depth: int) -> bytes:
    return b"\x81" * depth + b"\x00"


def _bad_fields(rng: random.Random) -> bytes:
    message: dict[str, Any] = rng.choice([
        {"type": "append_entries", "term": -1, "commit_index": 0},
        {"type": "request_vote", "term": 2**70, "last_log_index": 0, "last_log_term": 0},
        {"type": "apply_command", "command": "not bytes"},
        {"type": "append_entries", "term": 1, "commit_index": 0, "prevLogIdx": 1,
         "prevLogTerm": 1, "entries": [[b"x", 1]]},
        {"type": "next_node_idx", "next_node_idx": 1, "reset": 1, "success": True},
        {"type": "no_such_message", "term": 1},
        {"type": "request_vote"},
    ])
    return encode_frames([message])[0]


def _truncated(rng: random.Random) -> bytes:
    frame = encode_frames([{"type": "response_vote", "term": 7}])[0]
    return frame[: rng.randrange(1, len(frame))]


def _garbage(rng: random.Random) -> bytes:
    return rng.randbytes(rng.randrange(1, 200))


def _declared_huge(rng: random.Random) -> bytes:
    return rng.choice([b"\x9b" + b"\xff" * 8, b"\x5b\x00\x00\x00\x01\x00\x00\x00\x00",
                       b"\xbb" + b"\x7f" + b"\xff" * 7])


_KINDS: list[tuple[str, Callable[[random.Random], bytes]]] = [
    ("shared-reference hash bomb", lambda rng: _shared_dag(rng.randrange(30, 60))),
    ("string references", lambda rng: _string_refs(rng.randrange(10, 200))),
    ("deep nesting", lambda rng: _deep(rng.randrange(1000, 60000))),
    ("fields of the wrong shape", _bad_fields),
    ("truncated frame", _truncated),
    ("random bytes", _garbage),
    ("declared huge length", _declared_huge),
]


def hostile_frame(rng: random.Random) -> tuple[str, bytes]:
    """A description and the bytes of one hostile frame."""
    name, make = rng.choice(_KINDS)
    return name, make(rng)
