"""The give-back properties of :mod:`.session_givers`, checked over the committed log.

:func:`check_give_backs`, per giver: the elements its applied pops took are exactly
those it handed out, those its applied give-backs returned and those it kept (died,
unsent, refused), none twice; of a give-back sent twice (through two members, under
two sequence numbers) at most one applied, the other refused as it applied or at a
gate (its elements kept only when neither applied); no gate refused a give-back whose
pop its member had applied, the session held; a give-back the client is told was not applied
(refused with no attempt of it gone unanswered) never applied. Over the whole log: an
element given back to the head (by any client) is the next taken from it, in the order
given back, and each one a giver returned is taken again once or still queued at the
end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.session_popped import REFUSED

from .client import QUEUE, Client
from .history import History, Violation
from .session_givers import GIVE_BACKS as _GIVE_BACKS
from .session_givers import POPS as _POPS
from .session_givers import SessionGiver


def check_give_backs(history: History, clients: Sequence[Client],
                     final_queue: list[Any] | None) -> dict[str, int]:
    """The give-back properties (module docstring); returns what was checked."""
    givers = {cl.session: cl for cl in clients if isinstance(cl, SessionGiver)}
    head: list[tuple[Any, str]] = []  # what the next pops of the queue must take
    outstanding: Counter[Any] = Counter()  # returned by a giver, not taken since
    taken: dict[int, Counter[Any]] = {s: Counter() for s in givers}
    returned: dict[int, Counter[Any]] = {s: Counter() for s in givers}
    seen: set[tuple[int, int]] = set()
    stats = Counter[str]()
    for op in history.in_order():
        key = (op.session, op.seq)
        if key in seen or not op.args or op.args[0] != QUEUE:
            continue
        seen.add(key)
        giver = givers.get(op.session)
        if op.code in _GIVE_BACKS and op.result is None:
            values = [op.args[1]] if op.code == C.QUEUE_UNPOP else list(op.args[1])
            who = giver.cid if giver is not None else "a member's consumer"
            head[:0] = [(v, f"{who} at index {op.index}") for v in values]
            if giver is not None:
                returned[op.session].update(values)
                outstanding.update(values)
                stats["give_backs"] += 1
        elif (op.code in C.CHECKED_GIVE_BACKS and isinstance(op.result, OpError)
              and op.result.code == REFUSED):
            stats["refused_applying"] += 1  # nothing applied (:mod:`.checked_give_backs`)
        elif op.code in _GIVE_BACKS and giver is not None:
            raise Violation(f"{giver.cid}: give-back (seq {op.seq}) of popped elements applied "
                            f"at index {op.index} returning {op.result!r:.80}")
        elif op.code in _POPS:
            got = _popped(op.code, op.result)
            if giver is not None:
                taken[op.session].update(got)
            for value in got:
                if head:
                    expected, where = head.pop(0)
                    if value != expected:
                        raise Violation(f"index {op.index}: a pop took {value!r:.40} where "
                                        f"{expected!r:.40}, given back by {where}, was next")
                    stats["head_checked"] += 1
                if outstanding[value] > 0:
                    outstanding[value] -= 1
                    stats["taken_again"] += 1
    queued = Counter(final_queue or [])
    for value, count in (+outstanding).items():
        if queued[value] < count:
            raise Violation(f"element {value!r:.60} a giver gave back was never taken again "
                            "and is not queued: lost")
    for session, giver in givers.items():
        if giver.refused_holding:
            raise Violation(f"{giver.cid}: {giver.refused_holding[0]}; the client keeps its "
                            "elements (the library's own give-back is lost once every "
                            f"member refuses it; {len(giver.refused_holding)} such)")
        kept = Counter(giver.handed)
        for values in giver.stranded.values():
            kept.update(values)
        for seq in giver.refused_told:
            if (session, seq) in history.results:
                raise Violation(f"{giver.cid}: give-back (seq {seq}) applied at index "
                                f"{history.results[session, seq].index}, though the client "
                                "was told it was not applied (a member's gate refused it)")
        for seq, other in giver.twice.items():
            applied = [s for s in (seq, other) if (session, s) in history.results
                       and history.results[session, s].result is None]
            if len(applied) > 1:
                raise Violation(f"{giver.cid}: one give-back sent twice (seq {seq} and "
                                f"{other}, through two members) applied twice")
            stats["sent_twice"] += 1
            if seq in giver.twice_refused and not applied:
                kept.update(giver.twice_refused[seq])
        for seq, values in giver.refused_seqs.items():
            if (session, seq) not in history.results:
                kept.update(values)
                stats["refused"] += len(values)
            else:
                stats["refused_unknown_applied"] += 1
        accounted = kept + returned[session]
        if accounted != taken[session]:
            raise Violation(f"{giver.cid}: its pops took {_shown(taken[session] - accounted)} "
                            f"that it neither handed out, gave back nor kept; it accounts "
                            f"for {_shown(accounted - taken[session])} it never took")
    stats["refused"] += sum(len(g.stranded["refused"]) for g in givers.values())
    stats["unsent"] = sum(len(g.stranded["unsent"]) for g in givers.values())
    stats["died"] = sum(len(g.stranded["died"]) for g in givers.values())
    stats["handed"] = sum(len(g.handed) for g in givers.values())
    stats["retried_applied"] = sum(g.retried_applied for g in givers.values())
    return dict(stats)


def _popped(code: int, result: Any) -> list[Any]:
    if code == C.QUEUE_POP:
        return [result] if isinstance(result, str) else []
    if code == C.QUEUE_POP_MANY:
        return list(result) if isinstance(result, list) else []
    return list(result[0]) if isinstance(result, list) and result else []


def _shown(counter: Counter[Any]) -> str:
    items = sorted((+counter).elements(), key=repr)
    return "nothing" if not items else f"{items!r:.120}"
