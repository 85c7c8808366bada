"""A client's ping and its answer: a member that cannot commit says so.

A linked client pings its member when it has heard nothing for ``ping_interval``. The
member answers ``None``, or ``["storage_unavailable", message]`` while its journal
refuses writes, or ``["no_quorum", message]`` once it has reached no majority for the
replica's ``no_quorum_grace`` or heard from no leader for its ``leader_window`` (its
links up, the others silent: a partition that drops packets) (:func:`ping_answer`): it
then applies nothing the others commit, so what a client mirrors from it stays as it
was (a stream, a reader, a watch wait on) while the cluster may go on. The client leaves
such a member for the next address (:func:`cannot_commit`), as it leaves one answering
an op so, pausing once every member said it; on the next link it pings at once, and
until that member answers that it can commit, a wait reaching its deadline raises
``Unreachable`` naming why. A client of an earlier version ignores the answer; a member
of one answers ``None``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import protocol as P

if TYPE_CHECKING:
    from ..node import Node

#: The most characters of a member's reason a client keeps.
REASON_CHARS = 500


def ping_answer(node: Node) -> list[str] | None:
    """What ``node`` answers a client's ping: why it cannot commit, or ``None``."""
    error = node.driver.disk_error
    if error is not None:
        return ["storage_unavailable",
                f"node {node.node_id} cannot write its journal ({error}): it applies "
                "nothing the other members commit until it can"]
    replica = node.driver.replica
    lost = replica.quorum_lost() or replica.leaderless()
    return None if lost is None else ["no_quorum", lost]


def cannot_commit(answer: Any) -> str | None:
    """The reason to leave a member, when its ``answer`` to a ping says it cannot
    commit; ``None`` otherwise (an answer of an earlier version included)."""
    if not isinstance(answer, tuple) or len(answer) != 2 or answer[0] != P.OK:
        return None
    payload = answer[1]
    if (isinstance(payload, list) and len(payload) == 2 and payload[0] in P.RETRYABLE
            and isinstance(payload[1], str)):
        return f"{payload[0]}: {payload[1][:REASON_CHARS]}"
    return None
