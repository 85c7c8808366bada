"""Serializers: how a cell turns your objects into stored values and back.

Give a cell ``serializer=`` to queue values outside the value model (pydantic models,
dataclasses, msgspec structs...)::

    from lazily_queue import QueueCell, serializer

    orders = QueueCell(serializer=serializer(Order.model_dump_json, Order.model_validate_json))

``encode(value)`` must return a value of the model (``bytes`` or ``str`` usually, or
plain data), which the backend stores; ``decode(data)`` builds your object again. The
cell encodes what you push or publish and decodes what it hands back (pops, deliveries,
topic reads and readers, the ``pending()``/``in_flight()``/``dead_letters()`` views), on
every backend alike; ``snapshot()`` shows the stored (encoded) form. A failing
``encode`` or ``decode`` raises :class:`~lazily_queue.errors.UnsupportedValue` naming
the type and the serializer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from .errors import UnsupportedValue

T = TypeVar("T")


class Serializer(Protocol[T]):
    """An encode/decode pair; ``decode(encode(v))`` must give back an equal ``v``."""

    def encode(self, value: T) -> Any:
        """``value`` as a value of the model (``bytes``, ``str`` or plain data)."""
        ...

    def decode(self, data: Any) -> T:
        """The object ``encode`` made ``data`` from."""
        ...


class CallableSerializer(Generic[T]):
    """A :class:`Serializer` from two functions (see :func:`serializer`)."""

    def __init__(self, encode: Callable[[T], Any], decode: Callable[[Any], T]) -> None:
        if not callable(encode) or not callable(decode):
            raise TypeError("serializer(encode, decode) takes two callables")
        self._encode = encode
        self._decode = decode

    def __repr__(self) -> str:
        return f"serializer({_name(self._encode)}, {_name(self._decode)})"

    def encode(self, value: T) -> Any:
        return self._encode(value)

    def decode(self, data: Any) -> T:
        return self._decode(data)


def serializer(encode: Callable[[T], Any], decode: Callable[[Any], T]) -> Serializer[T]:
    """A serializer from an ``encode`` and a ``decode`` function."""
    return CallableSerializer(encode, decode)


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


class Codec(Generic[T]):
    """A cell's serializer with its errors made typed (used by the storage wrappers)."""

    def __init__(self, inner: Serializer[T], cell: str) -> None:
        self.inner = inner
        self.cell = cell

    def encode(self, value: T) -> Any:
        try:
            return self.inner.encode(value)
        except Exception as exc:
            raise UnsupportedValue(
                f"{self.cell}: {self.inner!r} could not encode a {_type(value)}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def decode(self, data: Any) -> T:
        try:
            return self.inner.decode(data)
        except Exception as exc:
            raise UnsupportedValue(
                f"{self.cell}: {self.inner!r} could not decode a stored {_type(data)}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def decode_all(self, items: list[Any]) -> list[T]:
        return [self.decode(item) for item in items]


def _type(value: object) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"
