"""The options maps of the replicated pushes with options, decoded in one place.

A push with options carries them as one map (:meth:`~..core.push_options.PushOptions.to_map`,
only the options given): ``QUEUE_PUSH_OPTIONS`` the shared ones, ``WORK_PUSH_OPTIONS``
those plus ``priority``, ``TOPIC_PUBLISH_OPTIONS`` ``msg_id``, ``headers`` and
``ttl_ms`` only. :func:`decode_options` reads the map of any of them strictly, the same
on every member: an unknown key, a wrong type or a bad value refuses the op
(``bad_options``, naming the op and what is wrong) before anything changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.push_options import PushOptions
from ..core.topic_options import options_from_map
from ..core.work_options import WorkPushOptions
from . import ops
from .ops import OpRefused

#: The decoder of each op's options map.
DECODERS: dict[int, Callable[[Any], PushOptions]] = {
    ops.QUEUE_PUSH_OPTIONS: PushOptions.from_map,
    ops.WORK_PUSH_OPTIONS: WorkPushOptions.from_map,
    ops.TOPIC_PUBLISH_OPTIONS: options_from_map,
}


def decode_options(code: int, doc: Any) -> PushOptions:
    """The options map of op ``code`` (a key of :data:`DECODERS`), or its ``bad_options``
    refusal; a ``WORK_PUSH_OPTIONS`` map decodes to a
    :class:`~..core.work_options.WorkPushOptions`."""
    try:
        return DECODERS[code](doc)
    except ValueError as exc:
        raise OpRefused("bad_options", f"{ops.op_name(code)}: {exc}") from None


def decode_work_options(doc: Any) -> WorkPushOptions:
    """:func:`decode_options` of a ``WORK_PUSH_OPTIONS`` map."""
    options = decode_options(ops.WORK_PUSH_OPTIONS, doc)
    assert isinstance(options, WorkPushOptions)
    return options
