"""The sizes and bounds of the state machine's bounded bookkeeping tables, read from
counts the state keeps (no table is walked): what a status and the metrics show so an
operator sees one filling before it gives entries up.

:func:`table_sizes` answers, by table:

- ``client_sessions``: ``count`` held, ``limit`` (past it the client holding the most
  gives up its least recently seen one), ``clients`` holding one and
  ``most_per_client``, the most one client holds (the bound of which is ``limit``: a
  client alone may fill the table; once it is full, the client at ``most_per_client``
  gives one up for each session opened);
- ``ended_sessions``: ``count`` of ended client session ids kept, ``limit``, and
  ``kept_ms`` each is kept at most;
- ``kept_results``: ``bytes`` of results all sessions keep, ``limit`` in all, and
  ``per_client_session`` / ``per_member_session`` bytes one session keeps at most;
- ``receipts``: settlement ``count`` of all work queues, ``limit`` in all and
  ``per_work_queue``;
- ``ephemeral_owners``: client ``sessions`` owning ephemeral subscriptions (each a held
  client session, so ``limit`` is the client sessions'), and the ``subscriptions`` they
  own;
- ``popped``: ``count`` of elements client sessions popped and did not give back, held
  so they may give them back (:mod:`.session_popped`), ``limit`` in all and
  ``per_session``; ``popped_bytes``: ``bytes`` of the pop results holding them (written
  into every snapshot, even while every queue is empty) and their ``limit``.
"""

from __future__ import annotations

from typing import Any

from .session_end import ENDED_KEPT
from .session_popped import BYTES, ELEMENTS, SESSION_ELEMENTS
from .session_results import KEPT_BYTES, MEMBER_KEPT_BYTES, SESSION_KEPT_BYTES
from .state_machine import MAX_CLIENT_SESSIONS, SESSION_TTL_MS, StateMachine
from .work_queues import RECEIPTS_KEPT


def table_sizes(sm: StateMachine) -> dict[str, dict[str, Any]]:
    """The bounded tables of ``sm`` (see the module docstring), in O(1)."""
    sessions_limit = sm.max_client_sessions or MAX_CLIENT_SESSIONS
    owners = sm.ephemeral_owners
    return {
        "client_sessions": {"count": sm.client_counts.total, "limit": sessions_limit,
                            "clients": len(sm.client_counts.order),
                            "most_per_client": sm.client_counts.most},
        "ended_sessions": {"count": len(sm.ended), "limit": ENDED_KEPT,
                           "kept_ms": SESSION_TTL_MS},
        "kept_results": {"bytes": sm.kept.total, "limit": KEPT_BYTES,
                         "per_client_session": SESSION_KEPT_BYTES,
                         "per_member_session": MEMBER_KEPT_BYTES},
        "receipts": {"count": sm.receipt_ledger.total, "limit": sm.receipt_ledger.limit,
                     "per_work_queue": RECEIPTS_KEPT},
        "ephemeral_owners": {"sessions": len(owners.alive), "limit": sessions_limit,
                             "subscriptions": len(owners)},
        "popped": {"count": sm.popped.count, "limit": ELEMENTS,
                   "per_session": SESSION_ELEMENTS},
        "popped_bytes": {"bytes": sm.popped.bytes, "limit": BYTES},
    }
