"""The op table: every family of operations the state machine applies, the handler of
each op code (one per code) and the snapshot sections the families add."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import (
    admin,
    cluster,
    dedup,
    ephemeral_owners,
    expiry,
    groups,
    headers,
    limits,
    queue_options,
    queues,
    scheduling,
    session_end,
    session_popped,
    session_register,
    topic_options,
    topics,
    transactions,
    work_options,
    work_queues,
)
from .family import Family, Handler, Section
from .ops import op_name

#: Every family of operations the state machine applies.
FAMILIES: tuple[Family, ...] = (queues.FAMILY, cluster.FAMILY, topics.FAMILY,
                                work_queues.FAMILY, admin.FAMILY, dedup.FAMILY,
                                transactions.FAMILY, groups.FAMILY, scheduling.FAMILY,
                                expiry.FAMILY, limits.FAMILY, queue_options.FAMILY,
                                headers.FAMILY, topic_options.FAMILY,
                                work_options.FAMILY, ephemeral_owners.FAMILY,
                                session_end.FAMILY, session_register.FAMILY,
                                session_popped.FAMILY)


def _handlers(families: Iterable[Family]) -> dict[int, Handler]:
    table: dict[int, Handler] = {}
    for family in families:
        for code, fn in family.handlers.items():
            if code in table:
                raise ValueError(f"op code {code} ({op_name(code)}) has two handlers")
            table[code] = fn
    return table


#: The handler of each op code.
HANDLERS: Mapping[int, Handler] = _handlers(FAMILIES)
#: The snapshot sections, in family order.
SECTIONS: tuple[Section, ...] = tuple(s for family in FAMILIES for s in family.sections)

__all__ = ["FAMILIES", "HANDLERS", "SECTIONS"]
