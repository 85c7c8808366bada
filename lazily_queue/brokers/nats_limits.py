"""Stream settings under which JetStream deletes a queue's, work queue's or topic's
elements without a word: an age limit (``max_age``, whatever the discard policy), or a
limit on its messages or bytes with ``discard: old`` (the server deletes the oldest
messages to make room for a new one). Such a stream is refused where the object is
opened, and again once the server announces a change to it or the connection to it
comes back. Also the largest values JetStream's settings hold (:func:`check_within`)."""

from __future__ import annotations

from typing import Any

from nats.js.api import DiscardPolicy, RetentionPolicy

from ..errors import InvalidConfiguration, shown

#: The largest integer a JetStream setting holds (a Go int64).
MAX_INT = 2**63 - 1
#: The most seconds a JetStream duration holds (int64 nanoseconds).
MAX_SECONDS = MAX_INT // 10**9


def check_within(name: str, value: float, most: float, setting: str) -> None:
    """Raise :class:`~lazily_queue.errors.InvalidConfiguration` when ``value`` of ``name``
    is over ``most``, what JetStream's ``setting`` holds."""
    if value > most:
        raise InvalidConfiguration(f"{name} {shown(value)} is over what NATS JetStream's "
                                   f"{setting} holds ({most}); use a smaller one")


#: A stream's limits that, with ``discard: old``, delete its oldest messages to make room.
ROOM_LIMITS = ("max_msgs", "max_bytes", "max_msgs_per_subject")


def silent_deletions(config: Any, stream: str, what: str) -> str | None:
    """Why stream ``stream`` of settings ``config`` would delete ``what``'s elements
    silently, and the fix (``None``: it would not)."""
    age = getattr(config, "max_age", None)
    if age is not None and age > 0:
        return (f"stream {stream} has max_age {age:g}s, so the server deletes {what}'s "
                "elements older than that silently; remove the limit (`nats stream edit "
                f"{stream} --max-age 0`)")
    limits = [f"{key} {value}" for key in ROOM_LIMITS
              if (value := getattr(config, key, None)) not in (None, -1, 0)]
    if limits and config.discard != DiscardPolicy.NEW:
        return (f"stream {stream} has {', '.join(limits)} and discards its oldest messages "
                f"past them, so the server would delete {what}'s elements silently; have "
                f"it refuse new ones instead (`nats stream edit {stream} --discard new`: a "
                "push then raises BrokerOutOfMemory) or remove the limit")
    return None


def topic_stream_problem(config: Any, stream: str, subject: str) -> str | None:
    """What keeps stream ``stream`` of settings ``config`` from holding a topic on
    ``subject``, and the fix (``None``: nothing)."""
    if config.subjects != [subject] or config.retention != RetentionPolicy.LIMITS:
        return (f"stream {stream} exists with subjects {config.subjects} and retention "
                f"{config.retention}; a topic needs limits retention on [{subject}]: use "
                "another name or delete the stream")
    return silent_deletions(config, stream, "this topic")
