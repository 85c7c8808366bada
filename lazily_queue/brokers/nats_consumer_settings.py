"""What this library does about an operator's change to a pull consumer it made
(``nats consumer edit``, or ``rm`` and ``add`` for what cannot be edited), found where
the object is declared and by the refresh that reads it (JetStream 2.9 announces no
consumer update; see :func:`refreshed`).

- The explicit acks a queue declares, and the settings a work queue declares
  (``ack_wait``, its visibility timeout, with no ``backoff``, whose first value the
  server makes the ``ack_wait``; ``max_deliver``, ``max_deliveries + 1``; explicit
  acks) are refused with
  :class:`~.errors.IncompatibleBrokerObject` naming the consumer and the fix, as where
  it is opened: another process may have declared them so.
- The settings this library never gives a consumer, under which a pull would get other
  messages or at other times, are put back in place: a ``max_ack_pending`` limit (a
  ``no_wait`` pull past it is never answered) and ``headers_only`` (values not
  delivered), :data:`PUT_BACK`; a topic subscriber's ``backoff`` and ``max_deliver`` (a
  message delivered again by ``-NAK`` past it is never delivered).
- The rest change nothing this library relies on: a description, ``sample_freq``,
  ``inactive_threshold`` (a consumer the server deletes is declared again), a topic
  subscriber's ``ack_wait`` (it acknowledges what it pulls at once and has what it did
  not delivered again by ``-NAK``, whatever the wait); a ``filter_subject`` and the
  deliver policy the server refuses on these streams but for values that change nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import nats.js.errors as jserr
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, ConsumerInfo

from .nats_requests import UNLIMITED_ACK_PENDING

#: The settings put back, as this library gives every pull consumer it makes.
PUT_BACK: Mapping[str, Any] = {"max_ack_pending": UNLIMITED_ACK_PENDING, "headers_only": None}


def _value(setting: Any) -> Any:
    """A setting as compared: unset, empty and false alike."""
    return getattr(setting, "value", setting) or None


def astray(config: ConsumerConfig, wanted: Mapping[str, Any]) -> list[str]:
    """The settings of ``config`` whose value is not ``wanted``'s."""
    return [name for name, value in wanted.items()
            if _value(getattr(config, name)) != _value(value)]


async def put_back(js: JetStreamContext, stream: str, config: ConsumerConfig,
                   **also: Any) -> ConsumerInfo | None:
    """Update ``stream``'s consumer of ``config`` (as the server has it) to the settings
    of :data:`PUT_BACK` and ``also``, unless it has them (``None``): the consumer's info
    after the update. JetStream 2.9 has no update-only request: a consumer deleted since
    ``config`` was read is created by it (compare ``created``)."""
    wanted = {**PUT_BACK, **also}
    if not astray(config, wanted):
        return None
    return await js.add_consumer(stream, dataclasses.replace(config, **wanted))


def declared_problem(config: ConsumerConfig, stream: str, what: str,
                     declared: Mapping[str, Any]) -> str | None:
    """Why the consumer of ``config`` cannot serve ``what``, which declares the settings
    ``declared`` (``None`` when it can): each setting that differs, and the fix."""
    off = astray(config, declared)
    if not off:
        return None
    have = ", ".join(f"{name} {_value(getattr(config, name))}" for name in off)
    want = ", ".join(f"{name} {_value(declared[name])}" for name in off)
    name = config.durable_name
    return (f"consumer {name} of {stream} has {have}; {what} needs {want}: open it with "
            f"those, or set them back (`nats consumer edit {stream} {name}`; a policy "
            f"cannot be edited: `nats consumer rm {stream} {name}`, and it is declared "
            "again, its unacknowledged messages delivered again); nothing was changed")


async def refreshed(js: JetStreamContext, stream: str, name: str, wanted: Mapping[str, Any],
                    gone: Callable[[], Awaitable[None]],
                    declare: Callable[[], Awaitable[None]]) -> ConsumerInfo:
    """Consumer ``name`` of ``stream`` as a refresh reads it: when it is gone, after
    ``gone()`` declared it again; when a setting is not ``wanted``'s (an operator's
    edit), after ``declare()`` checked it as where the object is opened (raising
    :class:`~.errors.IncompatibleBrokerObject`, or putting the setting back)."""
    try:
        info = await js.consumer_info(stream, name)
    except jserr.NotFoundError:
        await gone()
        info = await js.consumer_info(stream, name)
    if astray(info.config, wanted):
        await declare()
        info = await js.consumer_info(stream, name)
    found: ConsumerInfo = info
    return found
