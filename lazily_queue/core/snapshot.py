"""Shared checks for restoring plain-data snapshots of the cores."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidSnapshot, shown


def is_int(value: object) -> bool:
    """True for an ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def require_map(where: str, data: object, keys: set[str]) -> Mapping[str, Any]:
    """``data`` as a mapping with exactly ``keys``; otherwise :class:`InvalidSnapshot`."""
    if not isinstance(data, Mapping):
        raise InvalidSnapshot(f"{where} must be a map, got {type(data).__name__}")
    present = set(data)
    if present != keys:
        missing, extra = sorted(keys - present), sorted(present - keys, key=repr)
        raise InvalidSnapshot(
            f"{where}: expected keys {sorted(keys)}; missing {missing}, unexpected {extra}"
        )
    return data


def require_list(where: str, data: object) -> list[Any]:
    """``data`` as a list (a tuple is accepted); otherwise :class:`InvalidSnapshot`."""
    if not isinstance(data, list | tuple):
        raise InvalidSnapshot(f"{where} must be a list, got {type(data).__name__}")
    return list(data)


def require_count(where: str, value: object, minimum: int = 0) -> int:
    """``value`` as an int ``>= minimum``; otherwise :class:`InvalidSnapshot`."""
    if not is_int(value) or value < minimum:  # type: ignore[operator]
        raise InvalidSnapshot(f"{where} must be an int >= {minimum}, got {shown(value)}")
    return value  # type: ignore[return-value]
