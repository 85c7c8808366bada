"""Planted defects in the cells, the reactive core and transactions."""

from __future__ import annotations

from .mutation import SUBDEL_CELL, SUBDEL_OPS, SUBS, Mutation

MUTATIONS = [
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
        "gc-floor", "lazily_queue/core/topic.py",
        "        return min(durable) if durable else self.end_offset()",
        "        return max(durable) if durable else self.end_offset()",
        ("tests/core/test_topic_core.py", "tests/conformance/test_replay.py"),
        "retention never collects what a durable subscriber has not read"),
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
        "local-transaction-unchecked", "lazily_queue/transactions/local.py",
        "            if refusal is not None:\n                return index, *refusal\n",
        "",
        ("tests/cells/test_transactions.py",),
        "a local transaction with an op that would fail applies none of its ops"),
    Mutation(
        "seek-past-retained-range", "lazily_queue/core/topic_subscriptions.py",
        "    if not base <= offset <= end:\n        raise out_of_range(offset, base, end)\n",
        "",
        ("tests/cells/test_topic_replay.py",),
        "a start or seek outside the retained range raises OffsetOutOfRange"),
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
        "work-claim-ignores-ttl", "lazily_queue/core/expiry_take.py",
        "        dropped, dropped_mask = expire_work_head(\n"
        "            core, expiry, now, None if limit is None else limit - expired)\n",
        "        dropped, dropped_mask = 0, 0\n",
        ("tests/sim/test_work_expiry_checker.py::test_a_few_seeds_pass_with_work_items_expiring",),
        "a work claim never hands out an item at or after its TTL's deadline (simulated)"),
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
        "subscriber-delete-keeps-record", "lazily_queue/core/topic.py",
        "        record = self._subs.pop(subscriber, None)\n",
        "        record = self._subs.get(subscriber)\n",
        (f"{SUBDEL_OPS}::test_deleting_a_durable_subscriber_releases_retention_and_its_slot",
         f"{SUBDEL_CELL}::test_a_deleted_subscriber_frees_its_slot_under_max_subscribers"),
        "a deleted subscriber no longer holds retention nor a max_subscribers slot"),
    Mutation(
        "subscriber-delete-stays-connected", "lazily_queue/core/topic.py",
        "        if record.connected:\n            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, frozenset((subscriber,)))",
        "        return TopicTransition(True, frozenset((subscriber,)))",
        (f"{SUBDEL_OPS}::test_deleting_a_connected_or_ephemeral_subscriber_makes_its_reads"
         "_unavailable",),
        "a deleted connected subscriber leaves the connected set (publishes stop naming it)"),
    Mutation(
        "subscriber-delete-tells-nobody", "lazily_queue/core/topic.py",
        "            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, frozenset((subscriber,)))",
        "            self._set_connected(subscriber, False)\n"
        "        return TopicTransition(True, NOBODY)",
        (f"{SUBDEL_CELL}::test_deleting_an_abandoned_durable_subscriber_releases_what_it_held",),
        "deleting a subscriber invalidates its readers (they read None), locally and replicated"),
    Mutation(
        "subscriber-delete-keeps-gap", "lazily_queue/core/limited_topic.py",
        "        transition = super().delete_subscriber(subscriber)\n"
        "        self.gaps.pop(subscriber, None)\n",
        "        transition = super().delete_subscriber(subscriber)\n",
        (f"{SUBDEL_OPS}::test_a_limited_topic_forgets_the_deleted_subscribers_gap",),
        "a subscriber subscribing again after its deletion inherits no retention gap"),
    Mutation(
        "subscriber-delete-name-unchecked", "lazily_queue/cells/topic_subscribers.py",
        "        check_member(check_subscriber(subscriber), \"subscriber name\")\n",
        "        check_subscriber(subscriber)\n",
        (f"{SUBS}::test_a_client_deletes_a_durable_subscriber_freeing_its_slot",
         f"{SUBDEL_CELL}::test_deleting_checks_the_name_rule"),
        "a client refuses an overlong subscriber name to delete before sending (InvalidName)"),
    Mutation(
        "group-snapshot-drops-retained-deadlines", "lazily_queue/core/expiry.py",
        "        if self.retained is not None:\n            doc.append(self.retained.to_list())",
        "        if False:\n            doc.append(self.retained.to_list())",
        ("tests/replicated/test_group_snapshots.py",),
        "a snapshot keeps a group's retained deadlines as their rules"),
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
        "replicated-now-unchecked", "lazily_queue/core/work_items.py",
        "    checked = check_now(now)\n",
        "    return now\n",
        ("tests/cells/test_work_scheduling_replicated.py::"
         "test_a_time_no_member_can_use_is_refused_at_the_call",),
        "a replicated work queue refuses a time it cannot use at the call"),
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
        "push-over-max-bytes-retried", "lazily_queue/cells/queue.py",
        "            if (never := never_fits(self.name, self._limits, size)) is not None:",
        "            if (never := None) is not None:",
        ("tests/cells/test_queue_limits.py::"
         "test_a_push_larger_than_max_bytes_is_refused_not_retried_forever",),
        "a push that can never fit max_bytes is refused, not retried forever"),
    Mutation(
        "ephemeral-gap-outlives-subscription", "lazily_queue/core/limited_topic.py",
        "        if transition.result and subscriber not in self._subs:",
        "        if False:",
        ("tests/replicated/test_limits.py::"
         "test_a_gap_goes_with_its_subscription_and_an_id_subscribed_again_starts_at_zero",),
        "a topic subscriber's gap ends with its subscription"),
]
