"""One page of a topic's subscribers, by id, for the status page (``/subscribers.json``).

A status lists only a topic's :data:`~lazily_queue.status.MAX_SUBSCRIBERS_SHOWN` most
lagging subscribers; :func:`subscriber_page` reaches every other one: the subscribers
whose id starts with ``prefix``, sorted by id, :data:`PAGE_SIZE` from ``offset`` on, with
how many match and how many the topic has. The query parameters are checked by
:func:`listing_params`: a missing topic name, an offset that is not a whole number in
``0..``:data:`MAX_OFFSET` or a prefix longer than an id can be raise
:class:`BadListing` saying what is accepted (an offset past the last match is an empty
page).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .core.topic_subscriptions import Durability
from .names import MAX_NAME_LENGTH
from .replicated.view import ReadView

#: Subscribers listed per page.
PAGE_SIZE = 100
#: The largest offset accepted (a topic never holds this many subscribers).
MAX_OFFSET = 1_000_000_000


class BadListing(ValueError):
    """A query parameter of the listing is malformed; the message says which."""


class UnknownTopic(LookupError):
    """The listing names a topic this node does not hold."""


def listing_params(query: Mapping[str, str]) -> tuple[str, str, int]:
    """``(topic, prefix, offset)`` from ``?name=TOPIC&prefix=P&offset=N``."""
    name = query.get("name")
    if name is None:
        raise BadListing("name= is required: the topic whose subscribers to list")
    prefix = query.get("prefix", "")
    if len(prefix) > MAX_NAME_LENGTH:
        raise BadListing(f"prefix must be at most {MAX_NAME_LENGTH} characters "
                         f"(a subscriber id is), not {len(prefix)}")
    raw = query.get("offset", "")
    if raw == "":
        return name, prefix, 0
    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_OFFSET))
            and int(raw) <= MAX_OFFSET):
        raise BadListing(f"offset must be a whole number of 0..{MAX_OFFSET}, "
                         f"not {raw[:40]!r}")
    return name, prefix, int(raw)


def subscriber_page(view: ReadView, topic: str, prefix: str = "", offset: int = 0
                    ) -> dict[str, Any]:
    """The page of ``topic``'s subscribers (see the module docstring): ``subscribers``
    (each ``{id, durability, connected, cursor, lag}``), ``matching``, ``total``,
    ``offset`` and ``limit``. Raises :class:`UnknownTopic`."""
    core = view.topic(topic)
    if core is None:
        raise UnknownTopic(f"no topic {topic!r} on this node")
    records = core.subscriptions()
    end = core.end_offset()
    ids = sorted(sid for sid in records if sid.startswith(prefix))
    shown = ids[offset:offset + PAGE_SIZE]
    return {
        "topic": topic,
        "prefix": prefix,
        "offset": offset,
        "limit": PAGE_SIZE,
        "matching": len(ids),
        "total": len(records),
        "subscribers": [{"id": sid, **records[sid], "lag": end - records[sid]["cursor"]}
                        for sid in shown],
    }


def retention_holder(records: Mapping[str, Mapping[str, Any]], end: int) -> dict[str, Any]:
    """``pinned_by``: the durable subscriber (connected or not) whose cursor is the
    topic's retention frontier, the lowest (ties: the smallest id), as ``{subscriber,
    connected, cursor, entries}``, ``entries`` being the elements the topic cannot trim
    because of it (``end - cursor``); ``None`` when no durable subscriber is behind
    ``end``. A durable subscriber that stops reading holds every later element until it
    reads again or is deleted."""
    lowest: tuple[int, str] | None = None
    for sid, rec in records.items():
        if rec["durability"] == Durability.DURABLE and rec["cursor"] < end:
            key = (rec["cursor"], sid)
            if lowest is None or key < lowest:
                lowest = key
    if lowest is None:
        return {"pinned_by": None}
    cursor, sid = lowest
    return {"pinned_by": {"subscriber": sid, "connected": bool(records[sid]["connected"]),
                          "cursor": cursor, "entries": end - cursor}}
