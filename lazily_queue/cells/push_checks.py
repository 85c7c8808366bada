"""What the queue and work-queue cells share for a push with options: each option the
backend cannot keep is refused by name, before anything is sent."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from ..core.work_items import check_delivery_id
from ..errors import UnsupportedOperation
from ..storage.capabilities import StorageCapabilities
from .expiry import no_expiry
from .once import no_dedup

T = TypeVar("T")


def refuse_unsupported(cell: str, storage: object, caps: StorageCapabilities, *,
                       msg_id: bool, headers: bool, ttl: bool) -> None:
    """Raise :class:`UnsupportedOperation` for ``msg_id=``, ``headers=`` or ``ttl=``
    given to a cell whose backend lacks ``dedup``, ``headers`` or ``expiry``."""
    if msg_id and not caps.dedup:
        raise no_dedup(cell, storage, "push")
    if headers and not caps.headers:
        raise UnsupportedOperation(
            f"{cell}: {type(storage).__name__} does not keep message headers; "
            "push without headers= (or carry them in the value)")
    if ttl and not caps.expiry:
        raise no_expiry(cell, storage, "push")


_TEXT = (str, bytes, bytearray, memoryview)


def values_of(values: Iterable[T], verb: str) -> list[T]:
    """The values of a ``push_many`` or ``publish_many`` as a list; a ``TypeError`` for
    one text or bytes value (it would go as one element per character or byte)."""
    if isinstance(values, _TEXT):
        raise TypeError(f"{verb}_many takes an iterable of values, not one "
                        f"{type(values).__name__}; {verb}(value) sends one, "
                        f"{verb}_many([value]) a list of one")
    return list(values)


def delivery_ids_of(ids: Iterable[int], call: str) -> list[int]:
    """:func:`ids_of` for delivery ids: each an int, else ``TypeError`` (on every
    backend, before anything is sent)."""
    return [check_delivery_id(i) for i in ids_of(ids, call)]


def ids_of(ids: Iterable[int], call: str) -> list[int]:
    """The ids given to ``call`` (``ack_many``, ``release``, ``redrive``) as a list; a
    ``TypeError`` for one text or bytes value (it would go as an id per character or
    byte)."""
    if isinstance(ids, _TEXT):
        raise TypeError(f"{call} takes an iterable of ids, not one {type(ids).__name__}")
    return list(ids)
