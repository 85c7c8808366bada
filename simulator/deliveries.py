"""What clients were handed, checked against the committed history.

- Every operation applied under a client session (:mod:`.session_client`) was answered
  to its client, with the result it was applied with: a client retries until it has an
  answer, so a pop or claim that took an element and whose answer never reached its
  consumer lost that element. An op whose result was ``None`` may be answered
  :data:`~lazily_queue.replicated.session_results.NOT_KEPT` instead (applied, its result
  no longer kept: a retry arriving through a member after its session was given up for
  the bound): nothing is lost by it.
- No queue element was delivered to two consumers: across every consumer, an element
  is handed out at most as often as it was pushed (a consumer's pops that returned it,
  less the elements it put back at the head; a producer giving an element back twice
  gives one copy more than it took: :mod:`.doubled_give_backs`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.session_results import NOT_KEPT

from .client import FAILED, OK, Client
from .doubled_give_backs import DoublingProducer
from .history import History, Violation
from .session_client import SessionClient, SessionConsumer
from .session_givers import SessionGiver
from .workload import Consumer


def check_session_answers(history: History, clients: Sequence[Client]) -> int:
    """Every op applied under a session client's session was answered with its result;
    returns how many were checked."""
    sessions = {cl.session: cl for cl in clients if isinstance(cl, SessionClient)}
    checked = 0
    for (session, seq), applied in history.results.items():
        client = sessions.get(session)
        if client is None or seq in getattr(client, "unawaited", ()):
            continue  # (a retry refused at a member's gate: :mod:`.session_givers`)
        checked += 1
        name = C.op_name(applied.code)
        if seq not in client.answers:
            raise Violation(f"{client.cid}: {name} {applied.args!r:.60} (seq {seq}) applied at "
                            f"index {applied.index} returning {applied.result!r:.60} was never "
                            "answered to its client")
        answer = client.answers[seq]
        if answer != applied.result and not (answer == NOT_KEPT and applied.result is None):
            raise Violation(f"{client.cid}: {name} (seq {seq}) was answered "
                            f"{answer!r:.60}, it applied at index {applied.index} "
                            f"returning {applied.result!r:.60}")
    return checked


def delivered(client: Client) -> Counter[Any]:
    """The queue elements ``client`` was handed and kept."""
    if isinstance(client, SessionConsumer):
        return Counter(client.delivered)
    if isinstance(client, DoublingProducer):  # less than nothing for a copy it made
        return client.net
    if isinstance(client, SessionGiver):  # handed out, or kept as it died or was refused
        kept = Counter(client.handed)
        for values in client.stranded.values():
            kept.update(values)
        return kept
    got: Counter[Any] = Counter()
    if not isinstance(client, Consumer):
        return got
    for obs in client.ops:
        if obs.outcome == OK and obs.code == C.QUEUE_POP and isinstance(obs.result, str):
            got[obs.result] += 1
        elif obs.outcome == OK and obs.code == C.QUEUE_POP_MANY and isinstance(obs.result, list):
            got.update(obs.result)
        elif (obs.outcome == OK and obs.code == C.QUEUE_POP_STAMPED
              and isinstance(obs.result, list)):
            got.update(obs.result[0])
        elif obs.code in (C.QUEUE_UNPOP_MANY, C.QUEUE_UNPOP_STAMPED) and obs.outcome != FAILED:
            got.subtract(obs.args[1])  # put back (or maybe: an unknown outcome)
    return got


def check_single_delivery(pushes: Counter[Any], clients: Sequence[Client]) -> int:
    """No element handed out more often than it was pushed (``pushes``: per element, the
    pushes the log applied); returns how many elements consumers kept."""
    total: Counter[Any] = Counter()
    for client in clients:
        total.update(delivered(client))
    for value, count in total.items():
        if count > pushes.get(value, 0):
            owners = sorted(cl.cid for cl in clients if delivered(cl).get(value, 0) > 0)
            raise Violation(f"element {value!r:.60} was delivered {count} times (to "
                            f"{', '.join(owners)}), pushed {pushes.get(value, 0)} times")
    return sum(count for count in total.values() if count > 0)
