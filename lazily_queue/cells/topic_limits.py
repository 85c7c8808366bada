"""The retention figures of a topic cell declared with limits (mixed into the cell).

The topic is its storage's ``limited_topic()`` (the local core, or the locally applied
one on a replicated backend); without limits every figure is 0.
"""

from __future__ import annotations

from typing import Any, cast

from ..core.limited_topic import LimitedTopic
from ..core.limits import Limits


class TopicLimits:
    """``limits()``, ``retained_bytes()``, ``dropped()`` and ``gap(id)``."""

    def _limited(self) -> LimitedTopic[Any] | None:
        find = getattr(getattr(self, "_storage", None), "limited_topic", None)
        return None if find is None else cast("LimitedTopic[Any] | None", find())

    def limits(self) -> Limits | None:
        """The topic's retention limits (``None``: interest-based GC only)."""
        topic = self._limited()
        if topic is not None:
            return topic.limits()
        declared = getattr(getattr(self, "_storage", None), "declared_limits", None)
        return None if declared is None else cast("Limits | None", declared())

    def retained_bytes(self) -> int:
        """The bytes of the retained log (0 without limits)."""
        topic = self._limited()
        return 0 if topic is None else topic.quota.bytes

    def dropped(self) -> int:
        """Elements the retention limits dropped (read or not)."""
        topic = self._limited()
        return 0 if topic is None else topic.quota.dropped_total()

    def gap(self, subscriber: str) -> int:
        """Elements the retention limits dropped before ``subscriber`` read them."""
        topic = self._limited()
        return 0 if topic is None else topic.gap(subscriber)
