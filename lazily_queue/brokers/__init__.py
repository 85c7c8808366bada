"""Broker backends: the same cells on NATS JetStream and Redis Streams.

:class:`~lazily_queue.brokers.nats_backend.NatsJetStreamStorage` (needs ``nats-py``, the
``nats`` extra: ``pip install -e '.[nats]'`` in the lazily-queue clone) and
:class:`~lazily_queue.brokers.redis_backend.RedisStreamsStorage` (needs ``redis``, the
``redis`` extra) hand out queue, work-queue and topic storages;
:func:`lazily_queue.connect` wraps either in a :class:`~lazily_queue.client.Client`.
The errors are importable without either client library.
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    BrokerAuthenticationFailed,
    BrokerClosed,
    BrokerError,
    BrokerObjectLost,
    BrokerOutOfMemory,
    BrokerUnavailable,
    IncompatibleBrokerObject,
    SubscriberConsumerLost,
    UnsupportedAddress,
)

if TYPE_CHECKING:
    from .nats_backend import NatsJetStreamStorage
    from .redis_backend import RedisStreamsStorage

_LAZY = {"NatsJetStreamStorage": "nats_backend", "RedisStreamsStorage": "redis_backend"}


def __getattr__(name: str) -> Any:
    """The backends load on first use (each needs its client library)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)


__all__ = [
    "BrokerAuthenticationFailed",
    "BrokerClosed",
    "BrokerError",
    "BrokerObjectLost",
    "BrokerOutOfMemory",
    "BrokerUnavailable",
    "IncompatibleBrokerObject",
    "NatsJetStreamStorage",
    "RedisStreamsStorage",
    "SubscriberConsumerLost",
    "UnsupportedAddress",
]
