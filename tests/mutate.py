"""Plant the defects that would break a guarantee, one at a time, and show the suite
catches each (``make mutate``).

Each mutation replaces one exact piece of source (it must occur exactly once), runs the
tests that guard it, expects them to fail, and puts the file back. The tree's tracked
files must be clean before it starts, so a planted defect can never be left behind
unnoticed. Exit status 0 when every mutation was caught, 1 when one survived.

    python tests/mutate.py [--list] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_DISK = "tests/raft/test_disk_errors.py"
_HOSTILE = "tests/integrations/test_admin_hostile.py"
_BOUNDS = "tests/integrations/test_status_bounds.py"
_NAMES = "tests/client/test_object_limits.py"
_SUBS = "tests/client/test_subscriber_limits.py"
_FORGETS = "tests/testing/test_remove_member_forgets.py"
_SUBDEL_OPS = "tests/replicated/test_subscriber_delete_ops.py"
_SUBDEL_CELL = "tests/cells/test_topic_subscriber_delete.py"
_SUBDEL_ADMIN = "tests/integrations/test_admin_subscribers.py"
_LISTING = "tests/integrations/test_subscriber_listing.py"
_PAGE_SUBS = ("tests/integrations/test_status_page_subscribers.py::"
              "test_page_finds_and_deletes_a_subscriber_the_status_does_not_list")


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    guards: str


MUTATIONS = [
    Mutation(
        "release-before-fsync", "lazily_queue/raft/pipeline.py",
        "        if not self._held and self._written == self._synced and self.stall is None:\n"
        "            return [ready]",
        "        if True:\n            return [ready]",
        ("tests/raft/test_disk_errors.py",),
        "votes and acknowledgements leave only after the fsync covering their writes"),
    Mutation(
        "leader-counts-unsynced-copy", "lazily_queue/raft/engine.py",
        '        if not patches.enabled("durable-leader-commit"):\n            return',
        "        if True:\n            return",
        (f"{_DISK}::test_nothing_is_acknowledged_before_a_majority_fsynced",),
        "acknowledged = fsynced on a majority, the leader's own copy counted once durable"),
    Mutation(
        "fsync-error-ignored", "lazily_queue/raft/fsync_runs.py",
        "        if error is not None:\n            self._stall(error)\n            return False\n"
        "        for ready in self.pipeline.fsync_done():",
        "        if False:\n            self._stall(error)\n            return False\n"
        "        for ready in self.pipeline.fsync_done():",
        (f"{_DISK}::test_a_member_whose_disk_fills_hands_over_and_catches_up",),
        "a failed fsync stops acknowledgements (never treated as success)"),
    Mutation(
        "failed-fsync-trusted", "lazily_queue/raft/journal.py",
        "        self._generation += 1\n        self._written_index = self._durable_index\n"
        "        if self._rewrite:\n            return\n",
        "        return\n",
        (f"{_DISK}::test_a_failed_fsync_is_never_trusted",),
        "records written before a failed fsync are written again, not trusted"),
    Mutation(
        "torn-append-kept", "lazily_queue/raft/journal.py",
        "        self._truncate = True\n        with contextlib.suppress(OSError):\n"
        "            self._disk.truncate(self.path, self._base)\n"
        "            self._truncate = False",
        "        return",
        (f"{_DISK}::test_a_failed_append_is_cut_back_to_the_last_whole_record",),
        "an append that failed part-way never stays in the journal"),
    Mutation(
        "journal-checksum", "lazily_queue/raft/records.py",
        "record_crc(index, term, bytes(data[pos + HEADER.size : end])) != crc:",
        "False:",
        ("tests/raft/test_journal.py",),
        "a damaged journal record is refused, never applied"),
    Mutation(
        "cut-leaves-stale-records", "lazily_queue/raft/disk.py",
        "        if size < f.end:\n",
        "        if False:\n",
        ("tests/raft/test_journal_format.py",),
        "a cut journal reads as zeros after it: no stale record reappears after a shorter one"),
    Mutation(
        "failed-growth-kept", "lazily_queue/raft/disk.py",
        "os.ftruncate(f.fd, old)",
        "pass",
        ("tests/raft/test_journal_format.py",),
        "a journal growth that failed (full disk) leaves the file as it was"),
    Mutation(
        "sector-torn-record-damaged", "lazily_queue/raft/records.py",
        "    if plausible and size >= end > zeros_from:\n",
        "    if False:\n",
        ("tests/raft/test_journal_format.py",),
        "a record torn at a sector boundary of the preallocated file is cut, with no floor"),
    Mutation(
        "capacity", "lazily_queue/core/fifo.py",
        "len(self._items) >= self._capacity", "len(self._items) > self._capacity",
        ("tests/conformance/test_replay.py",),
        "a bounded queue refuses a push at capacity"),
    Mutation(
        "lease-expiry", "lazily_queue/core/work.py",
        "if d.deadline < now]", "if d.deadline <= now]",
        ("tests/core/test_work_core.py", "tests/conformance/test_replay.py"),
        "a lease is live up to and including its deadline"),
    Mutation(
        "dead-letters", "lazily_queue/core/work.py",
        "        if delivery.attempt < self.max_deliveries:",
        "        if delivery.attempt <= self.max_deliveries:",
        ("tests/core/test_work_core.py", "tests/conformance/test_replay.py"),
        "an item is dead-lettered after max_deliveries attempts"),
    Mutation(
        "retry-deduplication", "lazily_queue/replicated/state_machine.py",
        "            seq, code = op[0], op[1]\n            if seq in done or seq < session.floor:",
        "            seq, code = op[0], op[1]\n            if False:",
        ("tests/raft/test_node.py",),
        "a retried operation applies once"),
    Mutation(
        "gc-floor", "lazily_queue/core/topic.py",
        "        return min(durable) if durable else self.end_offset()",
        "        return max(durable) if durable else self.end_offset()",
        ("tests/core/test_topic_core.py", "tests/conformance/test_replay.py"),
        "retention never collects what a durable subscriber has not read"),
    Mutation(
        "hmac", "transports/lazily_transports/_core/_authentication.py",
        "not hmac.compare_digest(proof, expected)", "False",
        ("tests/transports/test_authentication.py", "tests/raft/test_mesh_node.py"),
        "a peer without the cluster secret is refused"),
    Mutation(
        "unpickler-globals", "lazily_queue/raft/safe_pickle.py",
        "    scan(raw)\n    try:\n        return _RestrictedUnpickler(io.BytesIO(raw)).load()",
        "    try:\n        return __import__('pickle').loads(raw)",
        ("tests/raft/test_safe_pickle.py",),
        "entries from peers unpickle plain values only (both the opcode scan and the "
        "unpickler that refuses globals are removed: either alone still holds)"),
    Mutation(
        "count-each-vote-once", "lazily_queue/raft/patches.py",
        '    if not enabled("count-each-vote-once") or message.get("term") != term:',
        "    if True:",
        ("tests/sim/test_found_bugs.py",),
        "a duplicated vote is counted once (election safety)"),
    Mutation(
        "shared-references", "transports/lazily_transports/safe_cbor.py",
        "            if tag not in tags:\n"
        "                decoders[tag] = functools.partial(_refuse_tag, tag)",
        "            if tag not in tags and tag not in (28, 29):\n"
        "                decoders[tag] = functools.partial(_refuse_tag, tag)",
        ("tests/transports/test_safe_cbor.py",),
        "CBOR shared references from peers are refused (no hash bomb)"),
    Mutation(
        "released-lease-counted", "lazily_queue/core/work.py",
        "PendingItem(delivery.item_id, delivery.value, delivery.attempt - 1)",
        "PendingItem(delivery.item_id, delivery.value, delivery.attempt)",
        ("tests/core/test_batches.py", "tests/raft/test_consumer_batches.py"),
        "prefetched jobs given back unstarted do not use up an attempt"),
    Mutation(
        "prefetch-not-given-back", "lazily_queue/cells/prefetch.py",
        "        if buffer:  # taken out first: return_taken must not give them back again\n"
        "            elements = list(buffer)\n"
        "            buffer.clear()\n"
        "            await asyncio.shield(give_back(elements))",
        "        pass",
        ("tests/raft/test_consumer_batches.py",),
        "a queue iteration that stops early puts its prefetched elements back, in order"),
    Mutation(
        "topic-batch-skips", "lazily_queue/core/topic.py",
        "        target = min(offset, self.end_offset())",
        "        target = min(offset + 1, self.end_offset())",
        ("tests/core/test_batches.py", "tests/raft/test_consumer_batches.py"),
        "a batched cursor move consumes exactly the batch read (no gap)"),
    Mutation(
        "client-retry-applied-twice", "lazily_queue/replicated/state_machine.py",
        "            if seq in done or seq < session.floor:\n"
        "                self.duplicate_ops += 1\n"
        "                kept = session.ops.get(seq) if seq in done else None\n"
        "                results.append(SEQ_REUSED if kept is not None and kept != identity(op)\n"
        "                               else done.get(seq, _DUPLICATE))\n"
        "                continue\n",
        "",
        ("tests/replicated/test_client_sessions.py",
         "tests/client/test_client_cluster.py::"
         "test_an_answer_lost_with_its_member_is_retried_and_applied_once",
         "tests/sim/test_simulation.py::test_client_retries_through_other_members_apply_once"),
        "a client's op retried through another member applies at most once"),
    Mutation(
        "forgotten-session-op-applied", "lazily_queue/replicated/state_machine.py",
        "                        results.append(session_register.UNKNOWN)\n"
        "                        continue\n",
        "                        results.append(session_register.UNKNOWN)\n",
        ("tests/sim/test_registered_sessions_checker.py::"
         "test_an_op_refused_under_a_forgotten_session_is_fenced_off_the_replay",),
        "an op refused under a forgotten session (session_unknown) is never applied"),
    Mutation(
        "forgotten-session-unknown-op-sent-again", "lazily_queue/client/registration.py",
        "            if op is answered:\n                if op.unknown:",
        "            if op is answered:\n                if False:",
        ("tests/sim/test_forgotten_sessions.py",),
        "an op refused under a forgotten session that may have applied fails "
        "SessionForgotten, never sent again under a new session"),
    Mutation(
        "dedup-window-ignored", "lazily_queue/replicated/dedup.py",
        "    if found:\n        return first\n",
        "    if False:\n        return first\n",
        ("tests/replicated/test_dedup.py",
         "tests/sim/test_simulation.py::test_producers_retrying_a_msg_id_never_duplicate"),
        "a push repeated with its msg_id applies once while the id is in the window"),
    Mutation(
        "queue-give-back-renumbers", "lazily_queue/core/fifo.py",
        "        self._items.extendleft(reversed(values))\n        ids.prepend(self._runs, runs)\n"
        "        self._explicit += len(values)\n",
        "        for value in reversed(values):\n            self.push_front(value)\n",
        ("tests/core/test_fifo_ids.py", "tests/cells/test_queue_messages.py"),
        "an element given back to the head keeps its message id"),
    Mutation(
        "give-back-drops-last", "lazily_queue/core/fifo.py",
        "        self._items.extendleft(reversed(values))\n        ids.prepend(self._runs, runs)\n"
        "        self._explicit += len(values)\n",
        "        values = values[:-1] if len(values) > 1 else values\n"
        "        runs = ids.take(deque(runs), len(values))\n"
        "        self._items.extendleft(reversed(values))\n        ids.prepend(self._runs, runs)\n"
        "        self._explicit += len(values)\n",
        ("tests/sim/test_give_backs_checker.py::"
         "test_given_back_elements_are_taken_again_first_in_order",),
        "a prefetch's rest given back is taken again next, in order, every element once"),
    Mutation(
        "transaction-applied-in-part", "lazily_queue/replicated/transactions.py",
        "    plans = check(sm, args)\n    if isinstance(plans, tuple):\n",
        "    plans = check(sm, args)\n    if isinstance(plans, tuple):\n"
        "        plans = [None] * len(args)\n    if isinstance(plans, tuple):\n",
        ("tests/replicated/test_transactions.py",
         "tests/sim/test_simulation.py::test_transactions_apply_all_or_none"),
        "a transaction with an op that would fail applies none of its ops"),
    Mutation(
        "transaction-permissions-unchecked", "lazily_queue/client/connection.py",
        "            if refusal is not None:\n                return refusal\n        return None",
        "        return None",
        ("tests/client/test_client_transactions.py",),
        "a client's transaction needs the client's permission for every op it carries"),
    Mutation(
        "client-transaction-code-unchecked", "lazily_queue/client/connection.py",
        "            if (type(op) is not list or len(op) < 2 or type(op[0]) is not int\n"
        "                    or op[0] not in C.TXN_OPS):\n",
        "            if type(op) is not list or len(op) < 2 or op[0] not in C.TXN_OPS:\n",
        ("tests/client/test_review_requests.py",),
        "a transaction whose op code is not a number is refused, its slots given back"),
    Mutation(
        "client-slots-kept-on-stop", "lazily_queue/client/server.py",
        "            for _ in unproposed:\n                self._release(conn)\n",
        "            for _ in ():\n                self._release(conn)\n",
        ("tests/client/test_review_requests.py",),
        "a member stopped mid-frame gives back the slots of the ops it read, unproposed"),
    Mutation(
        "client-request-failure-escapes", "lazily_queue/client/server.py",
        "        except Exception as exc:  # a request no check foresaw: refused, its slots "
        "given back\n",
        "        except ArithmeticError as exc:\n",
        ("tests/client/test_review_requests.py",),
        "a request failing in a way no check foresaw is refused and its slots given back"),
    Mutation(
        "client-sessions-evicted-regardless-of-owner",
        "lazily_queue/replicated/client_sessions.py",
        "            if sid > CLIENT_SESSION_BASE and self.by_owner[owner_of(sid)] == most:\n",
        "            if sid > CLIENT_SESSION_BASE:\n",
        ("tests/replicated/test_client_sessions.py::"
         "test_a_client_opening_sessions_without_end_only_drops_its_own",),
        "a client opening sessions without end only drops its own, never another's"),
    Mutation(
        "client-hello-takes-another-clients-session", "lazily_queue/client/greeting.py",
        "    if owner_of(session) != owner_tag(name):\n",
        "    if False:\n",
        ("tests/client/test_client_access.py::"
         "test_an_op_before_hello_and_a_bad_session_are_refused",),
        "a client's hello may only name a session tagged as its own"),
    Mutation(
        "client-watches-unbounded", "lazily_queue/client/watchers.py",
        "                len(conn.watches) >= MAX_WATCHES\n",
        "                False\n",
        ("tests/client/test_review_requests.py::"
         "test_a_link_watches_a_bounded_number_of_objects",),
        "a client link reads a bounded number of objects"),
    Mutation(
        "client-unreadable-answer-sent", "lazily_queue/client/connection.py",
        "        if len(data) > P.MAX_ASSEMBLED_BYTES:  # more than a client reads: sent apart\n",
        "        if False:\n",
        ("tests/client/test_review_requests.py::"
         "test_an_object_larger_than_a_client_reads_is_refused_without_relinking",),
        "an object larger than a client reads is refused to it, not sent to make it relink"),
    Mutation(
        "client-refused-hello-unexplained", "lazily_queue/client/server.py",
        "            conn.hello_refused = str(exc)\n",
        "            pass\n",
        ("tests/client/test_client_access.py::"
         "test_an_op_before_hello_and_a_bad_session_are_refused",),
        "an op after a refused hello is refused with the hello's reason"),
    Mutation(
        "client-states-not-paced", "lazily_queue/client/server.py",
        "                        await conn.outbox.oversized_sent()  # one state at a time\n",
        "                        pass\n",
        ("tests/client/test_review_requests.py::"
         "test_objects_read_together_beyond_the_answer_queue_are_mirrored",),
        "states of objects read together go out one at a time, not as a stuck reader's"),
    Mutation(
        "admin-add-member-address-unchecked", "lazily_queue/admin.py",
        "    refusal = address_refusal(address, member_id)\n",
        "    refusal = None\n",
        ("tests/integrations/test_admin_api.py::test_membership_and_leadership",),
        "the admin API refuses a member address no member could listen on"),
    Mutation(
        "lone-member-told-nothing", "lazily_queue/membership.py",
        "    if not others or target == node.node_id:\n",
        "    if False:\n",
        ("tests/testing/test_testing_cluster.py::"
         "test_a_lone_member_is_told_why_it_can_neither_leave_nor_hand_over",),
        "a leader with no one to hand leadership to is told so"),
    Mutation(
        "client-retried-op-said-not-applied", "lazily_queue/client/session.py",
        "        elif unknown_before and code not in P.REFUSALS:\n",
        "        elif False:\n",
        ("tests/client/test_review_session.py",),
        "an op sent to several members is never reported as not applied by the last one"),
    Mutation(
        "give-back-retry-refused-after-applying", "lazily_queue/client/connection.py",
        "                  and not self._applied_before(op.seq, view)):\n",
        "                  and True):\n",
        ("tests/client/test_client_give_back_retry.py",),
        "a consume-only client's retried give-back that applied is answered as applied"),
    Mutation(
        "give-back-retry-refusal-said-not-applied", "lazily_queue/client/session.py",
        "        if unknown_before and code == \"permission\" and op.code in GIVE_BACKS:\n",
        "        if False:\n",
        ("tests/client/test_client_give_back_retry.py",),
        "a give-back refused on a retry after a lost answer is reported unknown"),
    Mutation(
        "client-unanswered-attempt-forgotten", "lazily_queue/client/session.py",
        "            else:\n                op.unknown = True\n",
        "            else:\n                pass\n",
        ("tests/client/test_review_session.py",),
        "an attempt whose link ended unanswered leaves the op's outcome unknown"),
    Mutation(
        "client-unread-attempt-said-unknown", "lazily_queue/client/session.py",
        "            if link.unread(op.frame):\n",
        "            if False:\n",
        ("tests/client/test_client_link_caps.py::"
         "test_an_operation_sent_only_on_links_refused_over_a_cap_was_not_applied",),
        "an attempt the member never read (a link refused over a cap) leaves the op not "
        "applied"),
    Mutation(
        "client-deadline-closes-a-sending-link", "lazily_queue/client/deadlines.py",
        "                and (not link.open or link.stalled_for(now) >= STALLED)):\n",
        "                and True):\n",
        ("tests/client/test_client_unsent_deadline.py",),
        "an op's deadline does not close a link still sending its request"),
    Mutation(
        "client-large-mirror-cut-off", "lazily_queue/client/connection.py",
        "        if paced or len(data) > MAX_OUTBOX_BYTES:  # states: not a sign of a stuck "
        "reader\n",
        "        if False:\n",
        ("tests/client/test_review_requests.py",),
        "an object larger than a client's answer queue is still mirrored to it"),
    Mutation(
        "client-long-names-cached", "lazily_queue/client/connection.py",
        "            if name is None or len(name) <= _NAME_CACHED:  # a long one is checked "
        "each time\n",
        "            if True:\n",
        ("tests/client/test_review_requests.py::test_refused_names_are_not_kept_by_the_member",),
        "a client's link does not hold the long names it was refused"),
    Mutation(
        "client-relinks-at-once", "lazily_queue/client/dialling.py",
        "                if self._served(link):\n",
        "                if True:\n",
        ("tests/client/test_review_requests.py::"
         "test_a_client_whose_member_refuses_its_session_backs_off",),
        "a client whose member takes its link but refuses its session does not relink at once"),
    Mutation(
        "client-group-forms-unbounded", "lazily_queue/client/connection.py",
        "    while 0 < end < len(name) - 1 and len(topics) < GROUP_FORMS:\n",
        "    while 0 < end < len(name) - 1:\n",
        ("tests/client/test_review_requests.py::"
         "test_a_client_without_a_grant_watching_a_long_group_name_is_refused_at_once",),
        "a watch of a name of many colons costs the member a bounded number of checks"),
    Mutation(
        "fair-admission-in-arrival-order", "lazily_queue/client/fair_budget.py",
        "heapq.heappush(self._heap, (held, next(self._order), fut))",
        "heapq.heappush(self._heap, (0, next(self._order), fut))",
        ("tests/client/test_client_fairness.py",),
        "a slot that frees goes to the waiting client holding the fewest"),
    Mutation(
        "fair-proposals-in-arrival-order", "lazily_queue/client/fair.py",
        "heapq.heappush(self._turns, (lane.proposed, lane.turn, lane))",
        "heapq.heappush(self._turns, (0, lane.turn, lane))",
        ("tests/client/test_client_fairness.py",),
        "a light client's op is proposed before a greedy client's queued ones"),
    Mutation(
        "local-transaction-unchecked", "lazily_queue/transactions/local.py",
        "            if refusal is not None:\n                return index, *refusal\n",
        "",
        ("tests/cells/test_transactions.py",),
        "a local transaction with an op that would fail applies none of its ops"),
    Mutation(
        "local-dedup-window-ignored", "lazily_queue/storage/local.py",
        "        if self.dedup.lookup(msg_id, now)[0]:\n            return None\n",
        "",
        ("tests/cells/test_dedup.py",),
        "a local queue push repeated with its msg_id applies once"),
    Mutation(
        "group-not-fed", "lazily_queue/replicated/topics.py",
        "    groups.feed(sm, name, args[1], ttl_ms)\n",
        "",
        ("tests/replicated/test_group_ops.py", "tests/sim/test_group_checker.py"),
        "every publish feeds each consumer group of the topic, on every replica"),
    Mutation(
        "local-group-not-fed", "lazily_queue/storage/local_topic.py",
        "                group.feed(value, stamp)\n",
        "                pass\n",
        ("tests/cells/test_topic_groups.py",),
        "a local topic's publish feeds each of its consumer groups"),
    Mutation(
        "mirrored-group-not-fed", "lazily_queue/replicated/groups.py",
        "        _report(sm, name, ops.WORK_PUSH, value)\n",
        "",
        ("tests/client/test_client_groups.py",),
        "a client's mirror of a consumer group gets what its topic feeds it"),
    Mutation(
        "mirror-feeds-groups-twice", "lazily_queue/client/mirror.py",
        "            if op[0] == ops.GROUP_DECLARE:\n",
        "            if False:\n",
        ("tests/client/test_client_groups.py",),
        "a client mirroring a topic and its group counts each fed element once"),
    Mutation(
        "guarded-watch-unchecked", "lazily_queue/client/connection.py",
        "        if state is seen:\n            return state is not None\n"
        "        self.settle(key, view)\n        return False\n",
        "        return True\n",
        ("tests/client/test_client_groups.py",),
        "a client reading a name as a consumer group's sees nothing of a plain work queue "
        "that takes the name"),
    Mutation(
        "group-declared-on-older-member", "lazily_queue/client/link_fit.py",
        "        if P.GROUPS_FEATURE in link.features:\n",
        "        if True:\n",
        ("tests/client/test_client_groups.py",),
        "a group declaration is not sent to a member without client groups"),
    Mutation(
        "group-by-its-own-name", "lazily_queue/client/connection.py",
        "        if any(self.grant.refusal(asked, topic) is None for topic in topics):",
        "        if False:",
        ("tests/client/test_client_groups.py",),
        "a consumer group is consumed with the consume permission on its topic's name"),
    Mutation(
        "seek-past-retained-range", "lazily_queue/core/topic_subscriptions.py",
        "    if not base <= offset <= end:\n        raise out_of_range(offset, base, end)\n",
        "",
        ("tests/cells/test_topic_replay.py",),
        "a start or seek outside the retained range raises OffsetOutOfRange"),
    Mutation(
        "client-ops-without-session", "lazily_queue/replicated/state_machine.py",
        "        return self._apply_in_session(args[0], args[1], args[2:])",
        "        return [self._apply_plain(op[1], op[2:]) for op in args[2:]]",
        ("tests/replicated/test_client_sessions.py",
         "tests/sim/test_simulation.py::test_client_retries_through_other_members_apply_once"),
        "a client's ops proposed together are each deduplicated under the client's session"),
    Mutation(
        "session-floor-keeps-its-low", "lazily_queue/replicated/session_results.py",
        "            for seq in range(self.low, floor):",
        "            for seq in range(self.low + 1, floor):",
        ("tests/replicated/test_client_sessions.py",),
        "a session's floor forgets every result below it, as a full scan of them would"),
    Mutation(
        "seq-reused-answered-with-the-first-result", "lazily_queue/replicated/state_machine.py",
        "results.append(SEQ_REUSED if kept is not None and kept != identity(op)",
        "results.append(SEQ_REUSED if False",
        ("tests/replicated/test_client_sessions.py",),
        "a seq applied again as another op is refused, not answered with the first op's "
        "result"),
    Mutation(
        "session-low-restored-as-floor", "lazily_queue/replicated/state_snapshot.py",
        "min([int(floor), *kept])", "int(floor)",
        ("tests/replicated/test_client_sessions.py",),
        "a restored session's kept results below its floor are forgotten when it moves"),
    Mutation(
        "session-keeps-results-past-its-bytes", "lazily_queue/replicated/session_results.py",
        "        if over > 0:\n            self.total -= session.give_up(over)",
        "        if False:\n            self.total -= session.give_up(over)",
        ("tests/replicated/test_session_kept_bytes.py",),
        "a session keeps at most SESSION_KEPT_BYTES of results, giving up its oldest"),
    Mutation(
        "session-keeps-a-result-too-large", "lazily_queue/replicated/session_results.py",
        "        if size > limit:\n            session.keep(seq, NOT_KEPT)",
        "        if False:\n            session.keep(seq, NOT_KEPT)",
        ("tests/replicated/test_session_kept_bytes.py",),
        "a result over a session's bytes is answered in full but not kept"),
    Mutation(
        "sessions-keep-results-past-all-bytes", "lazily_queue/replicated/session_results.py",
        "            self.shed(sessions.values())\n\n    def freed",
        "            pass\n\n    def freed",
        ("tests/replicated/test_session_kept_bytes.py",),
        "all sessions together keep at most KEPT_BYTES of results"),
    Mutation(
        "restored-kept-bytes-uncounted", "lazily_queue/replicated/state_snapshot.py",
        "    sm.kept.rebuild(sessions)", "    pass",
        ("tests/replicated/test_session_kept_bytes.py",),
        "a replica restored from a snapshot counts kept results as those that applied did"),
    Mutation(
        "client-ops-lowest-floor", "lazily_queue/client/batching.py",
        "    return [session, max(op.floor for op in members),",
        "    return [session, min(op.floor for op in members),",
        ("tests/client/test_client_cluster.py::"
         "test_more_outstanding_than_the_session_window_waits_for_the_floor",),
        "a group of a client's ops is checked against the session window as its last op"),
    Mutation(
        "client-ops-held-while-waiting", "lazily_queue/client/server.py",
        "                        self._flush_ops(conn)  # ops waiting here must not hold their"
        " slots\n                        conn.blocked = True\n"
        "                        await conn.slots.take()\n",
        "                        conn.blocked = True\n"
        "                        await conn.slots.take()\n",
        ("tests/client/test_client_batching.py",),
        "ops a member read are proposed before it waits for a client's slots"),
    Mutation(
        "client-certificate-unchecked", "transports/lazily_transports/_core/_authentication.py",
        "        refusal = found(self.channel.peer_certificate())",
        "        refusal = None",
        ("tests/client/test_client_certificates.py",),
        "a client's TLS certificate must be the one its grant names (subject, fingerprint)"),
    Mutation(
        "client-is-a-peer", "transports/lazily_transports/mesh.py",
        "        if channel.extra(LinkAttribute.credential, None) is not None:",
        "        if False:",
        ("tests/transports/test_client_links.py",),
        "a client's link never reaches Raft (never handed to a peer link)"),
    Mutation(
        "snapshot-ends-before-durable", "lazily_queue/raft/snapshot.py",
        "            if not self.writer.poll():",
        "            if False:",
        ("tests/raft/test_snapshot_thread.py::test_the_loop_runs_while_a_snapshot_file_is_written",),
        "the engine compacts its journal before the snapshot file is durable"),
    Mutation(
        "leader-snapshot-under-ours", "lazily_queue/raft/snapshot.py",
        "        self.wait()  # our own snapshot, still being written,",
        "        pass  #",
        ("tests/raft/test_snapshot_thread.py::test_a_leaders_snapshot_waits_for_ours_and_lands_last",),
        "a snapshot of ours still being written lands over the one installed from the leader"),
    Mutation(
        "stale-snapshot-installed", "lazily_queue/raft/snapshot.py",
        '            if self.is_stale(doc["last"]):',
        "            if False:",
        ("tests/sim/test_found_bugs.py::test_a_stale_snapshot_keeps_the_entries_after_it",),
        "a delayed copy of an older snapshot never clears entries a follower acknowledged"),
    Mutation(
        "leader-outside-configuration-ignored", "lazily_queue/raft/delivery.py",
        '            if message.get("type") != "append_entries":',
        "            if True:",
        ("tests/sim/test_found_bugs.py::"
         "test_a_leader_missing_from_a_followers_configuration_still_replicates_to_it",),
        "a member that missed a re-addition still takes the new leader's entries"),
    Mutation(
        "replay-time-strictly-after", "lazily_queue/core/stamps.py",
        "        return self.first_above_in(stamp - 1, base, end, not self._falls)",
        "        return self.first_above_in(stamp, base, end, not self._falls)",
        ("tests/cells/test_topic_replay_time.py",),
        "a time start includes the elements enqueued exactly at that time"),
    Mutation(
        "headers-lost-on-give-back", "lazily_queue/core/fifo.py",
        "        if headers:\n            self._headers.update(headers)\n",
        "        if headers:\n            pass\n",
        ("tests/cells/test_queue_headers.py",),
        "elements given back keep the headers they were pushed with"),
    Mutation(
        "headers-outlive-a-plain-pop", "lazily_queue/core/fifo.py",
        "                self._take_headers(taken)\n            self._tail_first += k - from_runs",
        "                pass\n            self._tail_first += k - from_runs",
        ("tests/cells/test_queue_headers.py",),
        "a plain pop takes the element's headers with it (none outlive their element)"),
    Mutation(
        "work-headers-of-pending-items-pruned", "lazily_queue/replicated/work_headers.py",
        "    return ({p.item_id for p in core.pending()} | {d.item_id for d in core.in_flight()}",
        "    return (set() | {d.item_id for d in core.in_flight()}",
        ("tests/cells/test_work_headers.py",),
        "a work item keeps its headers while it waits, is leased or dead-lettered"),
    Mutation(
        "topic-headers-kept-for-another-topic", "lazily_queue/replicated/headers.py",
        "    if core is None or table.owner is not core:",
        "    if core is None:",
        ("tests/cells/test_topic_headers.py",),
        "a topic deleted and declared again does not inherit the old one's headers"),
    Mutation(
        "delayed-item-claimable-early", "lazily_queue/core/work_schedule.py",
        "        while delayed and delayed[0][0] <= now:\n",
        "        while delayed:\n",
        ("tests/cells/test_work_scheduling.py", "tests/replicated/test_scheduling_ops.py",
         "tests/sim/test_scheduling_checker.py"),
        "a delayed work item is never claimable before its due time"),
    Mutation(
        "priority-levels-reversed", "lazily_queue/core/work_schedule.py",
        "        for level in sorted(self.levels, reverse=True):\n"
        "            queue = self.levels[level]",
        "        for level in sorted(self.levels):\n            queue = self.levels[level]",
        ("tests/cells/test_work_scheduling.py",),
        "higher priority levels are claimed first"),
    Mutation(
        "retry-backoff-ignored", "lazily_queue/core/work.py",
        "            if delay is None and self.retry is not None:\n",
        "            if False:\n",
        ("tests/cells/test_work_scheduling.py", "tests/replicated/test_scheduling_ops.py"),
        "a nack without delay or an expired lease waits the retry policy's back-off"),
    Mutation(
        "expired-element-delivered", "lazily_queue/core/expiry.py",
        "        return deadline is not None and now >= deadline",
        "        return deadline is not None and now > deadline + 1000",
        ("tests/replicated/test_expiry_ops.py", "tests/cells/test_expiry.py"),
        "an element is never popped or claimed at or after its deadline"),
    Mutation(
        "expiry-on-a-local-clock", "lazily_queue/replicated/expiry.py",
        "    result, expired = pop_live(q, expiry, sm.now, n, _queue_pop(sm, name, q, taken))",
        "    result, expired = pop_live(q, expiry, 0, n, _queue_pop(sm, name, q, taken))",
        ("tests/replicated/test_expiry_ops.py",),
        "a pop decides expiry at its own entry's leader stamp, not before a sweep"),
    Mutation(
        "work-claim-ignores-ttl", "lazily_queue/core/expiry_take.py",
        "        dropped, dropped_mask = expire_work_head(core, expiry, now)\n",
        "        dropped, dropped_mask = 0, 0\n",
        ("tests/sim/test_work_expiry_checker.py::test_a_few_seeds_pass_with_work_items_expiring",),
        "a work claim never hands out an item at or after its TTL's deadline (simulated)"),
    Mutation(
        "group-fed-without-deadline", "lazily_queue/replicated/groups.py",
        "        group_expiry.deadlines[item_id] = deadline\n",
        "",
        ("tests/replicated/test_group_expiry_ops.py", "tests/sim/test_group_checker.py"),
        "an element enters each consumer group with its topic deadline (never delivered "
        "after it)"),
    Mutation(
        "local-group-fed-without-deadline", "lazily_queue/storage/local_topic_expiry.py",
        "                group.note_deadline(offset, fed)\n",
        "                pass\n",
        ("tests/cells/test_group_expiry.py",),
        "a local topic's groups never deliver an element after its deadline"),
    Mutation(
        "group-claim-expiry-at-its-lease-time", "lazily_queue/replicated/expiry.py",
        "claim_live(core, expiry, worker, sm.now if fed else now, now,",
        "claim_live(core, expiry, worker, now, now,",
        ("tests/replicated/test_group_expiry_ops.py",),
        "a group's claim never hands out an element the leader's stamp says expired, "
        "whatever time it gives its lease"),
    Mutation(
        "mirror-forgets-group-expiry-time", "lazily_queue/replicated/objects.py",
        '            state.mirrored_group = doc.get("group") is True\n',
        "",
        ("tests/replicated/test_group_expiry_ops.py",),
        "a client's mirror of a consumer group decides expiry as its member does"),
    Mutation(
        "limit-bytes-unchecked", "lazily_queue/core/limits.py",
        "    cap = limits.max_bytes\n    if cap is None:\n        return 0",
        "    cap = limits.max_bytes\n    if True:\n        return 0",
        ("tests/replicated/test_limits.py", "tests/cells/test_queue_limits.py"),
        "a queue with max_bytes never holds more bytes than its limit (reject refuses)"),
    Mutation(
        "drop-not-counted", "lazily_queue/core/limited_fifo.py",
        "            quota.count_dropped(DROP_OLDEST, n)",
        "            pass",
        ("tests/replicated/test_limits.py", "tests/core/test_fifo_delayed.py"),
        "every element drop_oldest removes is counted (never silently lost)"),
    Mutation(
        "delayed-not-counted-under-reject", "lazily_queue/core/limited_fifo.py",
        "        quota.delayed((size,))",
        "        pass",
        ("tests/core/test_fifo_delayed.py", "tests/replicated/test_queue_options_ops.py"),
        "under reject limits ready and delayed elements together never pass a limit"),
    Mutation(
        "delayed-duplicate-id-loaded", "lazily_queue/core/fifo_delayed.py",
        "            if e[1] in seen:",
        "            if False:",
        ("tests/core/test_fifo_delayed.py",),
        "a snapshot naming one delayed id twice is refused"),
    Mutation(
        "client-proposes-promotion", "lazily_queue/client/access.py",
        "        if not isinstance(name, str) or code in MAINTENANCE:",
        "        if not isinstance(name, str):",
        ("tests/client/test_client_access.py::test_no_client_may_propose_a_promotion",),
        "only the leader's maintenance proposes QUEUE_PROMOTE"),
    Mutation(
        "promotion-takes-extra-args", "lazily_queue/replicated/queue_options.py",
        "    if len(args) != 1:",
        "    if not args:",
        ("tests/replicated/test_queue_options_ops.py",),
        "QUEUE_PROMOTE carries only the queue name (no proposer's time)"),
    Mutation(
        "client-proposes-work-promotion", "lazily_queue/client/access.py",
        "MAINTENANCE = frozenset({ops.QUEUE_PROMOTE, ops.WORK_PROMOTE})",
        "MAINTENANCE = frozenset({ops.QUEUE_PROMOTE})",
        ("tests/client/test_client_access.py::test_no_client_may_propose_a_promotion",),
        "only the leader's maintenance proposes WORK_PROMOTE (an admin client included)"),
    Mutation(
        "work-promotion-takes-extra-args", "lazily_queue/replicated/scheduling.py",
        "    if len(args) != 1:",
        "    if not args:",
        ("tests/replicated/test_scheduling_ops.py",),
        "WORK_PROMOTE carries only the work queue name (no proposer's time)"),
    Mutation(
        "raft-work-promotion-at-a-given-time", "lazily_queue/storage/raft_scheduling.py",
        "        if now is not None:",
        "        if False:",
        ("tests/cells/test_work_scheduling_replicated.py",),
        "a member's promote_due refuses a time of its own (it promotes at the leader's stamp)"),
    Mutation(
        "maintenance-promotes-work-at-its-time", "lazily_queue/maintenance.py",
        "            due.append((ops.WORK_PROMOTE, [name]))",
        "            due.append((ops.WORK_PROMOTE, [name, now_ms]))",
        ("tests/replicated/test_scheduling_ops.py",),
        "the leader's maintenance proposes WORK_PROMOTE as [name]"),
    Mutation(
        "popped-headers-lost-replicated", "lazily_queue/replicated/expiry.py",
        "            taken.update((i, h) for i, h in got[2])",
        "            pass",
        ("tests/replicated/test_headers_with_limits_and_expiry.py",),
        "a pop with headers on an expiring replicated queue answers the headers it took"),
    Mutation(
        "popped-headers-lost-local", "lazily_queue/storage/local_expiry.py",
        "            taken.update((i, h) for i, h in result[2])",
        "            pass",
        ("tests/cells/test_queue_options.py",),
        "a pop with headers on an expiring local deque answers the headers it took"),
    Mutation(
        "topic-take-hands-out-expired", "lazily_queue/replicated/topics.py",
        "        skipped = skip_expired(topic, rules, args[1], sm.now).invalidated",
        "        pass",
        ("tests/sim/test_topic_options_checker.py", "tests/cells/test_topic_options.py"),
        "a topic take never hands out an element expired at its stamp (per-message ttl)"),
    Mutation(
        "topic-reject-ignored", "lazily_queue/core/limited_topic.py",
        "            if quota.limits.overflow == REJECT:\n                raise full(",
        "            if False:\n                raise full(",
        ("tests/replicated/test_topic_options_ops.py", "tests/cells/test_topic_options.py"),
        "a reject topic never holds more than its limits (a publish past them is refused)"),
    Mutation(
        "txn-ignores-limits", "lazily_queue/core/txn.py",
        "        if isinstance(fifo, LimitedFifo):",
        "        if False:",
        ("tests/replicated/test_limits.py::test_a_transaction_past_a_reject_limit_aborts_whole",),
        "a transaction whose push a reject limit refuses aborts whole"),
    Mutation(
        "work-limits-unchecked-in-txn", "lazily_queue/core/txn.py",
        "        if not isinstance(core, LimitedWorkQueue):\n            return None",
        "        if True:\n            return None",
        ("tests/cells/test_work_limits.py",),
        "a transaction whose push a work queue's limits refuse aborts whole"),
    Mutation(
        "retention-gap-uncounted", "lazily_queue/core/limited_topic.py",
        "                self.gaps[subscriber] = self.gaps.get(subscriber, 0)"
        " + base - record.cursor",
        "                pass",
        ("tests/cells/test_topic_retention.py",),
        "a subscriber behind a topic's retention sees the gap it missed counted"),
    Mutation(
        "work-options-ttl-dropped", "lazily_queue/replicated/work_options.py",
        "        if options.ttl_ms is not None:\n            expiry.of(",
        "        if False:\n            expiry.of(",
        ("tests/cells/test_work_options.py",),
        "a work-queue push combining a ttl with other options expires by it on a cluster"),
    Mutation(
        "work-declaration-ignores-retry-and-limits", "lazily_queue/replicated/work_queues.py",
        "        if (core.visibility_timeout, core.max_deliveries, core.retry, have) != (\n"
        "                visibility_timeout, max_deliveries, retry, limits):",
        "        if (core.visibility_timeout, core.max_deliveries) != (\n"
        "                visibility_timeout, max_deliveries):",
        ("tests/replicated/test_work_declarations.py",),
        "a work queue declared again with another retry policy or limits is refused"),
    Mutation(
        "work-ttl-from-the-due-time", "lazily_queue/replicated/work_options.py",
        "                item_id, at, options.ttl_ms)",
        "                item_id, at if due is None else int(due), options.ttl_ms)",
        ("tests/cells/test_work_options.py::"
         "test_a_delayed_items_ttl_counts_from_its_push_on_a_cluster",),
        "a delayed work item's ttl counts from its push, not from its due time"),
    Mutation(
        "txn-counts-delayed-work-as-droppable", "lazily_queue/core/txn.py",
        "        if not delayed:\n            levels.setdefault(level, deque()).append(size)",
        "        if True:\n            levels.setdefault(level, deque()).append(size)",
        ("tests/cells/test_work_transactions.py",),
        "a transaction never counts on dropping a delayed work item (aborts whole instead)"),
    Mutation(
        "work-readers-miss-delayed-len", "lazily_queue/core/work_masks.py",
        "                           | DELAYED_LEN | EXPIRED)",
        "                           | EXPIRED)",
        ("tests/cells/test_work_masks.py",),
        "deleting a work queue invalidates every reader of its cells, delayed_len included"),
    Mutation(
        "limited-work-ignores-delayed", "lazily_queue/core/limited_work.py",
        "        extra = 0 if sched is None else sched.ready + len(sched.delayed)",
        "        extra = 0 if sched is None else sched.ready",
        ("tests/cells/test_work_options.py",),
        "a work queue's limits count its delayed items (delayed pushes, retry back-off)"),
    Mutation(
        "delayed-queue-element-popped-early", "lazily_queue/core/fifo_delayed.py",
        "        while heap and heap[0][0] <= now:",
        "        while heap:",
        ("tests/replicated/test_queue_options_ops.py", "tests/cells/test_queue_options.py"),
        "a delayed queue element is never popped before its due time"),
    Mutation(
        "push-options-map-not-strict", "lazily_queue/core/push_options.py",
        "        if check is None:\n            raise ValueError(",
        "        if check is None:\n            continue\n            raise ValueError(",
        ("tests/replicated/test_queue_options_ops.py",),
        "an options map with an unknown key is refused whole, never half read"),
    Mutation(
        "work-time-past-the-stamp", "lazily_queue/replicated/work_queues.py",
        "    return min(int(value), sm.now)",
        "    return int(value)",
        ("tests/replicated/test_scheduling_ops.py",),
        "an op's explicit time never runs past its entry's stamp (no early claim, no "
        "lease past the leader's clock)"),
    Mutation(
        "startup-timeout-nan", "lazily_queue/config.py",
        "not isinstance(timeout, int | float) or not timeout >= 0 \\\n",
        "not isinstance(timeout, int | float) or timeout < 0 \\\n",
        ("tests/cli/test_node_config.py",),
        "a startup_timeout of nan is refused when the file is read (it never expired)"),
    Mutation(
        "status-not-http", "lazily_queue/cli/status.py",
        "    except (http.client.HTTPException, ValueError) as exc:\n        "
        "print(f\"error: {url.rstrip('/')} is not a node's status page "
        "({type(exc).__name__}); \"",
        "    except ZeroDivisionError as exc:\n        "
        "print(f\"error: {url.rstrip('/')} is not a node's status page "
        "({type(exc).__name__}); \"",
        ("tests/cli/test_wrong_address.py",),
        "`status` pointed at a port that is not a node's page says so in one line"),
    Mutation(
        "admin-not-http", "lazily_queue/cli/admin_client.py",
        "        except (http.client.HTTPException, ValueError) as exc:",
        "        except ValueError as exc:",
        ("tests/cli/test_wrong_address.py",),
        "the admin commands pointed at a port that is not a node's page say so in one line"),
    Mutation(
        "cli-timeout-seconds", "lazily_queue/cli/admin_client.py",
        '    if not 0 < value < float("inf"):',
        "    if False:",
        ("tests/cli/test_wrong_address.py",),
        "--timeout 0, negative, nan or inf is a usage error, not a traceback or a "
        "misleading socket error"),
    Mutation(
        "cli-url-checked", "lazily_queue/cli/admin_client.py",
        "    if problem:\n        raise CliError(f\"--url",
        "    if False:\n        raise CliError(f\"--url",
        ("tests/cli/test_wrong_address.py",),
        "a malformed --url is a usage error naming it"),
    Mutation(
        "members-add-address", "lazily_queue/cli/members.py",
        "    check_address(args.address, args.id)\n",
        "",
        ("tests/cli/test_wrong_address.py",),
        "`members add` refuses an address no member could listen on before asking the node"),
    Mutation(
        "data-dir-a-file", "lazily_queue/config.py",
        "            if not place.is_dir():",
        "            if False:",
        ("tests/cli/test_node_config.py",),
        "a data_dir that is (or lies under) a file is a configuration error naming it"),
    Mutation(
        "app-import-raises", "lazily_queue/service.py",
        "    except Exception as exc:  # a SyntaxError or anything the module raises at import",
        "    except ZeroDivisionError as exc:",
        ("tests/cli/test_app_dir.py",),
        "an [app] module that raises at import: exit 1, its traceback logged, one error line"),
    Mutation(
        "app-entry-async", "lazily_queue/service.py",
        "    if not any(inspect.iscoroutinefunction(f) for f in (",
        "    if not all(inspect.iscoroutinefunction(f) for f in (",
        ("tests/cli/test_app_dir.py",),
        "an [app] entry that is not async is refused before the node starts (it ran, then "
        "a traceback)"),
    Mutation(
        "http-url-ipv6", "lazily_queue/config.py",
        '        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"',
        '        return f"http://{host}:{port}"',
        ("tests/cli/test_node_config.py",),
        "an IPv6 `http` address gives a bracketed URL (`status --config` could not reach it)"),
    Mutation(
        "cli-http-port-zero", "lazily_queue/cli/admin_client.py",
        "    if http is not None and http[1] == 0:",
        "    if False:",
        ("tests/cli/test_wrong_address.py",),
        "--config with `http` port 0 says to pass --url (it dialled port 0)"),
    Mutation(
        "clients-empty-list", "lazily_queue/config.py",
        '    if doc.get("clients") == []:',
        "    if False:",
        ("tests/cli/test_node_config.py",),
        "`clients = []` is refused when the file is read, naming the key"),
    Mutation(
        "config-not-utf8", "lazily_queue/config.py",
        "    except UnicodeDecodeError as exc:\n        raise ConfigError(f\"{file} is not UTF-8",
        "    except ZeroDivisionError as exc:\n        raise ConfigError(f\"{file} is not UTF-8",
        ("tests/cli/test_node_config.py",),
        "a configuration file that is not UTF-8 is one error naming it, not a traceback"),
    Mutation(
        "admin-credential-not-utf8", "lazily_queue/admin_auth.py",
        '    return hmac.compare_digest(presented.encode("utf-8", "surrogatepass"),\n'
        '                               expected.encode("utf-8", "surrogatepass"))',
        "    return hmac.compare_digest(presented.encode(), expected.encode())",
        (f"{_HOSTILE}::test_credentials_that_are_not_text_are_refused_not_a_server_error",),
        "a credential that is not valid UTF-8 is a wrong token (401/403), not a 500"),
    Mutation(
        "admin-token-guessing-unthrottled", "lazily_queue/admin_auth.py",
        "        if len(times) >= MAX_GUESSES:",
        "        if False:",
        (f"{_HOSTILE}::test_guessing_the_token_is_throttled_per_source",),
        "a source that guessed 10 wrong tokens in a minute is refused (429), right token too"),
    Mutation(
        "admin-advertised-origin-refused", "lazily_queue/admin_auth.py",
        "        self.origins = frozenset(origin_of(url) for url in origins)",
        "        self.origins = frozenset()",
        ("tests/integrations/test_service_http.py::"
         "test_the_advertised_page_is_a_same_origin_for_the_admin_api",),
        "behind a proxy, the advertised page's origin may use the admin API"),
    Mutation(
        "admin-paging-unicode-digits", "lazily_queue/integrations/aiohttp_admin.py",
        "    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):",
        "    if not raw.isdigit():",
        (f"{_HOSTILE}::test_malformed_paging_parameters_are_bad_requests",),
        "offset/limit of Unicode or 5,000 digits are 400, not a 500"),
    Mutation(
        "admin-purge-dead-letters-truthy", "lazily_queue/integrations/aiohttp_admin.py",
        "    if not isinstance(dead_letters, bool):",
        "    if False:",
        (f"{_HOSTILE}::test_purge_takes_dead_letters_as_a_boolean",),
        'purge refuses a dead_letters that is not a boolean ("false" purged them)'),
    Mutation(
        "admin-dead-letter-json-unsafe", "lazily_queue/admin.py",
        '    doc["value"] = json_safe(doc["value"])',
        '    doc["value"] = doc["value"]',
        (f"{_HOSTILE}::test_dead_letters_of_every_value_type_are_listed",),
        "dead letters holding datetimes, sets, nested bytes or NaN are listed as strict JSON"),
    Mutation(
        "admin-body-one-read", "lazily_queue/integrations/aiohttp_admin.py",
        "            while len(raw) <= MAX_BODY:  # read() returns what has arrived",
        "            while not raw:  # read() returns what has arrived",
        (f"{_HOSTILE}::test_a_body_is_read_whole_and_not_waited_for_forever",),
        "an admin request body split across TCP segments is read whole"),
    Mutation(
        "admin-body-no-deadline", "lazily_queue/integrations/aiohttp_admin.py",
        "        async with asyncio.timeout(BODY_TIMEOUT):",
        "        async with asyncio.timeout(None):",
        (f"{_HOSTILE}::test_a_body_is_read_whole_and_not_waited_for_forever",),
        "a trickled admin body (unauthenticated login included) ends with 408"),
    Mutation(
        "admin-member-address-control-chars", "lazily_queue/config_keys.py",
        "    if not address.isprintable() or any(c.isspace() for c in address):",
        "    if False:",
        (f"{_HOSTILE}::test_a_member_address_with_control_characters_is_refused",),
        "a member address with a newline or space is refused before anything changes"),
    Mutation(
        "add-member-address-kept-on-refusal", "lazily_queue/membership.py",
        "        await _restore_address(node, member, previous, timeout, refused)\n",
        "        pass\n",
        ("tests/testing/test_add_member_atomic.py::test_a_refused_change_withdraws_the_address",
         "tests/testing/test_add_member_atomic.py::"
         "test_a_refused_change_restores_an_earlier_address"),
        "a refused add_member leaves the member's address record as it was"),
    Mutation(
        "add-member-address-dropped-while-in-flight", "lazily_queue/membership.py",
        "        if _may_still_commit(outcomes):",
        "        if False:",
        ("tests/testing/test_add_member_atomic.py::"
         "test_an_attempt_that_may_still_commit_keeps_the_address",),
        "an add_member that may still commit keeps the address its member needs"),
    Mutation(
        "remove-member-address-kept", "lazily_queue/membership.py",
        "    await _forget(node, member, ",
        "    (lambda *_: None)(node, member, ",
        (f"{_FORGETS}::test_a_removed_member_leaves_no_address_behind",),
        "a committed remove_member forgets the removed node's replicated address"),
    Mutation(
        "remove-member-in-flight-said-unchanged", "lazily_queue/membership.py",
        "        if not _may_still_commit(outcomes):",
        "        if True:",
        (f"{_FORGETS}::test_a_removal_that_may_still_commit_keeps_the_address",),
        "a remove_member that may still commit says the address stays replicated"),
    Mutation(
        "remove-member-timeout-silent-on-address", "lazily_queue/membership.py",
        '        raise TimeoutError(f"{late}; {kept}") from None',
        "        raise",
        (f"{_FORGETS}::test_a_removal_that_may_still_commit_keeps_the_address",),
        "a remove_member that timed out says the address stays replicated and how to drop it"),
    Mutation(
        "remove-member-forget-failure-raised", "lazily_queue/membership.py",
        '        log.warning("node %s: node %s was removed, but forgetting its address failed',
        '        raise\n        log.warning("node %s: node %s was removed, but forgetting its '
        'address failed',
        (f"{_FORGETS}::test_a_forget_that_fails_is_logged_and_removing_again_cleans_up",),
        "a removal that committed is reported done when forgetting the address fails"),
    Mutation(
        "remove-member-leftover-address-kept", "lazily_queue/membership.py",
        "        if address is None:\n"
        "            raise InvalidConfiguration(f\"node {member} is not",
        "        if True:\n            raise InvalidConfiguration(f\"node {member} is not",
        (f"{_FORGETS}::test_a_forget_that_fails_is_logged_and_removing_again_cleans_up",),
        "removing a former member again forgets the address a failed forget left behind"),
    Mutation(
        "admin-remove-leftover-address-not-found", "lazily_queue/admin.py",
        "            member_id) is None:  # a former member's address left behind is forgotten\n",
        "            member_id) is None or True:\n",
        (f"{_FORGETS}::test_a_forget_that_fails_is_logged_and_removing_again_cleans_up",),
        "the admin API removes the address a former member left behind, not 404"),
    Mutation(
        "http-any-host-answered", "lazily_queue/integrations/aiohttp.py",
        "        if request.path in unguarded or own_host(host, own):",
        "        if True:",
        ("tests/integrations/test_service_http.py::"
         "test_a_page_of_another_site_rebound_to_the_node_is_refused",),
        "the node's page and admin API refuse a Host that is not one of its names (rebinding)"),
    Mutation(
        "http-metrics-any-host-answered", "lazily_queue/integrations/aiohttp.py",
        "def host_guard(names: Iterable[str], *, open_paths: Iterable[str] = ()\n",
        "def host_guard(names: Iterable[str], *, open_paths: Iterable[str] = (\"/metrics\",)\n",
        ("tests/integrations/test_service_http.py::"
         "test_metrics_answer_only_for_the_nodes_own_names",),
        "/metrics refuses a Host that is not one of the node's names, like the page"),
    Mutation(
        "admin-cookie-not-secure-behind-tls-proxy", "lazily_queue/integrations/aiohttp_admin.py",
        "secure=_over_tls(request), path=\"/\", max_age",
        "secure=request.secure, path=\"/\", max_age",
        ("tests/integrations/test_service_http.py::"
         "test_the_session_cookie_is_secure_when_the_browser_came_over_https",),
        "the admin session cookie is Secure when the browser came over HTTPS (a proxy's too)"),
    Mutation(
        "metrics-deleted-series-kept", "lazily_queue/metrics.py",
        "                self._forget(family, event.name)",
        "                pass",
        ("tests/integrations/test_metrics_churn.py",),
        "a deleted object's operations_total series leave /metrics"),
    Mutation(
        "status-workers-unbounded", "lazily_queue/status.py",
        "    busiest = heapq.nsmallest(MAX_WORKERS_SHOWN,",
        "    busiest = heapq.nsmallest(10**9,",
        (f"{_BOUNDS}::test_workers_listed_are_bounded",),
        "a status lists only the busiest workers of a work queue"),
    Mutation(
        "status-workers-scan-unbounded", "lazily_queue/status.py",
        "    if core.in_flight_len() > MAX_WORKER_SCAN:",
        "    if False:",
        (f"{_BOUNDS}::test_a_status_does_not_scan_a_huge_in_flight_set",),
        "a status does not walk a huge in-flight set per request"),
    Mutation(
        "status-subscribers-unbounded", "lazily_queue/status.py",
        "    behind = heapq.nsmallest(MAX_SUBSCRIBERS_SHOWN, records.items(),",
        "    behind = heapq.nsmallest(10**9, records.items(),",
        (f"{_BOUNDS}::test_subscribers_listed_are_the_most_lagging",),
        "a status and the lag metric list only a topic's most lagging subscribers"),
    Mutation(
        "peer-pages-deep-json", "lazily_queue/peer_pages.py",
        "    except RecursionError:\n        raise ValueError(",
        "    except ZeroDivisionError:\n        raise ValueError(",
        ("tests/integrations/test_peer_pages.py",),
        "a page answering deeply nested JSON is that member's error; the reading goes on"),
    Mutation(
        "page-names-in-the-path", "lazily_queue/web/status.html",
        '"admin/api/queues/" + kind + "/_/" + button.dataset.action + "?" + named(name);',
        '"admin/api/queues/" + kind + "/" + encodeURIComponent(name) + "/" + '
        'button.dataset.action;',
        ("tests/integrations/test_status_page_names.py",),
        "the page purges objects named . and .. (a browser resolves them out of a path)"),
    Mutation(
        "http-idle-connections-kept", "lazily_queue/service.py",
        "        runner = web.AppRunner(app, access_log=None, "
        "keepalive_timeout=HTTP_IDLE_TIMEOUT,\n",
        "        runner = web.AppRunner(app, access_log=None,\n",
        ("tests/integrations/test_service_http.py::test_idle_and_half_sent_requests_are_closed",),
        "an idle or half-sent HTTP request is closed after HTTP_IDLE_TIMEOUT"),
    Mutation(
        "http-connections-ungated", "lazily_queue/http_gate.py",
        "        if not self.gate.admit(source):",
        "        if False:",
        ("tests/integrations/test_service_http.py::"
         "test_one_source_cannot_take_every_connection",),
        "one IP address cannot hold more than its share of the node's HTTP connections"),
    Mutation(
        "sse-example-no-heartbeat", "examples/sse_fanout.py",
        '                await response.write(b": heartbeat\\n\\n")  # raises once the client left',
        "                pass",
        ("tests/integrations/test_examples.py::"
         "test_sse_fanout_forgets_a_client_that_left_a_quiet_topic",),
        "an SSE client that left a quiet topic is forgotten (no leaked task or subscriber)"),
    Mutation(
        "rejoin-ignores-snapshot", "lazily_queue/cli/rejoin.py",
        '            damaged.append(f"damaged snapshot: {snapshot_path}: {exc}")',
        "            pass",
        ("tests/cli/test_rejoin_cli.py::test_rejoin_recovers_a_damaged_snapshot",),
        "rejoin recovers the damaged snapshot the node refused to start with"),
    Mutation(
        "rejoin-disk-error-traceback", "lazily_queue/cli/rejoin.py",
        "    except OSError as exc:\n        print(f\"error: cannot recover node",
        "    except ZeroDivisionError as exc:\n        print(f\"error: cannot recover node",
        ("tests/cli/test_rejoin_cli.py::"
         "test_rejoin_with_a_directory_in_the_way_says_so_in_one_line",),
        "rejoin on an unreadable data directory is one line (exit 4), not a traceback"),
    Mutation(
        "rejoin-lock-released-early", "lazily_queue/cli/rejoin.py",
        '        lock.acquire(owner="rejoin")\n',
        '        lock.acquire(owner="rejoin")\n        lock.release()\n',
        ("tests/cli/test_rejoin_cli.py::test_rejoin_holds_the_lock_while_it_wipes",),
        "no node can start on a data directory while rejoin wipes it"),
    Mutation(
        "datadir-in-the-way-advice", "lazily_queue/datadir.py",
        "    elif code in (errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.EINVAL):",
        "    elif False:",
        ("tests/raft/test_data_dir_lock.py::test_a_directory_in_the_way_is_named_with_the_fix",),
        "a directory where the node keeps a file is named, with 'move it away' as the fix"),
    Mutation(
        "datadir-read-only-advice", "lazily_queue/datadir.py",
        "    elif code == errno.EROFS:",
        "    elif False:",
        ("tests/raft/test_data_dir_lock.py::test_a_read_only_file_system_is_named_with_the_fix",),
        "a read-only file system under the data directory says to remount it"),
    Mutation(
        "node-stop-keeps-journal-open", "lazily_queue/node.py",
        "        if disk is not None:\n            disk.close()\n        self._dir_lock.release()",
        "        self._dir_lock.release()",
        ("tests/raft/test_data_dir_lock.py::"
         "test_a_stopped_node_keeps_no_file_of_its_directory_open",),
        "a stopped (or refused) embedded node keeps no descriptor of its data directory"),
    Mutation(
        "listen-refused-webrtc-advice", "lazily_queue/service.py",
        "            if exc.errno in (errno.EACCES, errno.EPERM) and \\\n",
        "            if False and \\\n",
        ("tests/cli/test_node_config.py::"
         "test_a_listen_address_this_user_may_not_bind_names_the_fix",),
        "a socket or port this user may not bind says so, not to check the webrtc token"),
    Mutation(
        "meta-field-types-unchecked", "lazily_queue/raft/meta.py",
        "        if key in meta and not valid(meta[key]):",
        "        if False:",
        ("tests/raft/test_journal.py::"
         "test_a_checksummed_metadata_copy_with_a_field_of_the_wrong_type_is_damaged",),
        "a metadata copy whose fields have the wrong types is damaged, not a traceback"),
    Mutation(
        "failed-replace-keeps-partial-file", "lazily_queue/raft/disk.py",
        "            with contextlib.suppress(OSError):  # a partial copy would hold the space\n"
        "                os.remove(tmp)\n",
        "            pass\n",
        ("tests/raft/test_snapshot_disk_full.py::"
         "test_a_snapshot_the_disk_refuses_leaves_no_partial_file_holding_the_space",),
        "a snapshot or metadata write the disk refuses leaves no partial file holding space"),
    Mutation(
        "missing-snapshot-started", "lazily_queue/datadir.py",
        "    if journal.first_index > 1 and not _exists(disk, snapshot_path):",
        "    if False:",
        ("tests/raft/test_missing_files.py",),
        "a node whose snapshot file is gone is refused at start (it waited forever), and "
        "rejoin recovers it"),
    Mutation(
        "missing-journal-started", "lazily_queue/datadir.py",
        "            and not _exists(disk, journal.path)):",
        "            and False):",
        ("tests/raft/test_missing_files.py",),
        "a node whose journal file is gone is refused at start (it started empty, losing "
        "acknowledged entries), and rejoin recovers it"),
    Mutation(
        "snapshot-refusal-flood", "lazily_queue/raft/snapshot.py",
        'logging.getLogger("pysyncobj.syncobj").addFilter(_not_the_library_report)',
        'logging.getLogger("pysyncobj.syncobj")',
        ("tests/raft/test_snapshot_disk_full.py::"
         "test_a_node_whose_snapshots_are_refused_logs_it_once",),
        "a disk refusing snapshots is logged once, not one library warning per step"),
    Mutation(
        "snapshot-without-state", "lazily_queue/raft/snapshot_format.py",
        '    if "state" not in doc:\n        raise SnapshotError("snapshot holds no state")',
        '    if False:\n        raise SnapshotError("snapshot holds no state")',
        ("tests/raft/test_snapshot_encoding.py::"
         "test_a_checksummed_snapshot_without_its_state_is_refused_in_one_line",),
        "a checksummed snapshot without its state is damaged data, not a KeyError traceback"),
    Mutation(
        "rejoin-floor-after-wipe", "lazily_queue/raft/rejoin.py",
        "    store.store(meta)  # durable first: a wipe cut short must still withhold the vote\n"
        "    disk.remove(log_path)\n    disk.remove(snapshot_path)\n",
        "    disk.remove(log_path)\n    disk.remove(snapshot_path)\n    store.store(meta)\n",
        ("tests/cli/test_rejoin_cli.py::test_a_wipe_cut_short_keeps_the_floor",),
        "the rejoin floor is durable before the journal is removed (a crash mid-wipe keeps it)"),
    Mutation(
        "older-snapshot-drops-journal", "lazily_queue/raft/rejoin.py",
        '    if len(journal) and journal.first_index > doc["prev"][1]:',
        "    if False:",
        ("tests/raft/test_missing_files.py::"
         "test_an_older_snapshot_than_the_journal_continues_is_refused",),
        "a snapshot older than the journal continues is refused, not the journal dropped"),
    Mutation(
        "failed-start-keeps-directory", "lazily_queue/node.py",
        "        except BaseException:  # an address in use: nothing stays running or locked\n",
        "        except ZeroDivisionError:\n",
        ("tests/raft/test_data_dir_lock.py::"
         "test_a_node_whose_address_is_taken_leaves_its_directory_free",),
        "a node whose start fails at its address leaves nothing running or locked"),
    Mutation(
        "read-waits-on-fifo", "lazily_queue/raft/disk.py",
        "        if not stat.S_ISREG(mode):\n            os.close(fd)\n",
        "        if False:\n            os.close(fd)\n",
        ("tests/raft/test_disk_errors.py::"
         "test_a_file_that_is_not_a_regular_file_is_refused_not_waited_on",),
        "a FIFO or device in place of a data file is refused, not waited on or read as empty"),
    Mutation(
        "redis-dead-letter-grows-first", "lazily_queue/brokers/redis_scripts.py",
        "  redis.call('XACK', stream, group, id)\n  redis.call('XDEL', stream, id)\n"
        "  redis.call('XADD', dead, '*', 'i', id, 'v', v, 'a', attempts, 'r', reason)\n",
        "  redis.call('XADD', dead, '*', 'i', id, 'v', v, 'a', attempts, 'r', reason)\n"
        "  redis.call('XACK', stream, group, id)\n  redis.call('XDEL', stream, id)\n",
        ("tests/brokers/test_memory.py::test_workers_drain_a_work_queue_when_redis_is_out_of_memory",),
        "past Redis maxmemory a last nack still moves the item to the dead letters"),
    Mutation(
        "redis-work-declare-writes", "lazily_queue/brokers/redis_scripts.py",
        "if has_group(KEYS[1], ARGV[1]) then return 1 end\n",
        "if false then return 1 end\n",
        ("tests/brokers/test_memory.py::test_workers_drain_a_work_queue_when_redis_is_out_of_memory",),
        "a worker started while Redis is past maxmemory declares an existing work queue"),
    Mutation(
        "redis-claim-writes-setting-first", "lazily_queue/brokers/redis_scripts.py",
        "  next_at = now + vt\n",
        "  next_at = now + vt\n  redis.call('HSET', KEYS[3], 'expiry_ms', next_at)\n",
        ("tests/brokers/test_memory.py::test_workers_drain_a_work_queue_when_redis_is_out_of_memory",),
        "past Redis maxmemory claims still lease (the consumers can drain)"),
    Mutation(
        "redis-topic-declare-writes", "lazily_queue/brokers/redis_topic_scripts.py",
        "  or whole_topic(true)\nif bad then return bad end\n",
        "  or whole_topic(true)\nif bad then return bad end\nredis.call('HSET', KEYS[3], 'end', "
        "redis.call('HGET', KEYS[3], 'end') or 0)\n",
        ("tests/brokers/test_memory.py::test_a_topic_and_a_queue_drain_when_redis_is_out_of_memory",),
        "a subscriber started while Redis is past maxmemory declares an existing topic"),
    Mutation(
        "redis-oom-untyped", "lazily_queue/brokers/redis_backend.py",
        "        except rexc.OutOfMemoryError as exc:\n",
        "        except rexc.DataError as exc:\n",
        ("tests/brokers/test_memory.py::test_a_push_past_maxmemory_is_a_typed_error_naming_the_fix",),
        "a push past Redis maxmemory raises BrokerOutOfMemory naming the fix"),
    Mutation(
        "broker-dead-letter-fields-trusted", "lazily_queue/brokers/mirrors.py",
        "                      whole(attempts, 1) or 1, DeadLetterReason(known))",
        "                      int(attempts), DeadLetterReason(known))",
        ("tests/brokers/test_foreign_data.py::test_dead_letters_another_program_wrote_are_listed_not_fatal",),
        "a dead letter another program wrote never stops a broker work queue's refreshes"),
    Mutation(
        "redis-dead-letter-item-trusted", "lazily_queue/brokers/redis_work.py",
        '        try:\n            item: int | None = item_id(data.get("i", b""))\n'
        "        except ValueError:\n            item = None\n",
        '        item: int | None = item_id(data.get("i", b""))\n',
        ("tests/brokers/test_foreign_data.py::test_dead_letters_another_program_wrote_are_listed_not_fatal",),
        "a Redis dead letter without our item id is listed under its own entry id"),
    Mutation(
        "redis-topic-record-trusted", "lazily_queue/brokers/redis_topic.py",
        "            if record is not None:  # else",
        "            if True:  # else",
        ("tests/brokers/test_foreign_data.py::test_a_subscription_record_another_program_wrote_is_skipped",),
        "a subscription field another program wrote never stops a Redis topic's refreshes"),
    Mutation(
        "redis-topic-gc-record-trusted", "lazily_queue/brokers/redis_topic_scripts.py",
        "  if rec and rec[3] < frontier then",
        "  if rec[3] < frontier then",
        ("tests/brokers/test_foreign_data.py::test_a_subscription_record_another_program_wrote_is_skipped",),
        "a Redis topic's gc skips subscription fields another program wrote"),
    Mutation(
        "broker-refusal-only-logged", "lazily_queue/brokers/mirror.py",
        "                self._refused = exc\n                self._report_all()\n",
        "                pass\n",
        ("tests/brokers/test_consumer_errors.py::test_a_claim_on_an_incompatible_work_queue_raises_it",),
        "a claim waiting on a broker object it cannot use raises the typed error, never hangs"),
    Mutation(
        "nats-no-jetstream-unnamed", "lazily_queue/brokers/nats_backend.py",
        "            if isinstance(exc, jserr.ServiceUnavailableError) and exc.err_code in (\n",
        "            if False and exc.err_code in (\n",
        ("tests/brokers/test_no_jetstream.py",),
        "a nats-server without JetStream is BrokerUnavailable naming -js, not a bare 503"),
    Mutation(
        "nats-storage-full-unnamed", "lazily_queue/brokers/nats_backend.py",
        "            if exc.err_code in INSUFFICIENT_RESOURCES:\n",
        "            if False:\n",
        ("tests/brokers/test_memory.py::test_a_push_to_a_full_jetstream_names_the_fix_and_workers_drain_it",),
        "a push to a JetStream out of storage is BrokerOutOfMemory naming the limit to raise"),
    Mutation(
        "nats-any-503-is-no-jetstream", "lazily_queue/brokers/nats_backend.py",
        "            if isinstance(exc, jserr.ServiceUnavailableError) and exc.err_code in (\n"
        "                    None, JETSTREAM_UNAVAILABLE):\n",
        "            if isinstance(exc, jserr.ServiceUnavailableError):\n",
        ("tests/brokers/test_no_jetstream.py::test_other_refusals_with_a_503_are_not_reported_as_no_jetstream",),
        "only a 503 without an error code (or 10008) is reported as JetStream unavailable"),
    Mutation(
        "nats-redrive-reads-all", "lazily_queue/brokers/nats_dead_letters.py",
        "            page = await b.messages(dead_stream, start, REDRIVE_PAGE)\n",
        "            page = await b.messages(dead_stream, start, info.state.messages)\n",
        ("tests/brokers/test_redrive_pages.py::test_a_nats_redrive_reads_the_dead_letters_a_page_at_a_time",),
        "a NATS redrive holds at most a page of dead letters in the client"),
    Mutation(
        "redis-redrive-one-script", "lazily_queue/brokers/redis_work.py",
        "            after = text_of(last)\n",
        "            after = ''\n",
        ("tests/brokers/test_redrive_pages.py::test_a_redis_redrive_moves_the_dead_letters_a_page_per_script",),
        "a Redis redrive moves every dead letter, a page per script call"),
    Mutation(
        "nats-tls-not-required", "lazily_queue/brokers/nats_backend.py",
        "            await require_tls(url, address)\n",
        "            pass\n",
        ("tests/brokers/test_tls_required.py",),
        "nats+tls:// never sends credentials to a server that does not offer TLS"),
    Mutation(
        "broker-port-unchecked", "lazily_queue/client/brokers.py",
        "        _ = parts.port  # raises ValueError when it is not a number\n",
        "        _ = 0\n",
        ("tests/brokers/test_bad_addresses.py::test_a_malformed_address_is_unsupported",),
        "a broker address whose port is not a number is UnsupportedAddress, no password shown"),
    Mutation(
        "redis-other-protocol-raw", "lazily_queue/brokers/redis_backend.py",
        "        except rexc.InvalidResponse:\n",
        "        except ZeroDivisionError:\n",
        ("tests/brokers/test_bad_addresses.py::test_a_redis_address_at_a_nats_server_is_named",),
        "a redis:// address that reaches another server says it is not a Redis server"),
    Mutation(
        "redis-query-option-raw", "lazily_queue/brokers/redis_backend.py",
        "        except TypeError as exc:  # a query option",
        "        except ZeroDivisionError as exc:  # a query option",
        ("tests/brokers/test_bad_addresses.py::test_a_malformed_address_is_unsupported",),
        "a redis:// address with an option redis-py does not take is UnsupportedAddress"),
    Mutation(
        "redis-lost-group-fatal", "lazily_queue/brokers/redis_work.py",
        '            if "NOGROUP" not in str(exc):\n',
        "            if True:\n",
        ("tests/brokers/test_lost_objects.py",),
        "a Redis work queue whose consumer group was lost declares itself again"),
    Mutation(
        "redis-cancelled-pop-loses", "lazily_queue/brokers/redis_queue.py",
        "            self._putting_back.add(call)\n"
        "            call.add_done_callback(self._put_back)\n",
        "            pass\n",
        ("tests/brokers/test_cancelled_pop.py::test_a_cancelled_redis_pop_puts_its_element_back_at_the_head",),
        "a Redis pop cancelled in flight puts what it took back at the head"),
    Mutation(
        "redis-pop-overtakes-put-back", "lazily_queue/brokers/redis_queue.py",
        "        while self._putting_back:  # a cancelled pop",
        "        while False:  # a cancelled pop",
        ("tests/brokers/test_cancelled_pop.py::test_the_next_pop_after_a_cancelled_one_gets_the_head",),
        "the pop after a cancelled one waits for its put-back (FIFO kept)"),
    Mutation(
        "cell-name-unchecked", "lazily_queue/node_cells.py",
        "        check_name(name, what or f\"{kind.replace('_', ' ')} name\")\n",
        "        pass\n",
        (f"{_NAMES}::test_a_node_refuses_an_overlong_name_before_proposing",
         f"{_NAMES}::test_a_client_refuses_an_overlong_name_before_sending"),
        "a node's and a client's cells refuse a name over 1024 characters before sending"),
    Mutation(
        "member-takes-long-client-name", "lazily_queue/client/op_admission.py",
        "    problem = (shape_problem(code, args) or op_name_problem(code, args)\n",
        "    problem = (shape_problem(code, args)\n",
        (f"{_NAMES}::test_a_member_refuses_a_clients_overlong_name",),
        "a member refuses a client's op naming an object over 1024 characters"),
    Mutation(
        "member-ignores-object-cap", "lazily_queue/names.py",
        "        problem = op_room_problem(view, code, args, max_objects)\n",
        "        problem = None\n",
        (f"{_NAMES}::test_members_cap_the_objects_a_cluster_holds",),
        "a member refuses a client's op creating an object beyond max_objects"),
    Mutation(
        "node-ignores-object-cap", "lazily_queue/node_cells.py",
        "        if self.max_objects is not None:\n            check_room(",
        "        if False:\n            check_room(",
        (f"{_NAMES}::test_members_cap_the_objects_a_cluster_holds",),
        "a node refuses opening a new cell beyond max_objects"),
    Mutation(
        "object-cap-untyped-on-client", "lazily_queue/client/protocol.py",
        "    if isinstance(exc, TooManyObjects):\n",
        "    if False:\n",
        (f"{_NAMES}::test_members_cap_the_objects_a_cluster_holds",),
        "a client sees the member's object-cap refusal as TooManyObjects with its limit"),
    Mutation(
        "max-objects-key-ignored", "lazily_queue/config.py",
        "            \"max_objects\": self.max_objects,\n",
        "",
        (f"{_NAMES}::test_the_object_cap_is_a_node_option_and_a_config_key",),
        "`max_objects` in a node's TOML reaches the node"),
    Mutation(
        "admin-name-unbounded", "lazily_queue/admin.py",
        "    problem = name_problem(name, what)\n",
        "    problem = None\n",
        (f"{_NAMES}::test_the_admin_api_uses_the_same_name_rule",),
        "the admin API refuses a name over 1024 characters, as the cells do"),
    Mutation(
        "member-takes-long-subscriber", "lazily_queue/client/op_admission.py",
        "               or op_member_problem(code, args))\n",
        "               or None)\n",
        (f"{_SUBS}::test_a_member_refuses_a_clients_overlong_subscriber_or_worker",),
        "a member refuses a client's subscribe or claim naming a subscriber or worker over "
        "1024 characters"),
    Mutation(
        "subscriber-name-unchecked", "lazily_queue/storage/raft_topic.py",
        "        check_member(subscriber, \"subscriber name\")\n",
        "        pass\n",
        (f"{_SUBS}::test_a_node_refuses_an_overlong_subscriber_or_worker_before_proposing",
         f"{_SUBS}::test_a_client_refuses_an_overlong_subscriber_or_worker_before_sending"),
        "a node's and a client's topics refuse a subscriber name over 1024 characters"),
    Mutation(
        "claim-worker-unchecked", "lazily_queue/storage/raft_work_queue.py",
        '        check_member(worker, "worker name")\n'
        "        args = [self.name, check_worker(worker), given_now(now)]\n",
        "        args = [self.name, check_worker(worker), given_now(now)]\n",
        (f"{_SUBS}::test_a_node_refuses_an_overlong_subscriber_or_worker_before_proposing",
         f"{_SUBS}::test_a_client_refuses_an_overlong_subscriber_or_worker_before_sending"),
        "a node's and a client's work queues refuse a claim by a worker over 1024 characters"),
    Mutation(
        "claim-many-worker-unchecked", "lazily_queue/storage/raft_work_queue.py",
        '        check_member(worker, "worker name")\n'
        "        args = [self.name, check_worker(worker), check_count(n), given_now(now)]\n",
        "        args = [self.name, check_worker(worker), check_count(n), given_now(now)]\n",
        (f"{_SUBS}::test_a_node_refuses_an_overlong_subscriber_or_worker_before_proposing",),
        "a node's work queue refuses a batch claim by a worker over 1024 characters"),
    Mutation(
        "member-ignores-subscriber-cap", "lazily_queue/names.py",
        "        problem = op_subscriber_room_problem(view, code, args, max_subscribers)\n",
        "        problem = None\n",
        (f"{_SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a member refuses a client's subscribe beyond the topic's max_subscribers"),
    Mutation(
        "node-ignores-subscriber-cap", "lazily_queue/storage/raft_topic.py",
        "        if self.max_subscribers is not None and isinstance(subscriber, str):\n",
        "        if False:\n",
        (f"{_SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a node refuses its own subscribe beyond the topic's max_subscribers"),
    Mutation(
        "node-topics-uncapped", "lazily_queue/node_cells.py",
        "        storage.max_subscribers = self.max_subscribers\n",
        "",
        (f"{_SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a node's topic cells carry the node's max_subscribers"),
    Mutation(
        "existing-subscriber-capped", "lazily_queue/names.py",
        "    if core is None or core.cursor(subscriber) is not None:\n",
        "    if core is None:\n",
        (f"{_SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a subscriber that exists subscribes (reconnects) at the cap"),
    Mutation(
        "subscriber-cap-untyped-on-client", "lazily_queue/client/protocol.py",
        "    if isinstance(exc, TooManySubscribers):\n",
        "    if False:\n",
        (f"{_SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a client sees the member's subscriber-cap refusal as TooManySubscribers with its "
        "limit"),
    Mutation(
        "max-subscribers-key-ignored", "lazily_queue/config.py",
        "            \"max_subscribers\": self.max_subscribers,\n",
        "",
        (f"{_SUBS}::test_the_subscriber_cap_is_a_node_option_and_a_config_key",),
        "`max_subscribers` in a node's TOML reaches the node"),
    Mutation(
        "tally-bucket-off-by-one", "lazily_queue/metrics_tallies.py",
        "        self.counts[bisect_left(self.bounds, value)] += 1",
        "        self.counts[bisect_left(self.bounds, value) + (value in self.bounds)] += 1",
        ("tests/integrations/test_metrics_tallies.py",),
        "an observation equal to a bucket bound counts in that bucket (le), as Prometheus says"),
    Mutation(
        "snapshot-weight-walks-all", "lazily_queue/raft/snapshot_pieces.py",
        "                total += len(item)\n                if total > cap:\n"
        "                    return total\n",
        "                total += len(item)\n",
        ("tests/raft/test_snapshot_encoding.py::test_weighing_a_large_container_stops_at_the_cap",),
        "weighing a large container stops at the cap instead of walking every item"),
    Mutation(
        "snapshot-worker-keeps-lock", "lazily_queue/raft/snapshot_writer.py",
        "data(LockYield() if worker else None)", "data(None)",
        ("tests/raft/test_snapshot_encoding.py::"
         "test_the_state_is_encoded_on_the_worker_as_it_was_when_taken",),
        "a snapshot encoded on the worker thread hands the interpreter lock back to the loop"),
    Mutation(
        "snapshot-pieces-no-pause", "lazily_queue/raft/snapshot_pieces.py",
        "            if pause is not None:\n                pause()\n", "",
        ("tests/raft/test_snapshot_encoding.py::"
         "test_the_encoder_pauses_between_runs_and_gives_the_same_bytes",),
        "the encoder pauses between runs of items"),
    Mutation(
        "lock-yield-never-sleeps", "lazily_queue/raft/snapshot_writer.py",
        "        if self._clock() - self._mark >= self.work:",
        "        if self._clock() - self._mark >= self.work * 1000:",
        ("tests/raft/test_snapshot_encoding.py::"
         "test_a_lock_yield_sleeps_once_its_work_slice_has_passed",),
        "a lock yield sleeps once its work slice has passed"),
    Mutation(
        "work-capture-not-deferred", "lazily_queue/replicated/work_queues.py",
        "    (Section(\"work_queues\", _capture, _restore, _capture_deferred),",
        "    (Section(\"work_queues\", _capture, _restore),",
        ("tests/replicated/test_snapshot_capture.py",),
        "a snapshot file's capture makes work-queue records on the writer's thread, not the loop"),
    Mutation(
        "later-items-not-converted", "lazily_queue/raft/snapshot_pieces.py",
        "        if convert is not None:\n            item = convert(item)\n", "",
        ("tests/replicated/test_snapshot_capture.py",),
        "deferred records are converted as they are encoded (same bytes as the plain capture)"),
    Mutation(
        "session-results-not-copied", "lazily_queue/replicated/state_snapshot.py",
        "done(list(s.done.items()))", "done(s.done.items())",
        ("tests/replicated/test_snapshot_capture.py",),
        "a deferred capture copies each session's results when captured"),
    Mutation(
        "subscriber-delete-keeps-record", "lazily_queue/core/topic.py",
        "        record = self._subs.pop(subscriber, None)\n",
        "        record = self._subs.get(subscriber)\n",
        (f"{_SUBDEL_OPS}::test_deleting_a_durable_subscriber_releases_retention_and_its_slot",
         f"{_SUBDEL_CELL}::test_a_deleted_subscriber_frees_its_slot_under_max_subscribers"),
        "a deleted subscriber no longer holds retention nor a max_subscribers slot"),
    Mutation(
        "subscriber-delete-stays-connected", "lazily_queue/core/topic.py",
        "        if record.connected:\n            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, frozenset((subscriber,)))",
        "        return TopicTransition(True, frozenset((subscriber,)))",
        (f"{_SUBDEL_OPS}::test_deleting_a_connected_or_ephemeral_subscriber_makes_its_reads"
         "_unavailable",),
        "a deleted connected subscriber leaves the connected set (publishes stop naming it)"),
    Mutation(
        "subscriber-delete-tells-nobody", "lazily_queue/core/topic.py",
        "            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, frozenset((subscriber,)))",
        "            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, NOBODY)",
        (f"{_SUBDEL_CELL}::test_deleting_an_abandoned_durable_subscriber_releases_what_it_held",),
        "deleting a subscriber invalidates its readers (they read None), locally and replicated"),
    Mutation(
        "subscriber-delete-keeps-gap", "lazily_queue/core/limited_topic.py",
        "        transition = super().delete_subscriber(subscriber)\n"
        "        self.gaps.pop(subscriber, None)\n",
        "        transition = super().delete_subscriber(subscriber)\n",
        (f"{_SUBDEL_OPS}::test_a_limited_topic_forgets_the_deleted_subscribers_gap",),
        "a subscriber subscribing again after its deletion inherits no retention gap"),
    Mutation(
        "subscriber-delete-without-consume", "lazily_queue/client/access.py",
        "        elif code in CONSUME:\n            needed = (\"consume\",)",
        "        elif code in CONSUME:\n            needed = (\"consume\",) if code != "
        "ops.TOPIC_DELETE_SUBSCRIBER else (\"produce\", \"consume\")",
        ("tests/client/test_client_access.py::test_deleting_a_subscriber_needs_consume_on_the"
         "_topic",),
        "a client deletes a topic's subscriber only with consume (or admin) on the topic"),
    Mutation(
        "subscriber-delete-name-unchecked", "lazily_queue/cells/topic.py",
        "        check_member(check_subscriber(subscriber), \"subscriber name\")\n",
        "        check_subscriber(subscriber)\n",
        (f"{_SUBS}::test_a_client_deletes_a_durable_subscriber_freeing_its_slot",
         f"{_SUBDEL_CELL}::test_deleting_checks_the_name_rule"),
        "a client refuses an overlong subscriber name to delete before sending (InvalidName)"),
    Mutation(
        "subscriber-delete-name-unserved", "lazily_queue/names.py",
        "    if code in SUBSCRIBES or code == ops.TOPIC_DELETE_SUBSCRIBER:",
        "    if code in SUBSCRIBES:",
        (f"{_SUBS}::test_a_client_deletes_a_durable_subscriber_freeing_its_slot",),
        "a member refuses a client's deletion naming an overlong subscriber (RequestRefused)"),
    Mutation(
        "subscriber-delete-feature-unrequired", "lazily_queue/raft/features.py",
        "CLIENT_SESSIONS_FEATURE, SUBSCRIBER_DELETE_FEATURE,\n",
        "CLIENT_SESSIONS_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member without TOPIC_DELETE_SUBSCRIBER is refused at the handshake (no divergence)"),
    Mutation(
        "member-forget-ignores-address", "lazily_queue/replicated/cluster.py",
        "    if len(args) > 1 and sm.addresses.get(node) != args[1]:\n        return None\n", "",
        ("tests/replicated/test_state_machine.py::"
         "test_forgetting_an_address_drops_only_the_address_it_names",),
        "forgetting a removed member's address leaves an address a later add replicated"),
    Mutation(
        "member-forget-feature-unrequired", "lazily_queue/raft/features.py",
        "SUBSCRIBER_DELETE_FEATURE,\n                               MEMBER_FORGET_FEATURE, ",
        "SUBSCRIBER_DELETE_FEATURE,\n                               ",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member that forgets addresses regardless is refused at the handshake"),
    Mutation(
        "client-ephemeral-feature-unrequired", "lazily_queue/raft/features.py",
        "MEMBER_FORGET_FEATURE, CLIENT_EPHEMERAL_FEATURE,\n",
        "MEMBER_FORGET_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member without CLIENT_ALIVE and EPHEMERAL_REAP is refused at the handshake"),
    Mutation(
        "client-ephemeral-never-reaped", "lazily_queue/replicated/ephemeral_owners.py",
        "        removed += drop_session(sm, sid)\n",
        "        removed += 0\n",
        ("tests/replicated/test_ephemeral_owners.py::"
         "test_a_reap_removes_only_the_subscriptions_of_stale_owners",),
        "the ephemeral subscriptions of a crashed client stay for good"),
    Mutation(
        "session-kept-bytes-feature-unrequired", "lazily_queue/raft/features.py",
        "SESSION_KEPT_BYTES_FEATURE, SESSION_END_FEATURE,\n",
        "SESSION_END_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member keeping session results past their bytes is refused at the handshake"),
    Mutation(
        "session-end-feature-unrequired", "lazily_queue/raft/features.py",
        "SESSION_KEPT_BYTES_FEATURE, SESSION_END_FEATURE,\n",
        "SESSION_KEPT_BYTES_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member without SESSION_END is refused at the handshake (no divergence)"),
    Mutation(
        "member-keeps-client-results-twice", "lazily_queue/replicated/state_machine.py",
        "            if code in _WRAPPERS:\n", "            if False:\n",
        ("tests/replicated/test_member_kept_results.py::"
         "test_a_members_retried_client_ops_are_answered_by_the_clients_sessions",),
        "a member's session keeps a second copy of its clients' results, within its bound"),
    Mutation(
        "ephemeral-owner-kept-past-a-members-subscribe",
        "lazily_queue/replicated/ephemeral_owners.py",
        "    if sid is None:\n        owners.forget(key)\n",
        "    if sid is None:\n        return\n",
        ("tests/replicated/test_ephemeral_owners.py::"
         "test_a_member_subscribing_a_clients_ephemeral_id_clears_its_owner",),
        "a member's subscription taken from a client is reaped with the client"),
    Mutation(
        "ephemeral-reap-in-table-order", "lazily_queue/replicated/ephemeral_owners.py",
        "    for sid in sorted(sm.ephemeral_owners.stale(",
        "    for sid in list(sm.ephemeral_owners.stale(",
        ("tests/replicated/test_ephemeral_owners.py::"
         "test_a_reap_acts_in_session_order_on_a_restored_replica_as_on_a_live_one",),
        "a restored replica reaps in another order than a live one and diverges"),
    Mutation(
        "session-end-opens-a-new-window", "lazily_queue/replicated/state_machine.py",
        "                    if sid in self.ended:",
        "                    if False:",
        ("tests/replicated/test_session_end.py::"
         "test_an_op_under_an_ended_session_is_refused_and_not_applied_again",),
        "a retried op under an ended session is applied again in a fresh session"),
    Mutation(
        "group-run-snapshot-feature-unrequired", "lazily_queue/raft/features.py",
        "GROUP_RUN_SNAPSHOT_FEATURE, SESSION_REGISTER_FEATURE,",
        "SESSION_REGISTER_FEATURE,",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member that cannot install a group's run in a snapshot is refused at the handshake"),
    Mutation(
        "session-register-feature-unrequired", "lazily_queue/raft/features.py",
        "GROUP_RUN_SNAPSHOT_FEATURE, SESSION_REGISTER_FEATURE,\n",
        "GROUP_RUN_SNAPSHOT_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member that opens a forgotten registered session at its op is refused at the "
        "handshake"),
    Mutation(
        "forgotten-registered-session-opened-again", "lazily_queue/replicated/state_machine.py",
        "                    if session_register.registered(sid):  # forgotten: never opened "
        "by an op",
        "                    if False:",
        ("tests/replicated/test_session_register.py::"
         "test_a_retry_after_its_session_expired_is_refused_and_not_applied_again",),
        "a retry under a forgotten registered session is applied again in a fresh session"),
    Mutation(
        "receipts-bounded-per-queue-only", "lazily_queue/replicated/receipts.py",
        "        while self.total > self.limit:\n            self._drop_oldest()\n        if",
        "        if",
        ("tests/replicated/test_receipts_total.py::"
         "test_the_receipts_of_all_queues_and_groups_stay_within_the_bound_newest_kept",),
        "receipts of many busy queues push a snapshot past its limit"),
    Mutation(
        "receipts-dropped-by-queue-in-reverse", "lazily_queue/replicated/receipts.py",
        "return (table.oldest()[1], table.rank, table)",
        "return (table.oldest()[1], -table.rank, table)",
        ("tests/replicated/test_receipts_total.py::"
         "test_an_older_snapshot_over_the_bound_keeps_the_newest_by_stamp_then_queue",),
        "receipts settled at one stamp are dropped in another order than the state's"),
    Mutation(
        "receipts-total-feature-unrequired", "lazily_queue/raft/features.py",
        "SESSION_REGISTER_FEATURE,\n                               RECEIPTS_TOTAL_FEATURE})",
        "SESSION_REGISTER_FEATURE})",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member keeping receipts past the bound of all queues is refused at the handshake"),
    Mutation(
        "group-snapshot-lists-run-items", "lazily_queue/replicated/work_queues.py",
        "s.core.snapshot(records, run=True,",
        "s.core.snapshot(records, run=False,",
        ("tests/replicated/test_group_snapshots.py",),
        "a snapshot lists a group's retained run item by item"),
    Mutation(
        "group-snapshot-lists-stamps", "lazily_queue/replicated/work_queues.py",
        "        found[name] = s.core.stamps(None if topic is None else topic.stamp_index())",
        "        found[name] = s.core.stamps(None)",
        ("tests/replicated/test_group_snapshots.py",),
        "a snapshot leaves a group's stamps to its topic's"),
    Mutation(
        "group-snapshot-drops-retained-deadlines", "lazily_queue/core/expiry.py",
        "        if self.retained is not None:\n            doc.append(self.retained.to_list())",
        "        if False:\n            doc.append(self.retained.to_list())",
        ("tests/replicated/test_group_snapshots.py",),
        "a snapshot keeps a group's retained deadlines as their rules"),
    Mutation(
        "admin-subscriber-type-unchecked", "lazily_queue/admin.py",
        "    if not isinstance(subscriber, str):\n",
        "    if False:\n",
        (f"{_SUBDEL_ADMIN}::test_admin_delete_subscriber_frees_a_slot",),
        "admin.delete_subscriber refuses a subscriber that is not a string with bad_request"),
    Mutation(
        "admin-subscriber-missing-not-404", "lazily_queue/integrations/aiohttp_admin.py",
        "    if not await admin.delete_subscriber(request.app[NODE], name, subscriber):",
        "    if not await admin.delete_subscriber(request.app[NODE], name, subscriber) and 0:",
        (f"{_SUBDEL_ADMIN}::test_subscriber_route",),
        "deleting a subscriber the topic does not have answers 404 not_found, not success"),
    Mutation(
        "admin-subscriber-of-any-kind", "lazily_queue/integrations/aiohttp_admin.py",
        '    if kind != "topic":\n',
        "    if False:\n",
        (f"{_SUBDEL_ADMIN}::test_subscriber_route",),
        "the subscriber route named with a queue's kind is refused, not run on a topic"),
    Mutation(
        "admin-subscriber-query-ignored", "lazily_queue/integrations/aiohttp_admin.py",
        '    subscriber = _segment(request, "subscriber")',
        '    subscriber = request.match_info["subscriber"]',
        (f"{_SUBDEL_ADMIN}::test_subscriber_route",
         f"{_SUBDEL_ADMIN}::test_cli_deletes_subscribers_named_like_path_segments"),
        "a subscriber id given as ?subscriber= (., .., the empty id) is the one deleted"),
    Mutation(
        "cli-empty-subscriber-in-path", "lazily_queue/cli/queue.py",
        "    if args.subscriber:\n",
        "    if True:\n",
        (f"{_SUBDEL_ADMIN}::test_cli_deletes_subscribers_named_like_path_segments",),
        "queue delete-subscriber deletes the empty subscriber id (it cannot be a path segment)"),
    Mutation(
        "cli-empty-topic-sent", "lazily_queue/cli/queue.py",
        "    if problem is not None:\n        raise CliError(problem, 2)\n    path =",
        "    if False:\n        raise CliError(problem, 2)\n    path =",
        (f"{_SUBDEL_ADMIN}::test_cli_deletes_subscribers_named_like_path_segments",),
        "queue delete-subscriber with an empty topic name is a usage error naming the cause"),
    Mutation(
        "too-many-subscribers-no-operator-hint", "lazily_queue/names.py",
        "`lazily-queue queue delete-subscriber TOPIC ID` or the status page), or raise ",
        "the status page), or raise ",
        (f"{_SUBDEL_ADMIN}::test_admin_delete_subscriber_frees_a_slot",),
        "TooManySubscribers tells an operator the command that frees a slot"),
    Mutation(
        "page-subscriber-delete-unconfirmed", "lazily_queue/web/status.html",
        '<button type="button" id="subscriber-delete" data-confirm="1">',
        '<button type="button" id="subscriber-delete">',
        ("tests/integrations/test_status_page_names.py::"
         "test_page_deletes_a_subscriber_after_confirming",),
        "the page deletes a subscriber only after a confirming second click"),
    Mutation(
        "subscriber-delete-silent", "lazily_queue/core/topic.py",
        "        if record.connected:\n            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, frozenset((subscriber,)))\n",
        "        if record.connected:\n            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, NOBODY)\n",
        ("tests/conformance/test_replay.py::test_project_fixture["
         "project/collections/topiccell_delete_subscriber_releases_retention[sync]]",),
        "deleting a subscription invalidates its reader, connected or not"),
    Mutation(
        "remove-self-retried-until-deadline", "lazily_queue/membership.py",
        "    if member == node.node_id:\n        raise InvalidConfiguration(_self_removal(node))\n",
        "    if False:\n        raise InvalidConfiguration(_self_removal(node))\n",
        ("tests/testing/test_remove_member_self.py",),
        "a node asked to remove itself says so at once, naming what to do, nothing changed"),
    Mutation(
        "admin-leader-removing-itself-no-hand-over", "lazily_queue/admin.py",
        "        await _hand_over_to_be_removed(node)\n",
        "        pass\n",
        ("tests/integrations/test_admin_api.py::"
         "test_the_leader_asked_to_remove_itself_hands_over_and_names_the_new_leader",),
        "the leader asked to remove itself hands leadership over and names the new leader"),
    Mutation(
        "cli-follows-one-not-leader-answer", "lazily_queue/cli/admin_client.py",
        "                *, follow_leader: int = 2) -> Any:",
        "                *, follow_leader: int = 1) -> Any:",
        ("tests/cli/test_admin_cli.py::test_admin_commands_against_node_processes",),
        "members remove <leader> asked of a follower reaches the member that removes it"),
    Mutation(
        "subscriber-listing-offset-ignored", "lazily_queue/subscriber_listing.py",
        "    shown = ids[offset:offset + PAGE_SIZE]\n",
        "    shown = ids[:PAGE_SIZE]\n",
        (f"{_LISTING}::test_every_subscriber_is_reached_by_offset_and_prefix",),
        "/subscribers.json reaches every subscriber of a topic, a page from the offset"),
    Mutation(
        "subscriber-listing-offset-unchecked", "lazily_queue/subscriber_listing.py",
        "    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_OFFSET))\n",
        "    if not (True or len(raw) <= len(str(MAX_OFFSET))\n",
        (f"{_LISTING}::test_a_malformed_listing_query_is_a_400_naming_the_cause",),
        "a /subscribers.json offset that is not a whole number of 0..10^9 is a 400, no traceback"),
    Mutation(
        "page-subscribers-next-stuck", "lazily_queue/web/status.html",
        "browseSubscribers(listed.offset + listed.limit));",
        "browseSubscribers(listed.offset));",
        (_PAGE_SUBS,),
        "the page pages through every subscriber of a topic past the ones its status lists"),
    Mutation(
        "page-listed-subscriber-delete-unconfirmed", "lazily_queue/web/status.html",
        'button.textContent = "delete subscriber"; button.dataset.confirm = "1";',
        'button.textContent = "delete subscriber";',
        (_PAGE_SUBS,),
        "the page deletes a found subscriber only after a confirming second click"),
    Mutation(
        "work-push-many-one-by-one", "lazily_queue/cells/work_pushes.py",
        '        together = getattr(self._storage, "push_many", None)\n',
        "        together = None\n",
        ("tests/cells/test_many_pushes.py::test_a_member_proposes_them_together_in_order",
         "tests/cells/test_many_pushes.py::test_a_client_proposes_them_together_in_order"),
        "a work queue's push_many over a member or a client is proposed together"),
    Mutation(
        "topic-publish-many-one-by-one", "lazily_queue/cells/topic_publish.py",
        '        together = getattr(self._storage, "publish_many", None)\n',
        "        together = None\n",
        ("tests/cells/test_many_pushes.py::test_a_member_proposes_them_together_in_order",),
        "a topic's publish_many over a member is proposed together, not one by one"),
    Mutation(
        "survivors-not-frozen", "lazily_queue/service.py",
        "                self._thaw = freeze_survivors(may_thaw=guard.may_thaw, due=guard.due)\n",
        "                pass\n",
        ("tests/cli/test_node_allocator.py::"
         "test_a_node_process_spares_the_collector_what_it_held_when_started",),
        "a node process spares later full collections what survived an earlier one"),
    Mutation(
        "together-unbounded", "lazily_queue/storage/replicated_object.py",
        "        for start in range(0, len(ops), MANY_AT_ONCE):\n"
        "            end = start + MANY_AT_ONCE\n",
        "        for start in range(min(len(ops), 1)):\n"
        "            end = len(ops)\n",
        ("tests/cells/test_many_pushes.py::test_at_most_a_run_of_them_is_under_way_at_once",),
        "push_many and publish_many have at most MANY_AT_ONCE calls under way at once"),
    Mutation(
        "batch-encoded-twice", "lazily_queue/storage/replicated_object.py",
        "        encoded = [encode(code, op) for op in ops]\n",
        "        encoded = [encode(code, op) for op in ops]\n"
        "        encoded = [encode(code, op) for op in ops]\n",
        ("tests/raft/test_batch_proposals.py::test_a_member_encodes_each_value_of_a_batch_once",),
        "a member encodes each value of a push_many once"),
    Mutation(
        "batch-half-proposed", "lazily_queue/raft/calls.py",
        "            for proposal, fut in calls:\n"
        "                self._abandon(proposal, fut, None)\n"
        "            self._observe_call(code, started, None, exc)\n",
        "            self._observe_call(code, started, None, exc)\n",
        ("tests/raft/test_batch_proposals.py::"
         "test_a_batch_one_op_of_which_cannot_be_proposed_proposes_none",),
        "a batch whose op cannot be proposed leaves none of its ops proposed"),
    Mutation(
        "foreign-journal-torn", "lazily_queue/raft/records.py",
        "        plausible = index >= 1 and 1 <= term <= MAX_TERM\n",
        "        plausible = True\n",
        ("tests/raft/test_journal.py::"
         "test_a_journal_replaced_by_other_bytes_is_damaged_not_torn",),
        "a journal replaced by other bytes is damaged (the vote withheld), not a torn tail"),
    Mutation(
        "status-built-in-one-block", "lazily_queue/object_listing.py",
        "                    ranking.add(name, found)\n            await asyncio.sleep(0)\n",
        "                    ranking.add(name, found)\n",
        ("tests/integrations/test_monitor_documents.py::"
         "test_the_status_document_ranks_a_slice_of_objects_at_a_time",),
        "/status.json lists its objects a slice at a time, the loop running between slices"),
    Mutation(
        "metrics-collected-in-one-block", "lazily_queue/monitor_documents.py",
        "        families.append(family)\n        await asyncio.sleep(0)\n",
        "        families.append(family)\n",
        ("tests/integrations/test_monitor_documents.py::"
         "test_metrics_are_collected_a_family_at_a_time_and_formatted_off_the_loop",),
        "/metrics is collected a family at a time, the loop running between families"),
    Mutation(
        "metrics-formatted-on-the-loop", "lazily_queue/monitor_documents.py",
        "    return await asyncio.to_thread(generate_latest, _Families(families))",
        "    return generate_latest(_Families(families))",
        ("tests/integrations/test_monitor_documents.py::"
         "test_metrics_are_collected_a_family_at_a_time_and_formatted_off_the_loop",),
        "/metrics is formatted on a worker thread"),
    Mutation(
        "slow-document-never-reused", "lazily_queue/monitor_documents.py",
        "took * (1 / LOOP_SHARE - 1) if took >= SLOW else 0.0",
        "0.0",
        ("tests/integrations/test_monitor_documents.py::"
         "test_requests_during_a_build_share_it_and_a_slow_one_is_reused_for_a_while",),
        "a slow /metrics or /status.json is reused for a while, not built for every request"),
    Mutation(
        "serializer-skips-batches", "lazily_queue/storage/serializing.py",
        "        if name not in _BATCHES:\n",
        "        if True:\n",
        ("tests/cells/test_many_pushes.py::test_a_serializer_encodes_every_value_of_a_batch",),
        "a serializer encodes every value of a push_many or publish_many"),
    Mutation(
        "worker-fsync-after-tick", "lazily_queue/raft/driver.py",
        "        self._start_fsync()\n"
        "        if self.pipeline.stall is not None:\n"
        "            return\n"
        "        if self._half",
        "        if self._inline():\n"
        "            self._start_fsync()\n"
        "        if self.pipeline.stall is not None:\n"
        "            return\n"
        "        if self._half",
        ("tests/raft/test_fsync_handover.py::"
         "test_a_step_starts_its_worker_fsync_before_its_tick_applies",),
        "a step's worker fsync starts between its halves, not after the tick applied"),
    Mutation(
        "fsync-handover-skipped", "lazily_queue/raft/fsync.py",
        "        if self._taken.wait(HANDOVER):\n",
        "        if self._taken.is_set():\n",
        ("tests/raft/test_fsync_handover.py::"
         "test_the_worker_has_taken_its_fsync_when_start_returns",),
        "starting a worker fsync waits for the worker to take it"),
    Mutation(
        "prepared-fsync-target-ignored", "lazily_queue/raft/journal.py",
        "            generation, target = prepared or (self._generation, self._written_index)\n",
        "            generation, target = self._generation, self._written_index\n",
        ("tests/raft/test_fsync_handover.py::"
         "test_a_detached_fsync_covers_what_was_written_when_it_was_prepared",
         "tests/raft/test_fsync_handover.py::"
         "test_a_prepared_fsync_proves_nothing_once_the_log_was_cut"),
        "a detached fsync claims only what was written when it was prepared"),
    Mutation(
        "prepared-descriptor-unused", "lazily_queue/raft/disk.py",
        "        fd = self._prepared.pop(path, None)\n        if fd is None:\n",
        "        fd = None\n        if fd is None:\n",
        ("tests/raft/test_fsync_handover.py::"
         "test_the_prepared_descriptor_is_the_one_synced_then_closed",),
        "a detached sync uses the descriptor opened on the writing thread"),
    Mutation(
        "barrier-answer-unbounded", "lazily_queue/client/barrier.py",
        "                                                ask_ms / 1000 + BARRIER_GRACE)\n",
        "                                                None)\n",
        ("tests/client/test_review_requests.py::"
         "test_a_barrier_a_member_never_answers_ends_with_commit_timeout",),
        "a client's barrier ends by its timeout even when its member never answers"),
    Mutation(
        "link-ended-request-waits", "lazily_queue/client/link.py",
        "        if self.ended:\n",
        "        if False:\n",
        ("tests/client/test_client_connection.py::"
         "test_a_request_made_on_a_link_that_ended_is_answered_none",
         "tests/client/test_review_requests.py::"
         "test_a_barrier_its_member_refuses_for_now_is_made_again_on_the_next_link"),
        "a request made on a link whose run ended is answered None, not kept for ever"),
    Mutation(
        "link-ended-request-encodes", "lazily_queue/client/link.py",
        "        if not self.ended:\n            self._queue(P.encode([rid, *frame]))\n",
        "        if True:\n            self._queue(P.encode([rid, *frame]))\n",
        ("tests/client/test_client_connection.py::"
         "test_a_request_made_on_a_link_that_ended_is_answered_none",),
        "nothing is encoded for a link that can no longer send it"),
    Mutation(
        "client-op-shape-unchecked", "lazily_queue/client/op_admission.py",
        "    problem = (shape_problem(code, args) or op_name_problem(code, args)\n",
        "    problem = (None or op_name_problem(code, args)\n",
        ("tests/client/test_client_access.py::"
         "test_a_member_refuses_malformed_ops_before_they_reach_the_log",),
        "a client's op of the wrong shape is refused before it reaches the log"),
    Mutation(
        "replicated-now-unchecked", "lazily_queue/core/work_items.py",
        "    checked = check_now(now)\n",
        "    return now\n",
        ("tests/cells/test_work_scheduling_replicated.py::"
         "test_a_time_no_member_can_use_is_refused_at_the_call",),
        "a replicated work queue refuses a time it cannot use at the call"),
    Mutation(
        "replicated-subscriber-unchecked", "lazily_queue/storage/raft_topic.py",
        "        return [self.name, check_subscriber(subscriber), *rest]\n",
        "        return [self.name, subscriber, *rest]\n",
        ("tests/cells/test_bad_arguments.py::"
         "test_a_member_and_a_client_refuse_them_before_proposing",),
        "a replicated topic refuses a subscriber that is not a str before proposing"),
    Mutation(
        "delay-ms-overflows", "lazily_queue/core/push_options.py",
        "    return min(MAX_DELAY_MS, whole_ms(min(seconds, MAX_DELAY_MS / 1000)))\n",
        "    return min(MAX_DELAY_MS, whole_ms(seconds))\n",
        ("tests/cells/test_bad_arguments.py::"
         "test_a_member_and_a_client_refuse_them_before_proposing",
         "tests/core/test_fifo_delayed.py::"
         "test_a_delay_too_long_to_count_in_milliseconds_waits_as_long_as_any_can"),
        "a delay too long to count in ms waits as long as any can"),
    Mutation(
        "config-host-unicode-error", "lazily_queue/config_keys.py",
        "            except (OSError, UnicodeError) as exc:",
        "            except OSError as exc:",
        ("tests/cli/test_node_config.py::test_a_huge_value_is_named_by_its_first_characters",),
        "a host name no resolver can encode is a ConfigError, not a traceback"),
    Mutation(
        "config-value-shown-whole", "transports/lazily_transports/errors.py",
        "    return text if len(text) <= limit else",
        "    return text if True else",
        ("tests/cli/test_node_config.py::test_a_huge_value_is_named_by_its_first_characters",),
        "a huge configuration value is named by its first characters"),
    Mutation(
        "membership-from-journal-ignored", "lazily_queue/raft/log_config.py",
        "    if not patches.enabled(PATCH):\n        return 0\n    applied",
        "    if True:\n        return 0\n    applied",
        ("tests/raft/test_membership_restart.py::"
         "test_a_restarted_founder_runs_with_the_members_in_its_log",),
        "a restarted member runs with the membership in its log, not the one it was given"),
    Mutation(
        "committed-membership-applied-again", "lazily_queue/raft/adapters.py",
        "        if in_effect_already(command):\n",
        "        if False:\n",
        ("tests/raft/test_membership_restart.py::"
         "test_a_committed_change_applied_after_a_restart_undoes_no_later_one",),
        "a committed addition applied after a restart does not undo a later removal"),
    Mutation(
        "unaddressed-member-never-linked", "lazily_queue/raft/release.py",
        "        if ready.events and self._unaddressed:\n",
        "        if False:\n",
        ("tests/raft/test_membership_restart.py::"
         "test_members_added_one_at_a_time_all_link_to_each_other",),
        "a member added before its address applied is linked once it has"),
    Mutation(
        "member-addresses-not-kept", "lazily_queue/node.py",
        "            self._addresses.get(member))",
        "            None)",
        ("tests/raft/test_membership_restart.py::"
         "test_a_restarted_founder_finds_its_cluster_and_catches_up",),
        "a restarted founder dials its members at the addresses it kept"),
    Mutation(
        "rejoining-member-alone-elects-itself", "lazily_queue/raft/prevote.py",
        "now + e._SyncObj__generateRaftTimeout() if e.rejoining else float(\"-inf\"))",
        "float(\"-inf\"))",
        ("tests/raft/test_one_member_start.py::"
         "test_a_member_alone_that_rejoins_never_elects_itself",),
        "a wiped member that knows no other member never leads on its empty log"),
    Mutation(
        "client-sets-expiry-rules-unchecked", "lazily_queue/client/connection.py",
        "        if code == C.EXPIRY_RULES:\n",
        "        if False:\n",
        ("tests/client/test_client_access.py::"
         "test_expiry_rules_on_an_object_that_held_elements_need_admin",),
        "a client without admin cannot expire what a queue or topic holds by giving it rules"),
    Mutation(
        "client-gives-back-anything", "lazily_queue/client/popped.py",
        "        if pop is None or not kept or kept != digest(value, headers.get(i)):",
        "            if False:",
        ("tests/client/test_client_access.py::"
         "test_a_consume_only_client_gives_back_only_what_it_popped",),
        "a consume-only client gives back to a queue's head only what it popped, as popped"),
    Mutation(
        "batch-values-checked-one-by-one", "lazily_queue/storage/replicated_object.py",
        "        for value in values:\n            encode(code, args(value))\n",
        "        for value in values[:0]:\n            encode(code, args(value))\n",
        ("tests/raft/test_consumer_batches.py::"
         "test_a_batch_with_a_value_the_cluster_refuses_is_refused_whole",),
        "a batch with a value the cluster refuses is refused whole, nothing of it applied"),
    Mutation(
        "member-id-any-digits", "lazily_queue/admin.py",
        "    if not (member_id.isascii() and member_id.isdigit() and "
        "str(int(member_id)) == member_id\n            and int(member_id) < 2**64):",
        "    if not member_id.isdigit():",
        (f"{_HOSTILE}::test_a_member_id_no_node_can_have_is_refused",),
        "no member id that no node can have is replicated as a voter"),
    Mutation(
        "metadata-copies-gone-accepted", "lazily_queue/datadir.py",
        "    if journal.getCurrentTerm() == 0 and \"node\" not in journal.meta and (",
        "    if False and (",
        ("tests/raft/test_data_dir_lock.py::"
         "test_a_directory_whose_metadata_copies_are_both_gone_is_damaged",),
        "a node that lost both metadata copies does not start forgetting its vote"),
    Mutation(
        "cancelled-pop-result-dropped", "lazily_queue/raft/driver.py",
        "                if fut.cancelled() and error is None and on_orphan is not None:",
        "                if False:",
        ("tests/raft/test_node.py::"
         "test_a_pop_cancelled_as_it_commits_on_one_member_keeps_the_element",),
        "a pop cancelled as it commits gives its element back"),
    Mutation(
        "push-over-max-bytes-retried", "lazily_queue/cells/queue.py",
        "            if (never := never_fits(self.name, self._limits, size)) is not None:",
        "            if (never := None) is not None:",
        ("tests/cells/test_queue_limits.py::"
         "test_a_push_larger_than_max_bytes_is_refused_not_retried_forever",),
        "a push that can never fit max_bytes is refused, not retried forever"),
    Mutation(
        "client-group-name-with-separator", "lazily_queue/client/connection.py",
        "        if (code == C.GROUP_DECLARE and isinstance(args[1], str)",
        "        if False and (code == C.GROUP_DECLARE and isinstance(args[1], str)",
        ("tests/client/test_client_access.py::"
         "test_a_client_makes_no_new_group_whose_name_has_the_separator",),
        "a client cannot take another topic's consumer group by a name with ':'"),
    Mutation(
        "query-redirects-admin-delete", "lazily_queue/integrations/aiohttp_admin.py",
        "    if segment != \"_\":\n",
        "    if False:\n",
        (f"{_HOSTILE}::test_a_query_never_redirects_a_delete_to_another_object",),
        "an admin request's query never makes it act on another object"),
    Mutation(
        "refused-dialer-redials-at-once", "transports/lazily_transports/_core/_peer_link.py",
        "            if await self.serve(channel):\n",
        "            if await self.serve(channel) or True:\n",
        ("tests/raft/test_mesh_node.py::"
         "test_a_replaced_member_that_others_dial_is_told_why_they_refuse_it",),
        "peers refusing a member after authentication back off and tell it why"),
    Mutation(
        "txn-check-ignores-due-delayed", "lazily_queue/replicated/transactions.py",
        "        due = target.due_len(sm.now) if code == ops.QUEUE_PUSH_OPTIONS else 0",
        "        due = 0",
        ("tests/replicated/test_transactions.py::"
         "test_a_push_with_options_counts_the_delayed_elements_it_makes_ready_first",),
        "a transaction is all or none when its push makes delayed elements ready first"),
    Mutation(
        "nats-buffers-while-reconnecting", "lazily_queue/brokers/nats_backend.py",
        "                                  \"pending_size\": 0, \"error_cb\": error_cb,",
        "                                  \"error_cb\": error_cb,",
        ("tests/brokers/test_outage_outcomes.py::"
         "test_a_nats_push_that_failed_during_an_outage_is_not_stored_later",),
        "a NATS push that raised during an outage is never stored once the server is back"),
    Mutation(
        "second-process-of-a-member-accepted", "lazily_queue/raft/link_identity.py",
        "                and self.live(peer):",
        "                and False:",
        ("tests/raft/test_link_identity.py::"
         "test_a_second_process_is_refused_while_the_first_is_live",),
        "a second process claiming a member whose link is live is refused"),
    Mutation(
        "removed-member-incarnation-accepted", "lazily_queue/raft/mesh.py",
        "        if incarnations[0] in self._retired.get(peer, ()):",
        "        if False:",
        ("tests/raft/test_mesh_node.py::"
         "test_a_member_added_back_elsewhere_is_linked_by_a_node_with_stale_peers[running]",),
        "a removed member's process is refused once its id is added back"),
    Mutation(
        "transfer-does-not-pause-proposals", "lazily_queue/raft/engine.py",
        "            if patches.enabled(\"paused-transfer\"):",
        "            if False:",
        ("tests/raft/test_transfer.py::"
         "test_a_transfer_under_steady_writes_hands_over_and_loses_nothing",),
        "a leadership transfer under steady writes hands over and loses nothing"),
    Mutation(
        "status-names-a-silent-leader", "lazily_queue/raft/replica.py",
        "        if leader is not None and not e.is_leader and not e.pre_vote.heard_within(",
        "        if False and not e.pre_vote.heard_within(",
        ("tests/raft/test_status_leader.py::"
         "test_a_survivor_of_a_lost_majority_names_no_leader",),
        "a survivor of a lost majority names no leader in its status"),
    Mutation(
        "ephemeral-gap-outlives-subscription", "lazily_queue/core/limited_topic.py",
        "        if transition.result and subscriber not in self._subs:",
        "        if False:",
        ("tests/replicated/test_limits.py::"
         "test_a_gap_goes_with_its_subscription_and_an_id_subscribed_again_starts_at_zero",),
        "a topic subscriber's gap ends with its subscription"),
    Mutation(
        "earlier-feature-taken-for-newer", "lazily_queue/datadir.py",
        "    return number >= 0 and any(n == name and m >= number",
        "    return False and any(n == name and m >= number",
        ("tests/raft/test_versions.py::"
         "test_a_directory_stamped_with_an_earlier_form_of_a_feature_loads",),
        "a data directory stamped by the version before a feature's bump loads"),
]


def _run_tests(tests: tuple[str, ...]) -> tuple[bool, float]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=ROOT, env=env, capture_output=True, text=True)
    return done.returncode != 0, time.perf_counter() - start


def _apply(m: Mutation) -> str:
    path = ROOT / m.path
    original = path.read_text()
    count = original.count(m.old)
    if count != 1:
        raise SystemExit(f"{m.name}: the text to mutate occurs {count} times in {m.path}; "
                         "update tests/mutate.py to the current source")
    path.write_text(original.replace(m.old, m.new))
    return original


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.names or m.name in args.names]
    if args.list:
        for m in chosen:
            print(f"{m.name:28} {m.path}: {m.guards}")
        return 0
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if dirty:
        print("error: commit or stash your changes first; mutate.py edits tracked files",
              file=sys.stderr)
        return 2
    survived = []
    for m in chosen:
        original = _apply(m)
        try:
            caught, seconds = _run_tests(m.tests)
        finally:
            (ROOT / m.path).write_text(original)
        verdict = "caught" if caught else "SURVIVED"
        print(f"{m.name:28} {verdict:9} {seconds:6.1f}s  {' '.join(m.tests)}", flush=True)
        if not caught:
            survived.append(m.name)
    print(f"{len(chosen) - len(survived)} of {len(chosen)} planted defects caught"
          + (f"; survived: {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
