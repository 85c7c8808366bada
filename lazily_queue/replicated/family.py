"""A family of operations: the handlers of its op codes and its part of the snapshot."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import shown
from .ops import OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: Applies one op's arguments to the state; returns the op's result or raises
#: :class:`~.ops.OpRefused`.
Handler = Callable[["StateMachine", list[Any]], Any]


@dataclass(frozen=True)
class Section:
    """A named part of the snapshot: ``capture`` returns it (``None``: left out of the
    snapshot), ``restore`` puts it back (given ``None`` when a snapshot lacks it);
    ``deferred``, when given, captures it for a snapshot file, its large parts as
    :class:`~lazily_queue.raft.snapshot_pieces.Later`."""

    name: str
    capture: Callable[[StateMachine], Any]
    restore: Callable[[StateMachine, Any], None]
    deferred: Callable[[StateMachine], Any] | None = None


@dataclass(frozen=True)
class Family:
    """The op codes one kind of replicated object answers, and its snapshot sections."""

    name: str
    handlers: Mapping[int, Handler]
    sections: tuple[Section, ...] = field(default_factory=tuple)


def checked_name(value: Any) -> str:
    """``value`` as an object name, or refuse the op."""
    if not isinstance(value, str) or not value:
        raise OpRefused("bad_name", f"name must be a non-empty string, got {shown(value)}")
    return value


def stamps_section(name: str, kind: str,
                   cores: Callable[[StateMachine], Mapping[str, Any]]) -> Section:
    """Section ``name``: the enqueue stamps of each ``kind`` (``{object: stamps}``, as
    the ``stamps()`` / ``load_stamps()`` of the cores ``cores`` maps by name give and
    take them), restored after the objects; a snapshot without it leaves enqueue times
    unknown (0)."""

    def capture(sm: StateMachine) -> dict[str, Any] | None:
        return {obj: core.stamps() for obj, core in cores(sm).items()} or None

    def restore(sm: StateMachine, doc: Any) -> None:
        if doc is None:
            return
        if not isinstance(doc, dict):
            raise ValueError(f"snapshot section {shown(name)} must map {kind} names to "
                             "their enqueue stamps")
        found = cores(sm)
        for obj, points in doc.items():
            core = found.get(obj)
            if core is not None:
                core.load_stamps(points)

    return Section(name, capture, restore)
