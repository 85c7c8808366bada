"""The handshake features every member requires of its peers (:data:`REQUIRED_FEATURES`).

Every link between members runs the capability handshake with these features required
and mutual HMAC authentication before any Raft frame is accepted (:mod:`.mesh`). A
member of a version without pre-vote (which would drop ``pre_vote`` frames as unknown),
without the current value encoding (which would refuse to apply tuples and large
messages), without deduplicated pushes, message ids, topic replay and consumer groups,
replay by time, or message headers (or any other feature below) is refused at the
handshake: "peer lacks required features ['raft-prevote-v1']".

Each feature names what a member of an older version would get wrong (and diverge on)
if it were let in; :func:`~lazily_queue.datadir.claim_directory` records them in the
data directory, so that an older version refuses a directory a newer one used.
"""

from __future__ import annotations

RAFT_FEATURE = "raft-queue-v1"
PREVOTE_FEATURE = "raft-prevote-v1"
#: Commands and snapshots with tuples tagged and messages up to ``max_message_bytes``:
#: an older member would refuse to apply them and diverge.
VALUES_FEATURE = "raft-values-v2"
#: Deduplicated pushes (``*_PUSH_ONCE`` ops, a ``dedup`` snapshot section): an older
#: member would answer them ``unknown_op`` while the others apply them, and diverge.
DEDUP_FEATURE = "queue-dedup-v1"
#: Message ids (``QUEUE_POP_STAMPED`` / ``QUEUE_UNPOP_STAMPED``, snapshot section
#: ``queue_ids``): an older member would answer them ``unknown_op`` and diverge.
MESSAGES_FEATURE = "queue-messages-v1"
#: Topic replay and consumer groups (``TOPIC_SUBSCRIBE_AT``, ``TOPIC_SEEK``,
#: ``GROUP_DECLARE``, publishes feeding groups with their elements' deadlines, claims
#: discarding what expired): an older member would diverge.
GROUPS_FEATURE = "topic-groups-v2"
#: Replay by time (``TOPIC_SUBSCRIBE_AT_TIME``, ``TOPIC_SEEK_TIME``): an older member
#: would answer them ``unknown_op`` and diverge.
REPLAY_TIME_FEATURE = "topic-replay-time-v1"
#: Message headers (``QUEUE_PUSH_HEADERS``, ``QUEUE_POP_HEADERS``,
#: ``QUEUE_UNPOP_HEADERS``, snapshot section ``headers``): an older member would diverge.
HEADERS_FEATURE = "message-headers-v1"
#: Cell limits (``QUEUE_DECLARE_LIMITED``, pushes checked against limits, snapshot
#: section ``limits``), a topic subscriber's gap ending with its subscription: an older
#: member would answer ``unknown_op`` or keep such gaps, and diverge.
LIMITS_FEATURE = "limits-v2"
#: Topic publishes with options combined (``TOPIC_PUBLISH_OPTIONS``, per-message deadlines
#: in the ``expiry`` section), ``reject`` topic limits, expiry before the limits judge a
#: publish and takes skipping expired elements: an older member would diverge.
TOPIC_OPTIONS_FEATURE = "topic-options-v1"
#: Queue pushes with options combined and delayed queue elements (``QUEUE_PUSH_OPTIONS``,
#: ``QUEUE_PROMOTE`` carrying only a name, snapshot section ``queue_options``, limits
#: counting delayed elements): an older member would diverge.
QUEUE_OPTIONS_FEATURE = "queue-options-v2"
#: Work-queue pushes and declarations with options combined (``WORK_PUSH_OPTIONS``,
#: ``WORK_DECLARE_OPTIONS``, every declaration compared whole, ``WORK_PUSH_OPTIONS`` in
#: transactions, ``WORK_PROMOTE`` carrying only a name): an older member would diverge.
WORK_OPTIONS_FEATURE = "work-options-v2"
#: Client sessions tagged with their client's name: a full table drops a session of the
#: client holding the most, not the least recently seen of all; an older member would
#: drop another and diverge.
CLIENT_SESSIONS_FEATURE = "client-sessions-v2"
#: Deleting one topic subscription (``TOPIC_DELETE_SUBSCRIBER``): an older member would
#: answer it ``unknown_op`` while the others forget the subscription, and diverge.
SUBSCRIBER_DELETE_FEATURE = "topic-subscriber-delete-v1"
#: ``MEMBER_FORGET`` given an address drops the record only while it holds that address:
#: an older member would drop it anyway and diverge.
MEMBER_FORGET_FEATURE = "member-forget-v2"
#: Client sessions owning ephemeral subscriptions, refreshed and reaped
#: (``CLIENT_ALIVE``, ``EPHEMERAL_REAP``), the latest subscribe of an id deciding its
#: owner: an older member would answer them ``unknown_op``, or keep another owner, while
#: the others remove the subscriptions, and diverge.
CLIENT_EPHEMERAL_FEATURE = "client-ephemeral-v2"
#: The results sessions keep are bounded in bytes (a result too large, or the oldest past
#: the bound, is no longer kept), a member's session apart and without the results of
#: the client ops it proposed: an older member would keep others and diverge.
SESSION_KEPT_BYTES_FEATURE = "session-kept-bytes-v2"
#: A closing client ends its session (``SESSION_END``, snapshot section
#: ``ended_sessions``): an older member would answer it ``unknown_op`` and keep the
#: session while the others drop it, and diverge.
SESSION_END_FEATURE = "client-session-end-v1"
#: A consumer group's run of retained values in a snapshot as one run, its values left
#: to its topic's elements (a work queue's ``run``), its stamps to its topic's, and
#: their deadlines as their rules (an expiry record's retained form): an older member
#: could not install such a snapshot.
GROUP_RUN_SNAPSHOT_FEATURE = "group-run-snapshot-v2"
#: A client session is registered (``SESSION_REGISTER``, snapshot section
#: ``registered_sessions``) and an op under a registered id not held is refused: an older
#: member would answer the register ``unknown_op`` and open such a session at its first
#: op while the others refuse it, and diverge.
SESSION_REGISTER_FEATURE = "client-session-register-v1"
#: Settlement receipts bounded across all work queues and groups, the oldest settled
#: dropped first (a repeat of its settlement then answered without a receipt): an older
#: member would keep it and diverge.
RECEIPTS_TOTAL_FEATURE = "work-receipts-total-v1"
#: A member's retry of a client op its client's session refused (not held: ended or
#: forgotten) is refused again: an older member would answer it as applied and its
#: result no longer kept (``duplicate``), keep another mark for it, and diverge.
CLIENT_REFUSALS_FEATURE = "client-op-refusals-kept-v1"
#: A take pops no more than its session keeps room for (``TAKE_BYTES`` of elements, at
#: least one): an older member would pop more and diverge.
TAKE_BYTES_FEATURE = "queue-take-bytes-v1"
#: A work queue's claim leases no more than its session keeps room for (``TAKE_BYTES``
#: of values, at least one item): an older member would lease more and diverge.
CLAIM_BYTES_FEATURE = "work-claim-bytes-v1"
#: Past the bound of all kept results, the client keeping the most in all its sessions
#: gives up its results first (a member's session counting alone): an older member would
#: take them from the session keeping the most and diverge.
KEPT_BY_OWNER_FEATURE = "session-kept-by-owner-v1"
#: Expiry bounded per entry: a sweep ``EXPIRE [name, kind, limit]`` removes at most
#: ``limit`` elements, a pop or claim at most ``EXPIRE_LIMIT`` expired ones (stopping
#: before the next): an older member would remove them all and diverge.
EXPIRE_LIMIT_FEATURE = "expire-limit-v1"
#: Checked give-backs (``QUEUE_UNPOP_STAMPED_CHECKED``, ``QUEUE_UNPOP_HEADERS_CHECKED``,
#: ``POPPED_CHECKING``, snapshot key ``session_popped_checking``) applied only as the
#: session's record of popped elements allows: an older member would answer them
#: ``unknown_op``, or apply a give-back the others refuse, and diverge.
GIVE_BACK_CHECKED_FEATURE = "give-back-checked-v1"
#: A client's takes and claims proposed in the sized form (its floor negated) are held to
#: the room its session's unanswered results leave, answering ``no_room`` when not even
#: one element fits: an older member would take them whole and diverge.
TAKE_ROOM_FEATURE = "queue-take-room-v1"
#: Past the bound on ended client session ids, the client holding the most gives up its
#: oldest: an older member would forget the oldest of all and diverge.
ENDED_BY_OWNER_FEATURE = "ended-sessions-by-owner-v1"
#: ``SESSION_REGISTER`` ``[owner_tag, nonce]``: a registered client session id carries
#: its proposer's random nonce: an older member would refuse the op as malformed while
#: the others open the session, and diverge.
SESSION_NONCE_FEATURE = "client-session-register-v2"
#: Optional: the member says it is stopping (:data:`~.goodbye.GOODBYE`) before it closes
#: its links on a clean stop. Only a peer announcing it is sent one; a peer lacking it is
#: still linked (it logs the stop as a lost link).
GOODBYE_FEATURE = "link-goodbye-v1"
#: Optional: a leader starting a leadership transfer names its target to its peers
#: (:mod:`.transfer_notice`) before the target's election, so that they log the lost
#: leader as a handover rather than warn. Only a peer announcing it is sent one.
TRANSFER_FEATURE = "link-transfer-v1"
#: The optional features every member of this version announces.
OPTIONAL_FEATURES = frozenset({GOODBYE_FEATURE, TRANSFER_FEATURE})
REQUIRED_FEATURES = frozenset({RAFT_FEATURE, PREVOTE_FEATURE, VALUES_FEATURE, DEDUP_FEATURE,
                               MESSAGES_FEATURE, GROUPS_FEATURE, REPLAY_TIME_FEATURE,
                               HEADERS_FEATURE, LIMITS_FEATURE, QUEUE_OPTIONS_FEATURE,
                               WORK_OPTIONS_FEATURE, TOPIC_OPTIONS_FEATURE,
                               CLIENT_SESSIONS_FEATURE, SUBSCRIBER_DELETE_FEATURE,
                               MEMBER_FORGET_FEATURE, CLIENT_EPHEMERAL_FEATURE,
                               SESSION_KEPT_BYTES_FEATURE, SESSION_END_FEATURE,
                               GROUP_RUN_SNAPSHOT_FEATURE, SESSION_REGISTER_FEATURE,
                               RECEIPTS_TOTAL_FEATURE, CLIENT_REFUSALS_FEATURE,
                               TAKE_BYTES_FEATURE, CLAIM_BYTES_FEATURE,
                               KEPT_BY_OWNER_FEATURE, EXPIRE_LIMIT_FEATURE,
                               GIVE_BACK_CHECKED_FEATURE,
                               TAKE_ROOM_FEATURE,
                               ENDED_BY_OWNER_FEATURE,
                               SESSION_NONCE_FEATURE})
