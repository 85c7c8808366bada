"""The options of one topic publish: a producer message id, headers and a per-message TTL.

:class:`PublishOptions` is checked once, in the cell (the typed errors of each option:
:class:`~lazily_queue.errors.InvalidMessageId`, :class:`~lazily_queue.errors.InvalidHeaders`,
:class:`~lazily_queue.errors.InvalidTtl`), and travels through the storage seam as one
record. Its wire form (:meth:`PublishOptions.to_map`, the map of op
``TOPIC_PUBLISH_OPTIONS``) carries only the options given; :func:`options_from_map` reads
it back strictly (an unknown key or a wrong type is a ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .dedup import check_msg_id
from .expiry import checked_ms, ttl_ms
from .headers import Headers, check_headers


@dataclass(frozen=True, slots=True)
class PublishOptions:
    """``msg_id`` (deduplicated publish), ``headers`` (non-empty, checked) and ``ttl_ms``
    (the element's own time to live, ms; the topic's ``ttl``/``max_age`` may end it
    earlier: the earlier deadline wins). ``None``: not given."""

    msg_id: str | None = None
    headers: Headers | None = None
    ttl_ms: int | None = None

    @classmethod
    def checked(cls, msg_id: object = None, headers: Mapping[str, str] | None = None,
                ttl: object = None) -> PublishOptions:
        """The options a ``publish`` was given (seconds for ``ttl``), each checked."""
        return cls(None if msg_id is None else check_msg_id(msg_id),
                   None if headers is None else check_headers(headers),
                   None if ttl is None else ttl_ms(ttl))

    def to_map(self) -> dict[str, Any]:
        """The wire form: ``{"msg_id"?, "headers"?, "ttl"?}`` (ttl in ms)."""
        doc: dict[str, Any] = {}
        if self.msg_id is not None:
            doc["msg_id"] = self.msg_id
        if self.headers is not None:
            doc["headers"] = self.headers
        if self.ttl_ms is not None:
            doc["ttl"] = self.ttl_ms
        return doc


KEYS = frozenset({"msg_id", "headers", "ttl"})


def options_from_map(doc: Any) -> PublishOptions:
    """:meth:`PublishOptions.to_map` back; ``ValueError`` naming what is wrong (an unknown
    key, a wrong type, empty headers, a TTL out of range)."""
    if type(doc) is not dict:
        raise ValueError(f"publish options must be a map, not {type(doc).__name__}")
    unknown = set(doc) - KEYS
    if unknown:
        raise ValueError(f"unknown publish option(s) {sorted(map(str, unknown))}; "
                         f"known: {sorted(KEYS)}")
    try:
        msg_id = None if doc.get("msg_id") is None else check_msg_id(doc["msg_id"])
        headers = None
        if "headers" in doc:
            headers = check_headers(doc["headers"])
            if headers is None:
                raise ValueError("publish option headers must not be empty")
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from None
    ttl = checked_ms(doc.get("ttl"), "publish option ttl")
    return PublishOptions(msg_id, headers, ttl)
