"""The options a topic publish takes: :class:`~.push_options.PushOptions` restricted to
a producer ``msg_id``, ``headers`` and a per-message ``ttl_ms`` (a topic has no delivery
time: every subscriber reads an element when it reads the log).

:func:`publish_options` checks them as the cell is given them (the typed errors of
:meth:`PushOptions.checked`); :func:`options_from_map` reads the wire map of op
``TOPIC_PUBLISH_OPTIONS`` strictly (an unknown key, ``delay_ms`` included, or a wrong
type is a ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .push_options import FIELD_CHECKS, PushOptions, decode_map

#: The decoders of the options a publish takes.
TOPIC_CHECKS = {key: FIELD_CHECKS[key] for key in ("msg_id", "headers", "ttl_ms")}


def publish_options(msg_id: object = None, headers: Mapping[str, str] | None = None,
                    ttl: object = None) -> PushOptions:
    """The options of one publish (``ttl`` in seconds), each checked."""
    return PushOptions.checked(msg_id=msg_id, headers=headers, ttl=ttl)


def options_from_map(doc: Any) -> PushOptions:
    """:meth:`PushOptions.to_map` of a publish's options back; ``ValueError`` naming what
    is wrong."""
    return PushOptions(**decode_map(doc, TOPIC_CHECKS))


__all__ = ["TOPIC_CHECKS", "PushOptions", "options_from_map", "publish_options"]
