"""What the cells share for pushes given a producer ``msg_id`` (capability ``dedup``)."""

from __future__ import annotations

from ..errors import UnsupportedOperation


def no_dedup(cell: str, storage: object, verb: str) -> UnsupportedOperation:
    """The error of a ``msg_id`` given to a cell whose backend does not declare ``dedup``."""
    return UnsupportedOperation(
        f"{cell}: {type(storage).__name__} does not deduplicate {verb}es; {verb} without "
        "msg_id")
