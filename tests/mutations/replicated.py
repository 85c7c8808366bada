"""Planted defects in the replicated state machine (``lazily_queue/replicated``)."""

from __future__ import annotations

from .mutation import Mutation

BACKLOG = "tests/replicated/test_expiry_backlog.py"

MUTATIONS = [
    Mutation(
        "retry-deduplication", "lazily_queue/replicated/state_machine.py",
        "            seq, code = op[0], op[1]\n            if seq in done or seq < session.floor:",
        "            seq, code = op[0], op[1]\n            if False:",
        ("tests/raft/test_node.py",),
        "a retried operation applies once"),
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
        "                        results.append(found)\n"
        "                        continue\n",
        "                        results.append(found)\n"
        "                        found = self.open_client_session(sid)\n",
        ("tests/sim/test_registered_sessions_checker.py::"
         "test_an_op_refused_under_a_forgotten_session_is_fenced_off_the_replay",),
        "an op refused under a forgotten session (session_unknown) is never applied"),
    Mutation(
        "dedup-window-ignored", "lazily_queue/replicated/dedup.py",
        "    if found:\n        return first\n",
        "    if False:\n        return first\n",
        ("tests/replicated/test_dedup.py",
         "tests/sim/test_simulation.py::test_producers_retrying_a_msg_id_never_duplicate"),
        "a push repeated with its msg_id applies once while the id is in the window"),
    Mutation(
        "transaction-applied-in-part", "lazily_queue/replicated/transactions.py",
        "    plans = check(sm, args)\n    if isinstance(plans, tuple):\n",
        "    plans = check(sm, args)\n    if isinstance(plans, tuple):\n"
        "        plans = [None] * len(args)\n    if isinstance(plans, tuple):\n",
        ("tests/replicated/test_transactions.py",
         "tests/sim/test_simulation.py::test_transactions_apply_all_or_none"),
        "a transaction with an op that would fail applies none of its ops"),
    Mutation(
        "client-sessions-evicted-regardless-of-owner",
        "lazily_queue/replicated/client_sessions.py",
        "            if sid > CLIENT_SESSION_BASE and self.held(owner_of(sid)) == most:\n",
        "            if sid > CLIENT_SESSION_BASE:\n",
        ("tests/replicated/test_client_sessions.py::"
         "test_a_client_opening_sessions_without_end_only_drops_its_own",
         "tests/replicated/test_client_session_counts.py::"
         "test_the_counts_and_the_victim_follow_opens_sightings_drops_and_rebuilds"),
        "a client opening sessions without end only drops its own, never another's"),
    Mutation(
        "group-not-fed", "lazily_queue/replicated/topics.py",
        "    groups.feed(sm, name, args[1], ttl_ms)\n",
        "",
        ("tests/replicated/test_group_ops.py", "tests/sim/test_group_checker.py"),
        "every publish feeds each consumer group of the topic, on every replica"),
    Mutation(
        "mirrored-group-not-fed", "lazily_queue/replicated/groups.py",
        "        _report(sm, name, ops.WORK_PUSH, value)\n",
        "",
        ("tests/client/test_client_groups.py",),
        "a client's mirror of a consumer group gets what its topic feeds it"),
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
        "            self.shed(sessions)\n\n    def freed",
        "            pass\n\n    def freed",
        ("tests/replicated/test_session_kept_bytes.py",),
        "all sessions together keep at most KEPT_BYTES of results"),
    Mutation(
        "restored-kept-bytes-uncounted", "lazily_queue/replicated/state_snapshot.py",
        "    sm.kept.rebuild(sessions)", "    pass",
        ("tests/replicated/test_session_kept_bytes.py",),
        "a replica restored from a snapshot counts kept results as those that applied did"),
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
        "expiry-on-a-local-clock", "lazily_queue/replicated/expiry.py",
        "    result, expired = pop_live(q, expiry, sm.now, n, pop, EXPIRE_LIMIT, pop)",
        "    result, expired = pop_live(q, expiry, 0, n, pop, EXPIRE_LIMIT, pop)",
        ("tests/replicated/test_expiry_ops.py",),
        "a pop decides expiry at its own entry's leader stamp, not before a sweep"),
    Mutation(
        "group-fed-without-deadline", "lazily_queue/replicated/groups.py",
        "        group_expiry.deadlines[item_id] = deadline\n",
        "",
        ("tests/replicated/test_group_expiry_ops.py", "tests/sim/test_group_checker.py"),
        "an element enters each consumer group with its topic deadline (never delivered "
        "after it)"),
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
        "promotion-takes-extra-args", "lazily_queue/replicated/queue_options.py",
        "    if len(args) != 1:",
        "    if not args:",
        ("tests/replicated/test_queue_options_ops.py",),
        "QUEUE_PROMOTE carries only the queue name (no proposer's time)"),
    Mutation(
        "work-promotion-takes-extra-args", "lazily_queue/replicated/scheduling.py",
        "    if len(args) != 1:",
        "    if not args:",
        ("tests/replicated/test_scheduling_ops.py",),
        "WORK_PROMOTE carries only the work queue name (no proposer's time)"),
    Mutation(
        "popped-headers-lost-replicated", "lazily_queue/replicated/expiry.py",
        "            taken.update((i, h) for i, h in got[2])",
        "            pass",
        ("tests/replicated/test_headers_with_limits_and_expiry.py",),
        "a pop with headers on an expiring replicated queue answers the headers it took"),
    Mutation(
        "topic-take-hands-out-expired", "lazily_queue/replicated/topics.py",
        "        skipped = skip_expired(topic, rules, args[1], sm.now).invalidated",
        "        pass",
        ("tests/sim/test_topic_options_checker.py", "tests/cells/test_topic_options.py"),
        "a topic take never hands out an element expired at its stamp (per-message ttl)"),
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
        "work-time-past-the-stamp", "lazily_queue/replicated/work_queues.py",
        "    return min(int(value), sm.now)",
        "    return int(value)",
        ("tests/replicated/test_scheduling_ops.py",),
        "an op's explicit time never runs past its entry's stamp (no early claim, no "
        "lease past the leader's clock)"),
    Mutation(
        "work-capture-not-deferred", "lazily_queue/replicated/work_queues.py",
        "(Section(\"work_queues\", _capture, _restore, _capture_deferred),",
        "(Section(\"work_queues\", _capture, _restore),",
        ("tests/replicated/test_snapshot_capture.py",),
        "a snapshot file's capture makes work-queue records on the writer's thread, not the loop"),
    Mutation(
        "session-results-not-copied", "lazily_queue/replicated/state_snapshot.py",
        "done(list(s.done.items()))", "done(s.done.items())",
        ("tests/replicated/test_snapshot_capture.py",),
        "a deferred capture copies each session's results when captured"),
    Mutation(
        "member-forget-ignores-address", "lazily_queue/replicated/cluster.py",
        "    if len(args) > 1 and sm.addresses.get(node) != args[1]:\n        return None\n", "",
        ("tests/replicated/test_state_machine.py::"
         "test_forgetting_an_address_drops_only_the_address_it_names",),
        "forgetting a removed member's address leaves an address a later add replicated"),
    Mutation(
        "client-ephemeral-never-reaped", "lazily_queue/replicated/ephemeral_owners.py",
        "        removed += drop_session(sm, sid)\n",
        "        removed += 0\n",
        ("tests/replicated/test_ephemeral_owners.py::"
         "test_a_reap_removes_only_the_subscriptions_of_stale_owners",),
        "the ephemeral subscriptions of a crashed client stay for good"),
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
        "        if sid in self.ended or (",
        "        if False or (",
        ("tests/replicated/test_session_end.py::"
         "test_an_op_under_an_ended_session_is_refused_and_not_applied_again",),
        "a retried op under an ended session is applied again in a fresh session"),
    Mutation(
        "ended-ids-forgotten-oldest-of-all", "lazily_queue/replicated/session_end.py",
        "            self._forget_oldest(self._most_holding())",
        "            self._forget_oldest(owner_of(next(iter(ended))))",
        ("tests/replicated/test_ended_by_owner.py::"
         "test_a_client_ending_sessions_without_end_pushes_out_only_its_own",),
        "a client ending sessions without end pushes out another's ended id, whose late "
        "retry then applies again"),
    Mutation(
        "forgotten-registered-session-opened-again", "lazily_queue/replicated/state_machine.py",
        "        if registered:  # forgotten: never opened by an op",
        "        if False:",
        ("tests/replicated/test_session_register.py::"
         "test_a_retry_after_its_session_expired_is_refused_and_not_applied_again",),
        "a retry under a forgotten registered session is applied again in a fresh session"),
    Mutation(
        "member-retry-of-refused-client-op-answered-applied",
        "lazily_queue/replicated/state_machine.py",
        "session.keep(seq, NOT_HELD if self._not_held else IN_CLIENT)",
        "session.keep(seq, IN_CLIENT)",
        ("tests/replicated/test_session_register.py::test_a_members_retry_of_a_client_op_"
         "refused_under_a_forgotten_session_is_refused_again",),
        "a member's retry of a client op refused under a forgotten session is never "
        "answered as applied (duplicate)"),
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
        "txn-check-ignores-due-delayed", "lazily_queue/replicated/transactions.py",
        "        due = target.due_len(sm.now) if code == ops.QUEUE_PUSH_OPTIONS else 0",
        "        due = 0",
        ("tests/replicated/test_transactions.py::"
         "test_a_push_with_options_counts_the_delayed_elements_it_makes_ready_first",),
        "a transaction is all or none when its push makes delayed elements ready first"),
    Mutation(
        "take-past-its-kept-result", "lazily_queue/replicated/queues.py",
        "    k = budget(q.head(n)) or n\n",
        "    k = n\n",
        ("tests/replicated/test_take_bytes.py",),
        "a take pops no more than its session keeps room for, so its retry is answered"),
    Mutation(
        "claim-past-its-kept-result", "lazily_queue/replicated/work_queues.py",
        "claimed = core.claim_many(args[1], now, args[2], fitting)",
        "claimed = core.claim_many(args[1], now, args[2])",
        ("tests/replicated/test_claim_bytes.py", "tests/client/test_client_claim_bytes.py"),
        "a claim leases no more than its session keeps room for, so its retry is answered"),
    Mutation(
        "scheduled-claim-past-its-kept-result", "lazily_queue/core/work_scheduled.py",
        "            if fitting is not None and not fitting((item.value,)):\n"
        "                sched.add_ready(item, self._pending, front=True)  # back where it was\n"
        "                break\n",
        "",
        ("tests/replicated/test_claim_bytes.py::"
         "test_priorities_and_delayed_items_are_claimed_in_their_order_up_to_the_bound",),
        "a claim of priorities and delayed items stops at the bytes its session keeps"),
    Mutation(
        "expiring-claim-past-its-kept-result", "lazily_queue/core/expiry_take.py",
        "core.claim_many(worker, lease_now, 1, fitting)",
        "core.claim_many(worker, lease_now, 1)",
        ("tests/replicated/test_claim_bytes.py::"
         "test_a_claim_under_expiry_rules_skips_the_expired_and_stops_at_the_bound",),
        "a claim under expiry rules stops at the bytes its session keeps"),
    Mutation(
        "kept-shed-by-session", "lazily_queue/replicated/session_results.py",
        "owner = owner_of(sid) if sid > CLIENT_SESSION_BASE else -1 - sid",
        "owner = sid",
        ("tests/replicated/test_kept_by_owner.py::"
         "test_a_client_spreading_results_over_many_sessions_gives_up_its_own",),
        "a client spreading kept results over many sessions gives up its own before "
        "another client's"),
    Mutation(
        "expire-limit-feature-unrequired", "lazily_queue/raft/features.py",
        "KEPT_BY_OWNER_FEATURE, EXPIRE_LIMIT_FEATURE,\n",
        "KEPT_BY_OWNER_FEATURE,\n",
        ("tests/raft/test_mesh_node.py::test_a_member_of_an_older_version_is_refused_at_the"
         "_handshake",),
        "a member removing a whole expired backlog in one entry is refused at the handshake"),
    Mutation(
        "expire-sweep-unlimited", "lazily_queue/replicated/expiry.py",
        "    limit = _limit(args)\n",
        "    limit = None\n",
        (f"{BACKLOG}::test_sweeps_remove_a_backlog_of_300_000_a_bounded_part_an_entry",),
        "a sweep removes at most its limit of a backlog of expired elements"),
    Mutation(
        "expire-take-unlimited", "lazily_queue/replicated/expiry.py",
        "pop_live(q, expiry, sm.now, n, pop, EXPIRE_LIMIT, pop)",
        "pop_live(q, expiry, sm.now, n, pop, None, pop)",
        (f"{BACKLOG}::test_pops_remove_a_bounded_part_of_a_backlog_and_never_hand_out_an_"
         "expired_one",),
        "a pop removes at most EXPIRE_LIMIT expired elements"),
    Mutation(
        "expire-take-past-limit-hands-out-expired", "lazily_queue/core/expiry_take.py",
        "if expired == limit and _queue_head_expired(fifo, expiry, now):",
        "if False:",
        (f"{BACKLOG}::test_pops_remove_a_bounded_part_of_a_backlog_and_never_hand_out_an_"
         "expired_one",),
        "a pop that removed its limit of expired elements never hands out the next"),
    Mutation(
        "expire-claim-past-limit-hands-out-expired", "lazily_queue/core/expiry_take.py",
        "if expired == limit and _expired_work_head(core, expiry, now) is not None:",
        "if False:",
        (f"{BACKLOG}::test_work_claims_and_sweeps_remove_a_bounded_part_of_a_backlog",),
        "a claim that removed its limit of expired items never leases the next"),
    Mutation(
        "expire-run-of-live-elements", "lazily_queue/core/expiry_take.py",
        "        return expiry.first_own(first, first + count) - first\n",
        "        return count\n",
        ("tests/core/test_expiry_runs.py", "tests/core/test_work_expiry_runs.py"),
        "a run of expired elements leaving at once is the run one by one would remove"),
    Mutation(
        "expire-work-run-out-of-order", "lazily_queue/core/work_removals.py",
        "            if item.item_id != first + k or item.attempts:\n",
        "            if item.attempts:\n",
        ("tests/core/test_work_expiry_runs.py",),
        "work items leaving together as expired are the ones in a row one by one would "
        "remove"),
    Mutation(
        "expire-sweep-not-repeated", "lazily_queue/maintenance.py",
        "if code == ops.EXPIRE and result == EXPIRE_LIMIT]",
        "if False]",
        (f"{BACKLOG}::test_the_leaders_maintenance_sweeps_again_at_once_while_a_sweep_was_"
         "cut_short",),
        "the leader sweeps again at once while a sweep removed its limit"),
    Mutation(
        "take-room-ignored", "lazily_queue/replicated/state_machine.py",
        "sized, floor = floor < 0, abs(floor)",
        "sized, floor = False, abs(floor)",
        ("tests/replicated/test_take_room.py", "tests/client/test_client_take_room.py"),
        "a client's takes in flight together never give up one another's kept results"),
    Mutation(
        "take-replayed-as-asked", "lazily_queue/replicated/take_bytes.py",
        "    args[at] = value\n",
        "    del args, at, value\n",
        ("tests/replicated/test_take_room.py",),
        "a mirror replays a sized take as the count it took"),
    Mutation(
        "session-seen-not-ordered", "lazily_queue/replicated/client_sessions.py",
        "            self.order[owner_of(sid)].move_to_end(sid)\n",
        "            pass\n",
        ("tests/replicated/test_client_session_counts.py",),
        "past the bound, a client gives up its least recently seen session, not its oldest"),
]
