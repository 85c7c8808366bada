"""The op codes of the replicated queue state machine, their names and refusals.

An op travels as ``[seq, code, *args]`` inside a command batch
(:mod:`lazily_queue.raft.batch`). Codes are part of the replicated log's format: never
reuse or renumber one. Every code is listed in :data:`OP_NAMES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Queue operations: 1..8.
QUEUE_DECLARE = 1  # [name, capacity | None]
QUEUE_PUSH = 2  # [name, value]
QUEUE_POP = 3  # [name]
QUEUE_CLOSE = 4  # [name]
QUEUE_UNPOP = 5  # [name, value]: return an undelivered element to the head
QUEUE_POP_MANY = 6  # [name, n]: pop up to n elements at once
QUEUE_UNPOP_MANY = 7  # [name, values]: return undelivered elements to the head, in order
QUEUE_PUSH_ONCE = 8  # [name, msg_id, value]: push unless msg_id is in the dedup window
# Cluster operations: 9..19.
BARRIER = 9  # []
MEMBER_ADDRESS = 10  # [node_id, address]
CLIENT_OP = 11  # [session, seq, floor, code, *args]: a client's op, deduplicated by its session
CLIENT_OPS = 12  # [session, floor, [seq, code, *args], ...]: a client's ops proposed together
MEMBER_FORGET = 13  # [node_id, address?]: drop a node's replicated address (if still that one)
CLIENT_ALIVE = 14  # [[session, ...]]: these client sessions are alive (.ephemeral_owners)
EPHEMERAL_REAP = 15  # [grace_ms]: end the ephemeral subscriptions of stale client sessions
SESSION_END = 16  # []: a client's last op, ending the session it is applied in (.session_end)
SESSION_REGISTER = 17  # [owner_tag]: register a client session; answers its id (.session_register)
POPPED_CHECKING = 18  # []: checked give-backs are checked from here on (.session_popped)
# Topic operations: 20..29.
TOPIC_DECLARE = 20  # [name]
TOPIC_PUBLISH = 21  # [name, value]
TOPIC_SUBSCRIBE = 22  # [name, subscriber, durability]
TOPIC_RECONNECT = 23  # [name, subscriber]
TOPIC_DISCONNECT = 24  # [name, subscriber]
TOPIC_ADVANCE = 25  # [name, subscriber]
TOPIC_GC = 26  # [name]
TOPIC_RESTORE = 27  # [name, snapshot]: replace the topic's state (administration, seeding)
TOPIC_ADVANCE_TO = 28  # [name, subscriber, offset]: move the cursor to offset (read locally)
TOPIC_PUBLISH_ONCE = 29  # [name, msg_id, value]: publish unless msg_id is in the dedup window
# Work queue operations: 30..39.
WORK_DECLARE = 30  # [name, visibility_timeout_ms, max_deliveries]
WORK_PUSH = 31  # [name, value]
WORK_CLAIM = 32  # [name, worker, now | None]
WORK_ACK = 33  # [name, worker, delivery_id]
WORK_NACK = 34  # [name, worker, delivery_id]
WORK_REAP = 35  # [name, now | None]
WORK_EXTEND = 36  # [name, worker, delivery_id, now | None]
WORK_REDRIVE = 37  # [name, item_ids | None]
WORK_CLAIM_MANY = 38  # [name, worker, n, now | None]: lease up to n items at once
WORK_RELEASE = 39  # [name, worker, delivery_ids]: give unstarted leases back to the head
# Administration: 40..49.
QUEUE_PURGE = 40  # [name]: drop every element (the queue stays declared)
QUEUE_DELETE = 41  # [name]: forget the queue
TOPIC_DELETE = 42  # [name]: forget the topic, its elements and subscriptions
WORK_PURGE = 43  # [name, dead_letters]: drop every pending item (or every dead letter)
WORK_DELETE = 44  # [name]: forget the work queue (leases in flight included)
MEMBER_PAGE = 45  # [node_id, url | None]: where a member serves its status page
DEDUP_LIMITS = 46  # [max_entries, max_age_ms]: the bounds of the producer dedup window
TOPIC_DELETE_SUBSCRIBER = 47  # [name, subscriber]: forget one subscription and its cursor
# Work queue operations, continued: 50..59.
WORK_SETTLE_MANY = 50  # [name, worker, "acked" | "nacked", delivery_ids]: settle several at once
WORK_PUSH_ONCE = 51  # [name, msg_id, value]: push unless msg_id is in the dedup window
# Message ids and enqueue stamps: 60..69.
QUEUE_POP_STAMPED = 60  # [name, n]: pop up to n; [values, runs of [first_id, count, stamp]]
QUEUE_UNPOP_STAMPED = 61  # [name, values, runs]: give back to the head with their ids
QUEUE_UNPOP_STAMPED_CHECKED = 62  # as 61, of elements the session holds as popped (.session_popped)
# Transactions: 70..79.
TXN = 70  # [[code, *args], ...]: the ops of TXN_OPS applied all or none (.transactions)
# Topic replay and consumer groups: 80..89.
TOPIC_SUBSCRIBE_AT = 80  # [name, subscriber, durability, start]: a new cursor at start
TOPIC_SEEK = 81  # [name, subscriber, offset]: move a cursor within the retained range
GROUP_DECLARE = 82  # [topic, group, visibility_timeout_ms, max_deliveries, start]
# Replay by time and message headers: 90..99.
TOPIC_SUBSCRIBE_AT_TIME = 90  # [name, subscriber, durability, stamp_ms]: a new cursor there
TOPIC_SEEK_TIME = 91  # [name, subscriber, stamp_ms]: move a cursor to the first element at
#                       or after stamp_ms (the tail when none)
QUEUE_PUSH_HEADERS = 92  # [name, headers, msg_id | None, value]: a push with headers
QUEUE_POP_HEADERS = 93  # [name, n]: as QUEUE_POP_STAMPED; [values, runs, [[id, headers]..]]
QUEUE_UNPOP_HEADERS = 94  # [name, values, runs, [[id, headers], ...]]: give back with them
QUEUE_UNPOP_HEADERS_CHECKED = 97  # as 94, of elements the session holds as popped
TOPIC_PUBLISH_HEADERS = 95  # [name, headers, msg_id | None, value]: a publish with headers
WORK_PUSH_HEADERS = 96  # [name, headers, msg_id | None, value]: a push with headers
# Scheduling (priority, delayed delivery, back-off): 100..109.
WORK_DECLARE_RETRY = 100  # [name, visibility_timeout_ms, max_deliveries, [base_ms, factor, cap_ms]]
WORK_PUSH_SCHEDULED = 101  # [name, priority, delay_ms, not_before_ms, now, value]
WORK_NACK_DELAYED = 102  # [name, worker, delivery_id, delay_ms, now | None]: a later retry
WORK_PROMOTE = 103  # [name]: make the delayed items due at the entry stamp claimable
# Message expiry: 110..114 (.expiry).
QUEUE_PUSH_TTL = 110  # [name, ttl_ms, value]: push with a per-message TTL
WORK_PUSH_TTL = 111  # [name, ttl_ms, value]: push with a per-message TTL
EXPIRY_RULES = 112  # [name, kind, default_ttl_ms | None, max_age_ms | None]
EXPIRE = 113  # [name, kind]: remove what expired at the entry's stamp
# Limits and retention: 115..119.
QUEUE_DECLARE_LIMITED = 115  # [name, [max_length, max_bytes, overflow]]: a queue with limits
TOPIC_DECLARE_LIMITED = 116  # [name, [max_length, max_bytes, "drop_oldest"]]: retention
WORK_DECLARE_LIMITED = 117  # [name, visibility_timeout_ms, max_deliveries, limits]
# Queue push options combined, delayed queue elements: 120..129 (.queue_options).
QUEUE_PUSH_OPTIONS = 120  # [name, {msg_id, headers, ttl_ms, delay_ms, not_before_ms}, value]
QUEUE_PROMOTE = 121  # [name]: make the delayed elements due at the entry stamp poppable
# Topic options: 150..159 (.topic_options).
TOPIC_PUBLISH_OPTIONS = 150  # [name, {msg_id?, headers?, ttl?}, value]: a publish with options
# Work-queue options combined: 130..139 (.work_options).
WORK_PUSH_OPTIONS = 130  # [name, {msg_id, headers, ttl_ms, delay_ms, not_before_ms,
#                          priority}, now | None, value]: a push with any options
WORK_DECLARE_OPTIONS = 131  # [name, visibility_timeout_ms, max_deliveries, {retry, limits}]

#: The name of every op code (in errors, timeouts and logs).
OP_NAMES: dict[int, str] = {
    QUEUE_DECLARE: "queue_declare",
    QUEUE_PUSH: "queue_push",
    QUEUE_POP: "queue_pop",
    QUEUE_CLOSE: "queue_close",
    QUEUE_UNPOP: "queue_unpop",
    QUEUE_POP_MANY: "queue_pop_many",
    QUEUE_UNPOP_MANY: "queue_unpop_many",
    QUEUE_PUSH_ONCE: "queue_push_once",
    BARRIER: "barrier",
    MEMBER_ADDRESS: "member_address",
    CLIENT_OP: "client_op",
    CLIENT_OPS: "client_ops",
    MEMBER_FORGET: "member_forget",
    CLIENT_ALIVE: "client_alive",
    EPHEMERAL_REAP: "ephemeral_reap",
    SESSION_END: "session_end",
    SESSION_REGISTER: "session_register",
    POPPED_CHECKING: "popped_checking",
    TOPIC_DECLARE: "topic_declare",
    TOPIC_PUBLISH: "topic_publish",
    TOPIC_SUBSCRIBE: "topic_subscribe",
    TOPIC_RECONNECT: "topic_reconnect",
    TOPIC_DISCONNECT: "topic_disconnect",
    TOPIC_ADVANCE: "topic_advance",
    TOPIC_GC: "topic_gc",
    TOPIC_RESTORE: "topic_restore",
    TOPIC_ADVANCE_TO: "topic_advance_to",
    TOPIC_PUBLISH_ONCE: "topic_publish_once",
    WORK_DECLARE: "work_declare",
    WORK_PUSH: "work_push",
    WORK_CLAIM: "work_claim",
    WORK_ACK: "work_ack",
    WORK_NACK: "work_nack",
    WORK_REAP: "work_reap",
    WORK_EXTEND: "work_extend",
    WORK_REDRIVE: "work_redrive",
    WORK_CLAIM_MANY: "work_claim_many",
    WORK_RELEASE: "work_release",
    QUEUE_PURGE: "queue_purge",
    QUEUE_DELETE: "queue_delete",
    TOPIC_DELETE: "topic_delete",
    WORK_PURGE: "work_purge",
    WORK_DELETE: "work_delete",
    MEMBER_PAGE: "member_page",
    DEDUP_LIMITS: "dedup_limits",
    TOPIC_DELETE_SUBSCRIBER: "topic_delete_subscriber",
    WORK_SETTLE_MANY: "work_settle_many",
    WORK_PUSH_ONCE: "work_push_once",
    QUEUE_POP_STAMPED: "queue_pop_stamped",
    QUEUE_UNPOP_STAMPED: "queue_unpop_stamped",
    QUEUE_UNPOP_STAMPED_CHECKED: "queue_unpop_stamped_checked",
    TXN: "txn",
    TOPIC_SUBSCRIBE_AT: "topic_subscribe_at",
    TOPIC_SEEK: "topic_seek",
    GROUP_DECLARE: "group_declare",
    TOPIC_SUBSCRIBE_AT_TIME: "topic_subscribe_at_time",
    TOPIC_SEEK_TIME: "topic_seek_time",
    QUEUE_PUSH_HEADERS: "queue_push_headers",
    QUEUE_POP_HEADERS: "queue_pop_headers",
    QUEUE_UNPOP_HEADERS: "queue_unpop_headers",
    QUEUE_UNPOP_HEADERS_CHECKED: "queue_unpop_headers_checked",
    TOPIC_PUBLISH_HEADERS: "topic_publish_headers",
    WORK_PUSH_HEADERS: "work_push_headers",
    WORK_DECLARE_RETRY: "work_declare_retry",
    WORK_PUSH_SCHEDULED: "work_push_scheduled",
    WORK_NACK_DELAYED: "work_nack_delayed",
    WORK_PROMOTE: "work_promote",
    QUEUE_PUSH_TTL: "queue_push_ttl",
    WORK_PUSH_TTL: "work_push_ttl",
    EXPIRY_RULES: "expiry_rules",
    EXPIRE: "expire",
    QUEUE_DECLARE_LIMITED: "queue_declare_limited",
    TOPIC_DECLARE_LIMITED: "topic_declare_limited",
    WORK_DECLARE_LIMITED: "work_declare_limited",
    QUEUE_PUSH_OPTIONS: "queue_push_options",
    QUEUE_PROMOTE: "queue_promote",
    TOPIC_PUBLISH_OPTIONS: "topic_publish_options",
    WORK_PUSH_OPTIONS: "work_push_options",
    WORK_DECLARE_OPTIONS: "work_declare_options",
}


def family_of(code: int) -> str | None:
    """The kind of object an op code acts on (``"queue"``, ``"topic"``, ``"work_queue"``),
    named by the op's first argument; ``None`` for cluster ops."""
    return _FAMILIES.get(code)


#: Ops whose last argument is a user's message (bounded by the cluster's message size).
MESSAGE_OPS = frozenset({QUEUE_PUSH, TOPIC_PUBLISH, WORK_PUSH,
                         QUEUE_PUSH_ONCE, TOPIC_PUBLISH_ONCE, WORK_PUSH_ONCE,
                         QUEUE_PUSH_HEADERS, TOPIC_PUBLISH_HEADERS, WORK_PUSH_HEADERS,
                         WORK_PUSH_SCHEDULED, QUEUE_PUSH_TTL, WORK_PUSH_TTL,
                         QUEUE_PUSH_OPTIONS, TOPIC_PUBLISH_OPTIONS,
                         WORK_PUSH_OPTIONS})

#: The deduplicated push of each family and the plain op it applies once.
ONCE_OPS: dict[int, int] = {QUEUE_PUSH_ONCE: QUEUE_PUSH, TOPIC_PUBLISH_ONCE: TOPIC_PUBLISH,
                            WORK_PUSH_ONCE: WORK_PUSH}

#: The ops a transaction may carry.
TXN_OPS = frozenset({QUEUE_PUSH, QUEUE_PUSH_ONCE, TOPIC_PUBLISH, TOPIC_PUBLISH_ONCE,
                     WORK_PUSH, WORK_PUSH_ONCE, WORK_ACK, WORK_NACK, QUEUE_PUSH_HEADERS,
                     TOPIC_PUBLISH_HEADERS, WORK_PUSH_HEADERS, QUEUE_PUSH_OPTIONS,
                     TOPIC_PUBLISH_OPTIONS, WORK_PUSH_OPTIONS})

#: The give-backs a member proposes for a client without the produce permission, applied
#: only in a client session and only as its record of popped elements allows
#: (:mod:`.session_popped`), and the give-back each applies then.
CHECKED_GIVE_BACKS: dict[int, int] = {QUEUE_UNPOP_STAMPED_CHECKED: QUEUE_UNPOP_STAMPED,
                                      QUEUE_UNPOP_HEADERS_CHECKED: QUEUE_UNPOP_HEADERS}

#: The pushes with headers (``[name, headers, msg_id | None, value]``).
HEADER_OPS = frozenset({QUEUE_PUSH_HEADERS, TOPIC_PUBLISH_HEADERS, WORK_PUSH_HEADERS})


_FAMILIES: dict[int, str] = {
    **dict.fromkeys((QUEUE_DECLARE, QUEUE_PUSH, QUEUE_POP, QUEUE_CLOSE, QUEUE_UNPOP,
                     QUEUE_POP_MANY, QUEUE_UNPOP_MANY, QUEUE_PURGE, QUEUE_DELETE,
                     QUEUE_PUSH_ONCE, QUEUE_POP_STAMPED, QUEUE_UNPOP_STAMPED,
                     QUEUE_PUSH_HEADERS, QUEUE_POP_HEADERS, QUEUE_UNPOP_HEADERS,
                     QUEUE_UNPOP_STAMPED_CHECKED, QUEUE_UNPOP_HEADERS_CHECKED,
                     QUEUE_PUSH_TTL, QUEUE_DECLARE_LIMITED, QUEUE_PUSH_OPTIONS,
                     QUEUE_PROMOTE), "queue"),
    **dict.fromkeys((TOPIC_DECLARE, TOPIC_PUBLISH, TOPIC_SUBSCRIBE, TOPIC_RECONNECT,
                     TOPIC_DISCONNECT, TOPIC_ADVANCE, TOPIC_GC, TOPIC_RESTORE,
                     TOPIC_ADVANCE_TO, TOPIC_DELETE, TOPIC_PUBLISH_ONCE, TOPIC_SUBSCRIBE_AT,
                     TOPIC_SEEK, GROUP_DECLARE, TOPIC_SUBSCRIBE_AT_TIME, TOPIC_SEEK_TIME,
                     TOPIC_PUBLISH_HEADERS, TOPIC_DECLARE_LIMITED, TOPIC_PUBLISH_OPTIONS,
                     TOPIC_DELETE_SUBSCRIBER), "topic"),
    **dict.fromkeys((WORK_DECLARE, WORK_PUSH, WORK_CLAIM, WORK_ACK, WORK_NACK, WORK_REAP,
                     WORK_EXTEND, WORK_REDRIVE, WORK_CLAIM_MANY, WORK_RELEASE, WORK_PURGE,
                     WORK_DELETE, WORK_SETTLE_MANY, WORK_PUSH_ONCE, WORK_PUSH_HEADERS,
                     WORK_DECLARE_RETRY, WORK_PUSH_SCHEDULED, WORK_NACK_DELAYED, WORK_PROMOTE,
                     WORK_PUSH_TTL, WORK_DECLARE_LIMITED, WORK_PUSH_OPTIONS,
                     WORK_DECLARE_OPTIONS), "work_queue"),
}


#: Ops on an object of any kind, named by their second argument.
KIND_OPS = frozenset({EXPIRY_RULES, EXPIRE})


def family_of_op(code: int, args: list[Any]) -> str | None:
    """:func:`family_of`, or the kind a :data:`KIND_OPS` op names."""
    family = _FAMILIES.get(code)
    if family is None and code in KIND_OPS and len(args) > 1 and type(args[1]) is str:
        return args[1]
    return family


def op_name(code: int) -> str:
    """The name of ``code``, or the code itself when this version does not know it."""
    return OP_NAMES.get(code, str(code))


@dataclass(frozen=True)
class OpError:
    """An operation the state machine refused; ``code`` is stable, ``message`` explains."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class OpRefused(Exception):
    """Raised inside a handler to refuse its op with an :class:`OpError`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = OpError(code, message)
