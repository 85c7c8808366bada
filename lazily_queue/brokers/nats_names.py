"""The names of this library's JetStream objects: object names as tokens of stream,
consumer and subject names, streams' descriptions, and producers' message ids as
``Nats-Msg-Id`` headers."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re

from ..errors import shown
from ..names import check_name

_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: Most characters of a stream or consumer name (JetStream refuses longer ones).
NAME_LIMIT = 255


def token(name: str, prefix: int = 6) -> str:
    """``name`` as a token of stream, consumer and subject names, behind at most
    ``prefix`` characters (by default the longest, ``LQ_DL_``): as it is when it is at
    most 64 of ``[A-Za-z0-9_-]``; else
    ``x`` and its UTF-8 bytes in hex; else, when that would make the name longer than
    :data:`NAME_LIMIT`, ``h`` and their SHA-256 in hex (65 characters)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {shown(name)}")
    if _SAFE.match(name):
        return name
    raw = name.encode()
    if prefix + 1 + 2 * len(raw) <= NAME_LIMIT:
        return "x" + raw.hex()
    return "h" + hashlib.sha256(raw).hexdigest()



def object_token(name: str, prefix: int) -> str:
    """:func:`token` of an object's name, once it passed the rule of names
    (:func:`~lazily_queue.names.check_name`, else :class:`~lazily_queue.errors.InvalidName`)."""
    return token(check_name(name), prefix)


def stream_description(kind: str, name: str) -> str:
    """The description of a stream holding ``kind`` ``name``: the object as JSON, with
    the SHA-256 of its name in place of a name too long to keep whole."""
    text = json.dumps({"lazily_queue": kind, "name": name}, ensure_ascii=False)
    if len(text.encode()) <= 1024:
        return text
    return json.dumps({"lazily_queue": kind, "sha256": hashlib.sha256(name.encode()).hexdigest()})


def of_this_library(description: str) -> bool:
    """Whether a stream's description is one :func:`stream_description` writes."""
    with contextlib.suppress(ValueError, RecursionError):
        found = json.loads(description)
        return isinstance(found, dict) and "lazily_queue" in found
    return False


def once_id(msg_id: str) -> str:
    """The ``Nats-Msg-Id`` of a producer's ``msg_id``: a digest (header-safe for any
    string, and never equal to the ids this library makes for its own retries)."""
    return "once-" + hashlib.blake2b(msg_id.encode(), digest_size=16).hexdigest()
