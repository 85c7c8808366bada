"""The properties, checked against the committed history and what the clients saw.

The history (every op in log order, with the result of its first application) is
replayed through small independent models of the queue, work queue and topic; every
recorded result must be the model's. On top of that:

- every operation a client saw succeed is in the log, with the result the client got;
  one reported as certainly not applied is not in the log (an attempt fenced off by its
  session's floor, answered "duplicate", or refused under an ended or forgotten session,
  is not applied and no model replays it: :mod:`.history`);
- a retried operation (same session and sequence number) is applied once;
- a push with a message id is applied once while its id is in the dedup window, and
  a repeat returns the first push's result (:mod:`.once`);
- a transaction applies all its ops (each checked by the models) or, aborted, none,
  and the op it names would fail in the models (:mod:`.txn`), a push with options into
  a bounded queue counting the due delayed elements it makes ready (:mod:`.txn_options`);
- a pop through ``Driver.call`` whose caller was cancelled reached its caller or its
  ``on_orphan`` give-back (:mod:`.cancelled_pops`);
- a client prefetching batches hands out, gives back (once, under the ids popped) or
  keeps every element its pops took, none twice; an element given back to the head is
  the next taken, in the order given back, and a client's is taken again once or still
  queued (:mod:`.session_givers`); a checked give-back applies as the session's record
  of popped elements allows, alike on every replica (:mod:`.checked_give_backs`);
- queue: FIFO in commit order, every acknowledged push popped once or still queued;
  message ids unique, assigned in push order, kept when given back (a producer may
  give one back twice: then each copy handed out once, :mod:`.doubled_give_backs`),
  and no element enqueued later than it is popped (:mod:`.queue_ids`);
- work queue: at most one live delivery per item; once drained every item is acked
  or dead-lettered;
- consumer groups (:mod:`.group_model`): each group's work queue is fed every element
  the topic publishes from its start, as the work-queue model of it; two members never
  hold one element at once, and once drained each group acked or dead-lettered every
  element from its start on (none lost, none twice);
- message headers (:mod:`.headers`): a message pop returns for each element exactly the
  headers it was pushed (or given back) with, none for one without; the replicas keep
  headers for exactly the queued elements that carry some;
- topics: a durable subscriber's reads are the committed publications in order from
  its subscription on, without gaps or duplicates (a deletion ends the subscription; the
  same id subscribed again starts anew at the tail); an ephemeral one's are in order; a
  replayer's, likewise from each start or seek (placed within the retained range, or
  refused as out of range); a start or seek by time lands on the first retained
  offset stamped at or after it (:mod:`.replay_time`);
- message expiry (:mod:`.expiry`): a pop never hands out an element at or after its
  deadline, and the TTL queue and its expired count are the model's;
- work-item expiry (:mod:`.work_expiry`): a claim never hands out an item at or after
  its deadline, and every item is acked, dead-lettered, counted expired or still held;
  likewise for a consumer group of a topic with expiry (:mod:`.group_expiry`, modelled
  by :class:`~.group_model.ExpiringGroupModel`: each element carries its topic deadline);
- queue options (:mod:`.queue_options`): options combine on one element, a delayed
  element is never popped before its due time nor an expired one at all;
- queues with limits (:mod:`.limits_model`): a ``reject`` queue never past its limits,
  ``drop_oldest`` drops only the oldest, each counted, and no acknowledged push is lost
  outside the policy;
- topic options (:mod:`.topic_options`): an advance never hands out an element at or
  after its deadline (the earlier of its own TTL and the topic's age limit), a
  ``reject`` topic never past its limits, drops and gaps counted, headers kept by
  offset;
- the final state of every replica equals the models' (and so each other's).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE

from .checked_give_backs import CheckedGiveBacks
from .client import FAILED, OK, QUEUE, TOPIC, WORK, Observed
from .doubled_give_backs import DoublingProducer
from .ephemeral_sessions import EphemeralSessionsModel
from .expiry import TTL_QUEUE, ExpiryModel
from .group_expiry import AGE_MS, GROUP, GROUP_QUEUE, GROUP_TOPIC
from .group_model import ExpiringGroupModel, GroupModels
from .headers import HeaderModel
from .history import AppliedOp, History, Violation
from .limits_model import LIMITED, LimitedClient, LimitsModel
from .once import OnceModel
from .queue_checks import QueueChecks
from .queue_ids import QueueIdModel
from .queue_options import OPTIONS_QUEUE, OptionsModel
from .registered_sessions import REG_QUEUE, RegisteredSessionsModel
from .session_takes import TAKE_QUEUE, TakeModel
from .topic_checks import TopicChecks, TopicSub
from .topic_options import TopicOptionsModel
from .txn import TxnModel
from .txn_options import TxnOptionsModel
from .work_expiry import MAX_DELIVERIES, VISIBILITY_MS, WORK_TTL, WorkExpiryModel
from .work_model import WorkModel

#: Work-queue ops outside the WORK_PUSH..WORK_RELEASE range the models replay.
_MORE_WORK_OPS = frozenset({C.WORK_SETTLE_MANY, C.WORK_PUSH_SCHEDULED, C.WORK_NACK_DELAYED,
                            C.WORK_PUSH_OPTIONS,
                            C.WORK_PROMOTE})

class ClientRecord(Protocol):
    """A client's id and the operations it issued."""

    cid: str
    ops: list[Observed]


class Checker(TopicChecks, QueueChecks):
    """Replays a :class:`History` through the models and checks the client records."""

    def __init__(self, history: History, clients: Sequence[ClientRecord]) -> None:
        self.history = history
        self.clients = clients
        self.queue: deque[Any] | None = None
        self.capacity: int | None = None
        self.pushed: list[Any] = []
        #: Per element, the pushes the log applied (puts back at the head not counted).
        self.pushes: Counter[Any] = Counter()
        self.popped: list[Any] = []
        self.work: WorkModel | None = None
        self.topic = False
        self.published: list[Any] = []
        #: The enqueue stamp of each published offset (never decreasing).
        self.stamps: list[int] = []
        self.headers = HeaderModel()
        #: Starts and seeks given as a time that were checked.
        self.time_positions = 0
        self.base = 0
        self.subs: dict[str, TopicSub] = {}
        self.reads: dict[str, list[int]] = {}
        self.now = 0
        self.ops = 0
        self.deduplicated = 0
        self.once = OnceModel()
        self.ids = QueueIdModel([cl.session for cl in clients
                                 if isinstance(cl, DoublingProducer)])
        self.txns = TxnModel()
        self.groups = GroupModels()
        self.expiry = ExpiryModel()
        self.work_expiry = WorkExpiryModel()
        self.group_expiry = ExpiringGroupModel(GROUP_TOPIC, GROUP, AGE_MS, VISIBILITY_MS,
                                               MAX_DELIVERIES)
        self.limits = LimitsModel()
        self.takes = TakeModel()
        self.options = OptionsModel()
        self.topic_options = TopicOptionsModel()
        self.txn_options = TxnOptionsModel()
        self.ephemeral = EphemeralSessionsModel()
        self.registered = RegisteredSessionsModel()
        self.checked = CheckedGiveBacks()

    def fail(self, text: str) -> NoReturn:
        raise Violation(text)

    # -- replay ---------------------------------------------------------------------------

    def replay(self) -> None:
        self.registered.fenced(self.history.fenced.values())
        seen: dict[tuple[int, int], AppliedOp] = {}
        for op in self.history.in_order():
            self.now = max(self.now, op.stamp)
            first = seen.get((op.session, op.seq))
            if first is not None:
                if op.index == first.index and op.session <= CLIENT_SESSION_BASE:
                    # A member numbers its ops once; a client's op may be proposed twice
                    # by one member (sent again through it) and land in one batch.
                    self.fail(f"op {op.session:x}/{op.seq} appears twice in batch {op.index}")
                if not (op.result == first.result or (
                        isinstance(op.result, OpError)
                        and op.result.code in ("duplicate", "session_ended",
                                               "session_unknown"))):
                    self.fail(f"retried op {op.session:x}/{op.seq} (index {op.index}) returned "
                              f"{op.result!r}, first {first.result!r} at {first.index}")
                self.deduplicated += 1
                self.registered.retried(op)
                continue
            seen[(op.session, op.seq)] = op
            self.ops += 1
            self._apply(op)

    def apply_op(self, op: AppliedOp) -> None:
        """Apply one op to the models, checking its result."""
        self._apply(op)

    def _apply(self, op: AppliedOp) -> None:
        code, args = op.code, op.args
        if args and args[0] == TTL_QUEUE:
            self.expiry.apply(op, self.now)
            return
        if args and args[0] == WORK_TTL:
            self.work_expiry.apply(op, self.now)
            return
        if args and args[0] in (GROUP_TOPIC, GROUP_QUEUE):
            self.group_expiry.apply(op, self.now)
            return
        if args and args[0] == OPTIONS_QUEUE:
            self.options.apply(op, self.now)
            return
        if self.ephemeral.handles(op):
            self.ephemeral.apply(op, self.now)
            return
        if self.registered.handles(op):
            self.registered.apply(op)
            return
        if self.txn_options.handles(op):
            self.txn_options.apply(op, self.now)
            return
        if self.limits.handles(op):
            self.limits.apply(op)
            return
        if self.takes.handles(op):
            self.takes.apply(op)
            return
        if self.topic_options.handles(op):
            self.topic_options.apply(op, self.now)
            return
        if code == C.TXN:
            self.txns.apply(self, op)
            return
        if code == C.POPPED_CHECKING:
            self.checked.start_checking()
            return
        if code in C.ONCE_OPS:
            plain = self.once.plain(op)
            if plain is not None:
                self._apply(plain)
                self.once.applied_push(op)
            return
        if code == C.QUEUE_DECLARE:
            if self.queue is None:
                self.queue = deque()
                self.capacity = args[1]
        elif code in (C.QUEUE_PUSH, C.QUEUE_POP, C.QUEUE_UNPOP, C.QUEUE_POP_MANY,
                      C.QUEUE_UNPOP_MANY, C.QUEUE_POP_STAMPED, C.QUEUE_UNPOP_STAMPED,
                      C.QUEUE_PUSH_HEADERS, C.QUEUE_POP_HEADERS, C.QUEUE_UNPOP_HEADERS,
                      *C.CHECKED_GIVE_BACKS):
            if self.checked.applies(op):  # (:mod:`.checked_give_backs`)
                self._queue_op(op)
        elif code == C.WORK_DECLARE:
            if self.work is None:
                self.work = WorkModel(args[1], args[2])
        elif code == C.GROUP_DECLARE:
            self.topic = True
            self.groups.declare(op, self.base, self.published)
        elif (C.WORK_PUSH <= code <= C.WORK_RELEASE or code in _MORE_WORK_OPS) and (
                args[0] != WORK):
            self.groups.apply(op, self.now)
        elif C.WORK_PUSH <= code <= C.WORK_RELEASE or code in _MORE_WORK_OPS:
            if self.work is None:
                if not isinstance(op.result, OpError):
                    self.fail(f"index {op.index}: work op before the declaration succeeded")
                return
            self.work.apply(op, self.now)
        elif code == C.TOPIC_DECLARE:
            self.topic = True
        elif (C.TOPIC_DECLARE < code <= C.TOPIC_ADVANCE_TO and code != C.TOPIC_RESTORE) or (
                code in (C.TOPIC_SUBSCRIBE_AT, C.TOPIC_SEEK, C.TOPIC_SUBSCRIBE_AT_TIME,
                         C.TOPIC_SEEK_TIME, C.TOPIC_DELETE_SUBSCRIBER)):
            if not self.topic:
                if not isinstance(op.result, OpError):
                    self.fail(f"index {op.index}: topic op before the declaration succeeded")
                return
            self._topic_op(op)

    # -- client records ---------------------------------------------------------------------

    def check_clients(self) -> None:
        results = self.history.results
        acked: list[Any] = []
        for client in self.clients:
            for obs in client.ops:
                applied = results.get((obs.session, obs.seq))
                if obs.outcome == OK:
                    fenced = self.history.fenced.get((obs.session, obs.seq))
                    if applied is None and fenced is not None:
                        self.fail(f"{client.cid}: acknowledged {C.op_name(obs.code)} "
                                  f"{obs.args!r:.60} (session {obs.session:x} seq {obs.seq}) "
                                  f"was never applied: its first appearance, at index "
                                  f"{fenced.index}, was answered {fenced.result!r:.60}")
                    if applied is None:
                        self.fail(f"{client.cid}: acknowledged {C.op_name(obs.code)} "
                                  f"{obs.args!r:.60} (session {obs.session:x} seq {obs.seq}) "
                                  "is not in the committed log")
                    if applied.result != obs.result and not (
                            isinstance(obs.result, OpError) and obs.result.code == "duplicate"):
                        # (answered "already applied" by an application of a retry: a
                        # member that installed a snapshot over the first one, say)
                        self.fail(f"{client.cid}: got {obs.result!r:.80} for "
                                  f"{C.op_name(obs.code)} at index {applied.index}, the "
                                  f"log says {applied.result!r:.80}")
                    if obs.code == C.QUEUE_PUSH and obs.result is None and (
                            obs.args[0] not in (TTL_QUEUE, OPTIONS_QUEUE, REG_QUEUE, TAKE_QUEUE)
                            and obs.args[0] not in LIMITED):
                        acked.append(obs.args[1])
                    elif obs.code == C.QUEUE_PUSH_ONCE and obs.result is None:
                        acked.append(obs.args[2])
                    elif obs.code == C.TXN and isinstance(obs.result, list) and obs.result[0]:
                        acked.extend(op[2] for op in obs.args
                                     if op[0] == C.QUEUE_PUSH and op[1] == QUEUE)
                elif obs.outcome == FAILED and applied is not None:
                    self.fail(f"{client.cid}: {C.op_name(obs.code)} reported as not "
                              f"applied was applied at index {applied.index}")
                if obs.has_orphan_result and applied is not None and (
                        applied.result != obs.orphan_result):
                    self.fail(f"{client.cid}: late result {obs.orphan_result!r:.60} differs "
                              f"from the log's {applied.result!r:.60}")
        pushed = set(self.pushed)
        for value in acked:
            if value not in pushed:
                self.fail(f"acknowledged push {value!r} is not in the log")
        self.limits.check_acknowledged([pair for client in self.clients
                                        if isinstance(client, LimitedClient)
                                        for pair in client.acknowledged()])
        self._check_reads()

    # -- the end ----------------------------------------------------------------------------

    def check_final(self, state: dict[str, Any]) -> None:
        """Compare a replica's captured state with the models; check the queue and work end."""
        self.once.check_final()
        self.txns.check_final()
        self.expiry.check_final(state)
        self.work_expiry.check_final(state)
        self.group_expiry.check_final(state)
        self.options.check_final(state)
        self.limits.check_final(state)
        self.topic_options.check_final(state)
        self.txn_options.check_final(state)
        self.ephemeral.check_final(state)
        self.registered.check_final(state)
        queue = state.get("queues", {}).get(QUEUE)
        if self.queue is not None:
            elements = [] if queue is None else queue[2]
            if elements != list(self.queue):
                self.fail(f"queue holds {elements!r:.100}, the model {list(self.queue)!r:.100}")
            counts: dict[Any, int] = {}
            for v in self.pushed:
                counts[v] = counts.get(v, 0) + 1
            for v in self.popped:
                counts[v] = counts.get(v, 0) - 1
            for v in elements:
                counts[v] = counts.get(v, 0) - 1
            wrong = {v: c for v, c in counts.items() if c != 0}
            if wrong:
                self.fail(f"pushed values not popped once nor queued: {wrong!r:.200}")
            self.ids.check_final(state.get("queue_ids", {}).get(QUEUE))
            self.headers.check_final(elements, (state.get("headers") or {}).get(
                "queues", {}).get(QUEUE))
        work = state.get("work_queues", {}).get(WORK)
        if self.work is not None and work is not None:
            self.work.check_state(work["core"])
        self.groups.check_state(state.get("work_queues", {}))
        topic = state.get("topics", {}).get(TOPIC)
        if topic is not None and (topic["base_offset"] != self.base
                                  or topic["elements"] != self.published[self.base:]):
            self.fail("topic retained log differs from the model")

    def check_drained(self) -> None:
        if self.work is not None:
            self.work.check_drained()
        self.groups.check_drained(len(self.published))
