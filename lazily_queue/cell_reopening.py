"""Reopening a cell by name: what differs from the settings it is open with, said as
the error the factories (a node's, a client's) raise."""

from __future__ import annotations

from typing import Any

from .core.expiry import optional_ttl_ms
from .core.limits import Limits
from .core.scheduling import RetryPolicy
from .errors import InvalidConfiguration


def reopened(kind: str, name: str, opened: str, asked: str) -> InvalidConfiguration:
    """The error of reopening ``kind`` ``name``, open with ``opened``, with ``asked``."""
    return InvalidConfiguration(
        f"{kind} {name!r} is already open with {opened}, and this call asks for {asked}; "
        f"open it with the same settings everywhere (or share the cell), or delete the "
        f"{kind} to change them")


def limits_text(limits: Limits | None) -> str:
    """A cell's limits as an error says them."""
    return "no limits" if limits is None else f"limits {limits.describe()}"


QueueBounds = tuple[int | None, Limits | None]
"""A queue's bounds as it was opened: its ``capacity`` and its ``limits``."""


def queue_reopened(name: str, opened: QueueBounds, asked: QueueBounds
                   ) -> InvalidConfiguration | None:
    """What reopening queue ``name``, open with ``opened``, with other bounds raises (a
    ``capacity`` and ``Limits(max_length=...)`` are other settings), or ``None``."""
    if opened[1] == asked[1] and (asked[1] is not None or opened[0] == asked[0]):
        return None
    return reopened("queue", name, _queue_settings(*opened), _queue_settings(*asked))


def _queue_settings(capacity: int | None, limits: Limits | None) -> str:
    if limits is not None or capacity is None:
        return limits_text(limits)
    return f"capacity {capacity}"


def retry_text(retry: object) -> str:
    """A work queue's retry policy as it was given (in seconds; it is held in ms)."""
    return "none" if not isinstance(retry, RetryPolicy) else repr(retry.scaled(0.001))


def drop_refused(cells: dict[str, Any], storages: dict[str, Any], name: str) -> bool:
    """Forget the cell open under ``name`` when the cluster refused its declaration (the
    object exists with other settings), so the name can be opened again with the
    object's settings; the refused cell stays refused."""
    refused = getattr(storages.get(name), "declaration_refused", None)
    if refused is None or not refused():
        return False
    del cells[name], storages[name]
    return True


def same_rules(kind: str, name: str, storage: Any, ttl: float | None,
                max_age: float | None) -> None:
    """Refuse reopening a cell with expiry rules other than those it is open with."""
    if ttl is None and max_age is None:
        return
    asked = [optional_ttl_ms(ttl), optional_ttl_ms(max_age, "max_age")]
    if storage.expiry_rules != asked:
        raise reopened(kind, name, f"expiry rules {_rules(storage.expiry_rules)}",
                        f"expiry rules {_rules(asked)}")


def _rules(rules: list[int | None] | None) -> str:
    """Expiry rules (held in ms) in seconds, as they are given."""
    ttl, max_age = (("none" if ms is None else f"{ms / 1000:g}")
                    for ms in (rules or [None, None]))
    return f"ttl={ttl}, max_age={max_age}"


def same_serializer(kind: str, name: str, opened: object, asked: object) -> None:
    """Refuse reopening a cell with another serializer than the one it is open with."""
    if asked is not opened:
        raise InvalidConfiguration(
            f"{kind} {name!r} is already open with serializer {opened!r}, not {asked!r}; "
            "open it once and share the cell"
        )
