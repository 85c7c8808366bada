"""The per-message options of a work-queue push: the shared
:class:`~.push_options.PushOptions` (``msg_id``, ``headers``, ``ttl_ms``, ``delay_ms`` /
``not_before_ms``) plus a ``priority``, checked once, combined freely.

:func:`work_options` checks what a user gives (the typed errors: ``InvalidMessageId``,
``InvalidHeaders``, ``InvalidTtl``, ``InvalidSchedule``) before anything is applied or
proposed and answers one :class:`WorkPushOptions` record (``None`` for a plain push).

How they combine (the same on every backend):

- the item is committed at once with its id, headers, priority and due time;
- a TTL counts from the push, delayed or not (the message's lifetime since its
  producer sent it, as a cell's default TTL counts): a delay does not extend it, so a
  delayed item is offered for ``ttl - delay`` and one whose TTL ends before it is due
  expires undelivered (give ``ttl = delay + window`` to offer it for ``window``);
- priority applies once the item is due; a repeat of a ``msg_id`` still in the window
  adds nothing (whatever its other options) and answers the first ``item_id``.

On the replicated log the options travel as one map (:meth:`PushOptions.to_map`, plus
``priority``), decoded strictly by :meth:`PushOptions.from_map`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from .push_options import FIELD_CHECKS, PushOptions
from .scheduling import MAX_PRIORITY, check_priority


def _priority(value: Any) -> int:
    if type(value) is not int or not 0 < value <= MAX_PRIORITY:
        raise ValueError(f"priority must be an int in 1..{MAX_PRIORITY} (0 is left out), "
                         f"not {str(value)[:40]}")
    return value


@dataclass(frozen=True, slots=True)
class WorkPushOptions(PushOptions):
    """A work-queue push's options: the shared ones plus ``priority`` (1..9; ``None``:
    level 0)."""

    priority: int | None = None

    CHECKS: ClassVar[Mapping[str, Callable[[Any], Any]]] = {**FIELD_CHECKS,
                                                              "priority": _priority}

    @property
    def level(self) -> int:
        return self.priority or 0

    @property
    def scheduled(self) -> bool:
        """Whether the push needs the ``scheduling`` capability."""
        return self.priority is not None or self.delayed

    def given(self) -> list[str]:
        """The names of the options given, in a fixed order."""
        return [name for name, value in (
            ("msg_id", self.msg_id), ("headers", self.headers), ("ttl", self.ttl_ms),
            ("priority", self.priority), ("delay", self.delay_ms),
            ("not_before", self.not_before_ms)) if value is not None]

    def due(self, now: float, unit: float) -> float | None:
        """The due time of a push at ``now`` (a time in ``unit`` per second: 1 for a
        local cell's seconds, 1000 for the replicated ms), ``None`` when not delayed."""
        if self.delay_ms is not None:
            return now + self.delay_ms * unit / 1000
        return None if self.not_before_ms is None else self.not_before_ms * unit / 1000


def work_options(*, msg_id: object = None, headers: object = None, ttl: object = None,
                 priority: object = 0, delay: object = None,
                 not_before: datetime | None = None) -> WorkPushOptions | None:
    """The checked options of a push (``None``: a plain push; empty headers and
    priority 0 count as none)."""
    level = check_priority(priority)
    options = WorkPushOptions.checked(msg_id=msg_id, headers=headers, ttl=ttl, delay=delay,
                                      not_before=not_before, priority=level or None)
    return None if options.is_plain() else options
