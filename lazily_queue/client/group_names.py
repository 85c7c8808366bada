"""The topic a work queue's name makes it the consumer group of: by the member's state,
or, for a name no object has, by its form (``"<topic>:<group>"``), at a bounded cost."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..replicated.view import ReadView

#: Colons of an undeclared name tried as the end of its topic's name (each try checks a
#: copy of the name against the grant: a name of colons must not cost one per colon).
GROUP_FORMS = 16

GroupTopics = Callable[[str, bool], list[str]]
"""The topics work queue ``name`` may be the consumer group of (as the member's state
has it; with the flag, by its form while no object has the name)."""


def group_topics(view: ReadView, name: str, undeclared: bool) -> list[str]:
    """The topic whose consumer group work queue ``name`` is in ``view``; while no object
    has the name and ``undeclared``, each topic it names by its form
    (``"<topic>:<group>"``, the topic ending at one of its first :data:`GROUP_FORMS`
    colons)."""
    state = view.work_queue(name)
    if state is not None:
        return [] if state.group is None else [state.group[0]]
    return group_forms(name) if undeclared else []


def group_forms(name: str, most: int = GROUP_FORMS) -> list[str]:
    """The topics ``name`` names by its form (``"<topic>:<group>"``, the topic ending at
    one of its first ``most`` colons), whatever the state holds."""
    topics: list[str] = []
    end = name.find(":", 1)
    while 0 < end < len(name) - 1 and len(topics) < most:
        topics.append(name[:end])
        end = name.find(":", end + 1)
    return topics
