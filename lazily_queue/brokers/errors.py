"""Typed errors of the broker backends: each names the cause and the fix."""

from __future__ import annotations

from lazily_transports import AddressError

from ..errors import LazilyQueueError, UnknownSubscriber


class BrokerError(LazilyQueueError):
    """Base class of the errors a broker backend raises on purpose."""


class BrokerUnavailable(BrokerError, ConnectionError):
    """The broker cannot be reached (refused, timed out, or the connection was lost and
    an operation could not complete); the message names the address."""


#: The end of a message about a broker that cannot be reached: what to check.
UNREACHABLE_FIX = "; check that the server runs at that address and that this host can reach it"


class BrokerAuthenticationFailed(BrokerError, PermissionError):
    """The broker refused the credentials (wrong or missing password, token or user)."""


class IncompatibleBrokerObject(BrokerError):
    """A stream, consumer, group or key of that name already exists with settings this
    object cannot use (created by someone else, or with another capacity / visibility
    timeout), or a server set to delete this library's keys (a Redis evicting any key at
    its ``maxmemory``); nothing was changed. The message names the object and the
    difference."""


class BrokerObjectLost(BrokerError):
    """A stream or consumer an object was using is gone: deleted outside this library
    (an operator's ``nats consumer rm``, another program) while in use. Nothing was
    taken from it; the message names the object and the fix."""


class SubscriberConsumerLost(BrokerObjectLost, UnknownSubscriber):
    """A topic subscriber's consumer is gone while the subscriber was known (deleted
    outside this library, or its topic restored or deleted by another process): its
    cursor went with it. Subscribe it again (it then starts at the tail: elements
    published meanwhile are not delivered to it), or restore the topic."""


class BrokerOutOfMemory(BrokerError, MemoryError):
    """The broker refused to store more (Redis past ``maxmemory`` with ``noeviction``,
    JetStream out of storage); nothing was stored. Consuming still works and frees memory;
    the message names the fix."""


class BrokerClosed(BrokerError):
    """The client (its connection) was closed; calls waiting on its cells fail with this.
    Open a new one with ``connect()``."""


class UnsupportedAddress(LazilyQueueError, AddressError):
    """``connect()`` was given an address whose scheme it does not serve."""
