"""Registered client sessions: a client session is opened by a replicated op, and an op
under a registered id the table does not hold is refused, never applied.

- ``SESSION_REGISTER`` ``[owner_tag, nonce]``, proposed by a member for its client: opens
  a client session and answers its id, ``REGISTERED_BASE + CHOSEN + (owner_tag <<
  OWNER_SHIFT) + hidden(key, n)`` with ``n`` the count of registrations applied so far
  (this one included) and ``hidden`` a permutation of the counts keyed by the cluster's
  session key: the ``nonce`` (a random int of 64 bits) of the first registration that
  carried one. So ids are never issued twice, and no client can guess another's: a
  member checks only a session id's tag against the client naming it, and two clients
  of different members may share a tag. The older ``[owner_tag]`` answers the counted
  id ``REGISTERED_BASE + (owner_tag << OWNER_SHIFT) + n``. Every application counts, so
  a delayed duplicate registers another id, never an old one; the tag keeps the
  per-client bound of :mod:`.client_sessions`. Proposed inside a client session it is
  refused (``session_register_in_session``).
- An op under a registered id that is neither held nor ended (the session was idle for
  :data:`~.state_machine.SESSION_TTL_MS`, given up for the bound on sessions, or its
  ended id forgotten) is refused with :data:`UNKNOWN` and not applied: an op retried
  after its session was forgotten is never applied a second time in a fresh session.

The ids below :data:`REGISTERED_BASE` are the random ones clients of protocols 3 and 4
choose; the state machine still opens such a session at its first op (a retry of theirs
after the session was forgotten may apply again: upgrade those clients).
Snapshot section ``registered_sessions``: the count, or ``[count, key]`` once a key is
set (left out while the count is 0).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING, Any

from ..errors import shown
from . import ops
from .client_sessions import OWNER_MASK, OWNER_SHIFT
from .family import Family, Section
from .ops import OpError, OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: Registered client session ids are at least this (and below ``2**64``).
REGISTERED_BASE = 2**63
#: Registrations a cluster answers at most (the id's low bits count them).
MAX_REGISTRATIONS = 2**OWNER_SHIFT - 1
#: The bit set in a registered id whose low bits hide the count (see the docstring).
CHOSEN = 2**62
#: A session key (and a register's nonce) is an int in 1..MAX_KEY.
MAX_KEY = 2**64 - 1
_HALF = OWNER_SHIFT // 2
_HALF_MASK = (1 << _HALF) - 1

#: The answer to an op under a registered session the table does not hold.
UNKNOWN = OpError("session_unknown", "this client session is not held by the cluster (idle "
                  "for an hour, given up for the bound on client sessions, or its end "
                  "forgotten); the op was not applied: a client registers a new session "
                  "for its new ops, and reads the objects to learn whether an earlier "
                  "attempt of this op applied")

#: The answer to ``SESSION_REGISTER`` proposed inside a client session.
IN_SESSION = OpError("session_register_in_session", "session_register opens a client "
                     "session: a member proposes it for its client, not inside a session")


def registered(sid: int) -> bool:
    """Whether ``sid`` is a registered client session id (never opened by an op)."""
    return sid >= REGISTERED_BASE


def hidden(key: int, n: int) -> int:
    """``n`` (below ``2**OWNER_SHIFT``) permuted under ``key``: four Feistel rounds of a
    keyed BLAKE2b, so distinct counts give distinct values that only ``key`` relates."""
    left, right = n >> _HALF, n & _HALF_MASK
    secret = key.to_bytes(8, "big")
    for round_ in range(4):
        mixed = hashlib.blake2b(bytes((round_,)) + right.to_bytes(3, "big"), key=secret,
                                digest_size=4).digest()
        left, right = right, left ^ (int.from_bytes(mixed, "big") & _HALF_MASK)
    return (left << _HALF) | right


def nonce() -> int:
    """A random nonce for ``SESSION_REGISTER``."""
    return 1 + secrets.randbelow(MAX_KEY)


def _register(sm: StateMachine, args: list[Any]) -> int:
    if (not 1 <= len(args) <= 2 or type(args[0]) is not int or not 0 <= args[0] <= OWNER_MASK
            or (len(args) == 2 and (type(args[1]) is not int or not 0 < args[1] <= MAX_KEY))):
        raise OpRefused("malformed_session_register", "session_register is [owner_tag, "
                        f"nonce] with a tag in 0..{OWNER_MASK} and a nonce in 1..{MAX_KEY} "
                        "(or [owner_tag])")
    if sm.registrations >= MAX_REGISTRATIONS:
        raise OpRefused("session_ids_exhausted", "this cluster registered every client "
                        "session id it can; start a new cluster")
    sm.registrations += 1
    sid = REGISTERED_BASE + (args[0] << OWNER_SHIFT)
    if len(args) == 1:
        sid += sm.registrations
    else:
        if not sm.session_key:
            sm.session_key = args[1]
        sid += CHOSEN + hidden(sm.session_key, sm.registrations)
    sm.open_client_session(sid)
    return sid


def _capture(sm: StateMachine) -> int | list[int] | None:
    if sm.session_key:
        return [sm.registrations, sm.session_key]
    return sm.registrations or None


def _restore(sm: StateMachine, doc: Any) -> None:
    key = 0
    if type(doc) is list and len(doc) == 2:
        doc, key = doc
        if type(key) is not int or not 0 < key <= MAX_KEY:
            raise ValueError(f"snapshot section 'registered_sessions': key {shown(key)} is "
                             f"not an int in 1..{MAX_KEY}")
    if doc is not None and (type(doc) is not int or not 0 < doc <= MAX_REGISTRATIONS):
        raise ValueError(f"snapshot section 'registered_sessions': {shown(doc)} is not a "
                         f"count of registrations in 1..{MAX_REGISTRATIONS}")
    count = doc or 0
    for sid in [*sm.sessions, *sm.ended.ended]:
        if registered(sid) and not sid & CHOSEN and (sid & MAX_REGISTRATIONS) > count:
            raise ValueError(f"snapshot: client session {sid} was registered after the "
                             f"{count} registrations of section 'registered_sessions'; the "
                             "snapshot is inconsistent")
    sm.registrations, sm.session_key = count, key


FAMILY = Family(
    "session_register",
    {ops.SESSION_REGISTER: _register},
    (Section("registered_sessions", _capture, _restore),),
)
