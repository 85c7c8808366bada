"""Which objects have series of their own on a member's ``/metrics``.

At most ``limit`` names of each kind (queues, work queues, topics) are shown by name on
one member: the first it sees (an operation applied, or a scrape), so the series of a
name stay while it lives. The others of the kind are summed into one series per metric
and label set, ``name=""`` (no object has an empty name), so totals still add up and
the exposition stays bounded however many objects the cluster holds. A deleted
object's place goes to the next name seen. A summed counter never goes down: what an
object counted stays in it after the object is deleted, restarts its count or gets
series of its own (:class:`SummedCounters`). The lags of a topic or group not shown by
name are left out (their sum would say nothing of one subscriber or group).
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from .errors import InvalidConfiguration, shown

#: Names of each kind shown by name (``[metrics] named_objects`` in a node's file).
DEFAULT_NAMED_OBJECTS = 1000
#: The ``name`` of the series summing the objects not shown by name.
OTHER = ""

#: The kind of each label value the metrics use for an object kind.
_KINDS = {"work_queue": "work"}


def check_named_objects(value: object) -> int:
    """``value`` as ``named_objects`` (an int >= 0), else ``InvalidConfiguration``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidConfiguration(
            f"named_objects must be an int >= 0 (objects of each kind shown by name on "
            f"/metrics), not {shown(value)}")
    return value


#: The labels of one summed series besides its name (its kind, a reason, ...).
Labels = tuple[str, ...]


class SummedCounters:
    """Counters summed over the objects of :data:`OTHER`, kept from going down."""

    __slots__ = ("_departed", "_last")

    def __init__(self) -> None:
        self._last: dict[tuple[str, Labels], Mapping[str, tuple[int, ...]]] = {}
        self._departed: dict[tuple[str, Labels], tuple[int, ...]] = {}

    def totals(self, metric: str, counts: Mapping[Labels, Mapping[str, tuple[int, ...]]],
               width: int) -> dict[Labels, tuple[int, ...]]:
        """By series, the sum of the counts of the objects summed now (``counts``: by
        labels, then name), plus what objects summed before counted when they left the
        sum or restarted their count; a series once summed stays."""
        seen = [labels for name, labels in self._last if name == metric]
        totals: dict[Labels, tuple[int, ...]] = {}
        for labels in dict.fromkeys([*seen, *counts]):
            key = (metric, labels)
            now = counts.get(labels, {})
            departed = self._departed.get(key, (0,) * width)
            for name, old in self._last.get(key, {}).items():
                new = now.get(name)
                if new is None or any(n < o for n, o in zip(new, old, strict=True)):
                    departed = tuple(a + b for a, b in zip(departed, old, strict=True))
            self._last[key] = now
            self._departed[key] = total = departed
            for figures in now.values():
                total = tuple(a + b for a, b in zip(total, figures, strict=True))
            totals[labels] = total
        return totals


class NamedObjects:
    """The names shown, by kind (module docstring)."""

    __slots__ = ("_named", "limit", "summed")

    def __init__(self, limit: int = DEFAULT_NAMED_OBJECTS) -> None:
        self.limit = check_named_objects(limit)
        self._named: dict[str, set[str]] = {}
        #: The summed counters of :data:`OTHER`.
        self.summed = SummedCounters()

    def label(self, kind: str, name: str) -> str:
        """``name``, or :data:`OTHER` when ``limit`` other names of ``kind`` are shown."""
        kind = _KINDS.get(kind, kind)
        named = self._named.get(kind)
        if named is None:
            named = self._named[kind] = set()
        if name in named:
            return name
        if len(named) < self.limit:
            named.add(name)
            return name
        return OTHER

    def forget(self, kind: str, name: str) -> None:
        """``name`` was deleted: its place goes to the next name seen."""
        self._named.get(_KINDS.get(kind, kind), set()).discard(name)

    def keep(self, kind: str, held: Container[str]) -> None:
        """Forget the names of ``kind`` not in ``held`` (a snapshot installed)."""
        named = self._named.get(_KINDS.get(kind, kind))
        if named is not None:
            named.difference_update([n for n in named if n not in held])


__all__ = ["DEFAULT_NAMED_OBJECTS", "OTHER", "NamedObjects", "SummedCounters",
           "check_named_objects"]
