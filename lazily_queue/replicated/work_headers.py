"""Message headers on work queues: ``WORK_PUSH_HEADERS`` pushes an item whose headers are
kept by its item id while the item exists (pending, leased, dead-lettered: redeliveries,
nacks and redrives keep them), in ``sm.work_headers``; the ``work_queues`` part of the
``headers`` snapshot section (:mod:`.headers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.headers import Headers, OffsetHeaders, checked_table
from ..errors import shown
from . import work_queues
from .dedup import applied_once

if TYPE_CHECKING:
    from .state_machine import StateMachine


def live_ids(sm: StateMachine, name: str) -> set[int]:
    core = sm.work_queues[name].core
    return ({p.item_id for p in core.pending()} | {d.item_id for d in core.in_flight()}
            | {d.item_id for d in core.dead_letters()} | {d.item_id for _, d in core.delayed()})


def work_headers(sm: StateMachine, name: str, *, prune: bool = False) -> OffsetHeaders | None:
    """The live header table of work queue ``name`` (``None`` when it has none); with
    ``prune``, without the entries of items that are gone."""
    table = sm.work_headers.get(name)
    if table is None:
        return None
    if table.owner is not sm.work_queues.get(name):  # deleted (maybe declared again)
        del sm.work_headers[name]
        return None
    if prune:
        table.keep_only(live_ids(sm, name))
    return table


def push(sm: StateMachine, args: list[Any], headers: Headers) -> Any:
    """``[name, headers, msg_id | None, value]`` (``headers`` checked)."""
    name, _, msg_id, value = args

    def apply() -> Any:
        result = work_queues.push(sm, [name, value])
        note(sm, name, result[0], headers)
        return result

    return applied_once(sm, "work_queue", name, msg_id, apply)


def note(sm: StateMachine, name: str, item_id: int, headers: Headers) -> None:
    """Item ``item_id`` of work queue ``name`` carries ``headers``."""
    table = work_headers(sm, name)
    if table is None:
        table = sm.work_headers[name] = OffsetHeaders(sm.work_queues[name])
    elif table.due():
        table.keep_only(live_ids(sm, name))
    table.note(item_id, headers)


def capture(sm: StateMachine) -> dict[str, Any]:
    return {name: table.entries() for name in list(sm.work_headers)
            if (table := work_headers(sm, name, prune=True)) is not None and len(table)}


def restore(sm: StateMachine, doc: Any) -> None:
    sm.work_headers = {}
    for name, entries in doc.items():
        state = sm.work_queues.get(name)
        if state is not None:
            table = sm.work_headers[name] = OffsetHeaders(state)
            table.load(checked_table(entries, f"snapshot section 'headers': work queue "
                                              f"{shown(name)}"))
