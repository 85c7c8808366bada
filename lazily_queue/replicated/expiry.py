"""Message expiry on the replicated cells: TTL pushes, expiry rules, sweeps.

- ``QUEUE_PUSH_TTL`` / ``WORK_PUSH_TTL`` ``[name, ttl_ms, value]``: the plain push, the
  element's deadline being the entry's leader stamp plus ``ttl_ms``.
- ``EXPIRY_RULES`` ``[name, kind, default_ttl_ms | None, max_age_ms | None]``: a cell's
  default TTL (and a topic's retention by age), proposed by whoever opens it with rules;
  a cell has one set of rules: opening it again with other rules is refused
  (``expiry_mismatch``), opening it without rules keeps them.
- ``EXPIRE`` ``[name, kind, limit]``: removes what expired at the entry's stamp, at
  most ``limit`` elements (``1..EXPIRE_LIMIT``; a periodic leader entry, proposed again
  at once while one removes ``limit``). An ``[name, kind]`` entry (an older log's)
  removes them all.

A pop or claim removes the expired elements it meets too, at most :data:`EXPIRE_LIMIT`
of them: past that it stops before the next expired one, answering what it took (or
``Empty``) and leaving the rest to the sweeps or its next try, so that no entry holds
the members' event loops for long, whatever the backlog. A topic's expired head
leaves whole at each publish, GC or sweep (at most ``limit`` by a sweep): it costs no
Python step per element.

Every decision reads the stamp of the entry being applied (``sm.now``), never a clock,
so every replica removes the same elements at the same entry; a pop or claim never hands
out an element expired at its own stamp, whether or not a sweep removed it before.
Expired elements leave as pops (queue) or discards (work queue) and are reported with
:class:`~.events.Expired`. The rules, deadlines and counts are snapshot section
``expiry`` (``{kind: {name: Expiry.to_list()}}``, left out while no cell has rules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol

from ..core import ids
from ..core.expiry import Expiry, checked_ms
from ..core.expiry_take import (
    age_frontier,
    claim_live,
    expire_queue_head,
    expire_work_head,
    pop_live,
)
from ..core.fifo import Fifo
from ..core.headers import Headers
from ..core.queue import POP, QueuePopError
from ..core.topic import TopicCore
from ..core.work_masks import EXPIRED as WORK_EXPIRED
from ..errors import shown
from . import ops
from .events import Expired, QueueChanged, TopicChanged, WorkQueueChanged
from .family import Family, Section, checked_name
from .group_retake import check_retained, retake_deadlines
from .ops import OpRefused

if TYPE_CHECKING:
    from ..core.work_scheduled import Fitting
    from .state_machine import StateMachine

KINDS = ("queue", "work_queue", "topic")
#: The most expired elements one entry's pop, claim or sweep removes from a cell (a
#: member spends a few microseconds on each).
EXPIRE_LIMIT: Final = 10_000


def _checked_ttl(value: Any) -> int:
    try:
        ttl = checked_ms(value, "ttl")
    except ValueError as exc:
        raise OpRefused("bad_ttl", str(exc)) from None
    if ttl is None:
        raise OpRefused("bad_ttl", "a TTL push needs a ttl (ms)")
    return ttl


def of(sm: StateMachine, kind: str, name: str, create: bool = False) -> Expiry | None:
    """The expiry state of a cell (made when ``create``), or ``None``."""
    found = sm.expiry.get((kind, name))
    if found is None and create:
        found = sm.expiry[(kind, name)] = Expiry()
    return found


def _report(sm: StateMachine, kind: str, name: str, n: int) -> None:
    if n:
        sm.emit(Expired(kind, name, n))


# -- queues -------------------------------------------------------------------------------

class _StampedPops(Protocol):
    """A :data:`~..core.expiry_take.StampedPop` of ``k`` elements (one unless told)."""

    def __call__(self, k: int = 1, /) -> tuple[list[Any], list[ids.Run]] | QueuePopError: ...


def _queue_pop(sm: StateMachine, name: str, q: Fifo[Any],
               taken: dict[int, Headers] | None = None) -> _StampedPops:
    """``q``'s pop of ``k`` elements (one unless told) that reports each transition (and,
    with ``taken``, adds the headers of what it pops there): a
    :data:`~..core.expiry_take.StampedPop` and a :data:`~..core.expiry_take.RunPop`."""
    def pop(k: int = 1, /) -> tuple[list[Any], list[ids.Run]] | QueuePopError:
        pre = q.len()
        if taken is None:
            result = q.pop_stamped(k)
        else:
            got = q.pop_headers(k)
            if isinstance(got, QueuePopError):
                return got
            taken.update((i, h) for i, h in got[2])
            result = got[0], got[1]
        if not isinstance(result, QueuePopError):
            sm.events.extend([QueueChanged(name, POP, pre - i) for i in range(len(result[0]))])
        return result
    return pop


def expire_queue(sm: StateMachine, name: str, q: Fifo[Any], expiry: Expiry,
                 limit: int | None) -> None:
    pop = _queue_pop(sm, name, q)
    _report(sm, "queue", name, expire_queue_head(q, expiry, sm.now, pop, limit, pop))


def queue_take(sm: StateMachine, name: str, q: Fifo[Any], expiry: Expiry, n: int,
               stamped: bool, taken: dict[int, Headers] | None = None) -> Any:
    """What a pop of up to ``n`` answers when the queue has expiry rules or deadlines:
    live elements only (``[values, runs]`` when ``stamped``, else the values), at most
    :data:`EXPIRE_LIMIT` expired ones removed; with ``taken``, the headers of every
    element popped (expired ones too) land there."""
    pop = _queue_pop(sm, name, q, taken)
    result, expired = pop_live(q, expiry, sm.now, n, pop, EXPIRE_LIMIT, pop)
    _report(sm, "queue", name, expired)
    if isinstance(result, QueuePopError):
        return result
    return list(result) if stamped else result[0]


def queue_gave_back(expiry: Expiry, runs: list[ids.Run]) -> None:
    """Elements given back to the head with their ids: their deadlines apply again."""
    for element_id, _ in ids.expand(runs):
        expiry.give_back(element_id)


def _push_queue(sm: StateMachine, args: list[Any]) -> Any:
    from .queues import push
    if len(args) != 3:
        raise OpRefused("bad_args", "queue_push_ttl is [name, ttl_ms, value]")
    name, ttl = checked_name(args[0]), _checked_ttl(args[1])
    result = push(sm, [name, args[2]])
    if result is None:
        q = sm.queues[name]
        of(sm, "queue", name, True).note(q.next_id() - 1, sm.now, ttl)  # type: ignore[union-attr]
    return result


# -- work queues --------------------------------------------------------------------------

def work_claim(sm: StateMachine, name: str, core: Any, expiry: Expiry, worker: str,
               now: int, n: int | None, fitting: Fitting | None = None) -> tuple[Any, int]:
    """A claim (``n`` None) or claim of up to ``n`` (no more than ``fitting`` answers)
    on a work queue with expiry: ``(result, mask)`` as the core's claim answers them.
    Expiry is decided at ``now``, except on a consumer group's queue: its elements carry
    deadlines from the leader's stamps of their publishes, so its claims decide at the
    entry's stamp (an explicit ``now`` sets the leases only)."""
    state = sm.work_queues.get(name)
    fed = state is not None and (state.group is not None or state.mirrored_group)
    leased, expired, mask = claim_live(core, expiry, worker, sm.now if fed else now, now,
                                       1 if n is None else n, fitting, EXPIRE_LIMIT)
    _report(sm, "work_queue", name, expired)
    if expired:
        mask |= WORK_EXPIRED
    if n is None:
        return (leased[0] if leased else None), mask
    return leased, mask


def _push_work(sm: StateMachine, args: list[Any]) -> Any:
    from .work_queues import push
    if len(args) != 3:
        raise OpRefused("bad_args", "work_push_ttl is [name, ttl_ms, value]")
    name, ttl = checked_name(args[0]), _checked_ttl(args[1])
    result = push(sm, [name, args[2]])
    of(sm, "work_queue", name, True).note(result[0], sm.now, ttl)  # type: ignore[union-attr]
    return result


# -- topics -------------------------------------------------------------------------------

def expire_topic(sm: StateMachine, name: str, topic: TopicCore[Any], expiry: Expiry,
                 limit: int | None = None) -> int:
    """Drop the elements of ``topic`` past its age limit at the entry's stamp (at most
    ``limit``; ``None``: all), moving the cursors that had not read them (the gap is
    counted per subscriber); returns how many elements left."""
    frontier = age_frontier(topic, expiry, sm.now)
    if limit is not None:
        frontier = min(frontier, topic.base_offset() + limit)
    if frontier <= topic.base_offset():
        return 0
    dropped = frontier - topic.base_offset()
    skipped, invalidated = topic.drop_before(frontier)
    expiry.expired += dropped
    expiry.skipped += sum(skipped.values())
    expiry.forget_below(frontier)
    sm.emit(Expired("topic", name, dropped, sum(skipped.values())))
    if invalidated:
        sm.emit(TopicChanged(name, invalidated))
    return dropped


# -- rules and sweeps ---------------------------------------------------------------------

def _exists(sm: StateMachine, kind: str, name: str) -> bool:
    if kind == "queue":
        return name in sm.queues
    return name in (sm.work_queues if kind == "work_queue" else sm.topics)


def _kind_name(args: list[Any]) -> tuple[str, str]:
    name = checked_name(args[0] if args else None)
    if len(args) < 2 or args[1] not in KINDS:
        raise OpRefused("bad_kind", f"kind must be one of {', '.join(KINDS)}")
    return args[1], name


def _rules(sm: StateMachine, args: list[Any]) -> Any:
    if len(args) != 4:
        raise OpRefused("bad_args", "expiry_rules is [name, kind, default_ttl_ms, max_age_ms]")
    kind, name = _kind_name(args)
    try:
        default, max_age = checked_ms(args[2], "default ttl"), checked_ms(args[3], "max age")
    except ValueError as exc:
        raise OpRefused("bad_ttl", str(exc)) from None
    if max_age is not None and kind != "topic":
        raise OpRefused("bad_args", "max_age is a topic's retention; a queue has ttl")
    if not _exists(sm, kind, name):
        raise OpRefused(f"unknown_{kind}", f"{kind} {shown(name)} has not been declared")
    expiry = of(sm, kind, name)
    if expiry is not None and (expiry.default_ms, expiry.max_age_ms) != (None, None):
        if expiry.rules() != [default, max_age]:
            raise OpRefused("expiry_mismatch", f"{kind} {shown(name)} has ttl="
                            f"{expiry.default_ms} ms"
                            f" and max_age={expiry.max_age_ms} ms; open it with the same "
                            "rules (or none) on every node")
        return None
    expiry = of(sm, kind, name, True)
    assert expiry is not None
    expiry.default_ms, expiry.max_age_ms = default, max_age
    return None


def _limit(args: list[Any]) -> int | None:
    """A sweep's limit: ``None`` for ``[name, kind]`` (an older log's entry: all)."""
    if len(args) < 3:
        return None
    limit = args[2]
    if type(limit) is not int or not 0 < limit <= EXPIRE_LIMIT or len(args) > 3:
        raise OpRefused("bad_args", f"expire is [name, kind, limit] with a limit in "
                        f"1..{EXPIRE_LIMIT}, not {str(args[2:])[:40]}")
    return limit


def _sweep(sm: StateMachine, args: list[Any]) -> Any:
    """Remove what expired at this entry's stamp (at most the limit); returns how many
    left."""
    kind, name = _kind_name(args)
    limit = _limit(args)
    expiry = of(sm, kind, name)
    if expiry is None or not _exists(sm, kind, name):
        return 0
    before = expiry.expired
    if kind == "queue":
        expire_queue(sm, name, sm.queues[name], expiry, limit)
    elif kind == "work_queue":
        n, mask = expire_work_head(sm.work_queues[name].core, expiry, sm.now, limit)
        _report(sm, kind, name, n)
        if mask:
            sm.emit(WorkQueueChanged(name, mask | WORK_EXPIRED))
    else:
        expire_topic(sm, name, sm.topics[name], expiry, limit)
    return expiry.expired - before


def due(sm: StateMachine, now: int) -> list[tuple[str, str]]:
    """``(name, kind)`` of the cells holding an element expired at ``now`` at their
    head (what an ``EXPIRE`` would remove)."""
    found: list[tuple[str, str]] = []
    for (kind, name), expiry in sm.expiry.items():
        if kind == "queue":
            q = sm.queues.get(name)
            head = None if q is None else q.head_id()
            if head is not None and expiry.is_expired(head[0], head[1], now):
                found.append((name, kind))
        elif kind == "work_queue":
            state = sm.work_queues.get(name)
            item = None if state is None else state.core.head()
            if (state is not None and item is not None and item.attempts == 0
                    and expiry.is_expired(item.item_id, state.core.stamp_of(item.item_id),
                                          now)):
                found.append((name, kind))
        else:
            topic = sm.topics.get(name)
            if topic is not None and age_frontier(topic, expiry, now) > topic.base_offset():
                found.append((name, kind))
    return found


def forget(sm: StateMachine, kind: str, name: str) -> None:
    """The cell was deleted: its rules and deadlines go with it."""
    sm.expiry.pop((kind, name), None)


def _capture(sm: StateMachine) -> dict[str, Any] | None:
    if not sm.expiry:
        return None
    doc: dict[str, dict[str, Any]] = {}
    for (kind, name), expiry in sm.expiry.items():
        doc.setdefault(kind, {})[name] = expiry.to_list()
    return doc


def _restore(sm: StateMachine, doc: Any) -> None:
    sm.expiry = {}
    if doc is not None:
        _restore_records(sm, doc)
    retake_deadlines(sm)  # a group listed item by item may hold its run's deadlines


def _restore_records(sm: StateMachine, doc: Any) -> None:
    if type(doc) is not dict or not all(k in KINDS and type(v) is dict for k, v in doc.items()):
        raise ValueError("snapshot section 'expiry' maps a kind (queue, work_queue, topic) "
                         "to {name: expiry record}")
    for kind, cells in doc.items():
        for name, raw in cells.items():
            try:
                record = Expiry.from_list(raw)
                check_retained(sm.work_queues, kind, str(name), record)
                sm.expiry[(kind, str(name))] = record
            except ValueError as exc:
                raise ValueError(
                    f"snapshot section 'expiry': {kind} {shown(name)}: {exc}") from None


FAMILY = Family("expiry", {
    ops.QUEUE_PUSH_TTL: _push_queue,
    ops.WORK_PUSH_TTL: _push_work,
    ops.EXPIRY_RULES: _rules,
    ops.EXPIRE: _sweep,
}, (Section("expiry", _capture, _restore),))
