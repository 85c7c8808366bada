"""Planted defects in storages and broker backends (``lazily_queue/storage``, ``brokers``)."""

from __future__ import annotations

from .mutation import SUBS, Mutation

MUTATIONS = [
    Mutation(
        "local-dedup-window-ignored", "lazily_queue/storage/local.py",
        "        if self.dedup.lookup(msg_id, now)[0]:\n            return None\n",
        "",
        ("tests/cells/test_dedup.py",),
        "a local queue push repeated with its msg_id applies once"),
    Mutation(
        "local-group-not-fed", "lazily_queue/storage/local_topic.py",
        "                group.feed(value, stamp)\n",
        "                pass\n",
        ("tests/cells/test_topic_groups.py",),
        "a local topic's publish feeds each of its consumer groups"),
    Mutation(
        "local-group-fed-without-deadline", "lazily_queue/storage/local_topic_expiry.py",
        "                group.note_deadline(offset, fed)\n",
        "                pass\n",
        ("tests/cells/test_group_expiry.py",),
        "a local topic's groups never deliver an element after its deadline"),
    Mutation(
        "raft-work-promotion-at-a-given-time", "lazily_queue/storage/raft_scheduling.py",
        "        if now is not None:",
        "        if False:",
        ("tests/cells/test_work_scheduling_replicated.py",),
        "a member's promote_due refuses a time of its own (it promotes at the leader's stamp)"),
    Mutation(
        "popped-headers-lost-local", "lazily_queue/storage/local_expiry.py",
        "            taken.update((i, h) for i, h in result[2])",
        "            pass",
        ("tests/cells/test_queue_options.py",),
        "a pop with headers on an expiring local deque answers the headers it took"),
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
        "redis-oom-untyped", "lazily_queue/brokers/redis_errors.py",
        "    except rexc.OutOfMemoryError as exc:\n",
        "    except rexc.DataError as exc:\n",
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
        "nats-no-jetstream-unnamed", "lazily_queue/brokers/nats_api_errors.py",
        "    if isinstance(exc, jserr.ServiceUnavailableError) and exc.err_code in (\n",
        "    if False and exc.err_code in (\n",
        ("tests/brokers/test_no_jetstream.py",),
        "a nats-server without JetStream is BrokerUnavailable naming -js, not a bare 503"),
    Mutation(
        "nats-storage-full-unnamed", "lazily_queue/brokers/nats_api_errors.py",
        "    if exc.err_code in INSUFFICIENT_RESOURCES:\n",
        "    if False:\n",
        ("tests/brokers/test_memory.py::test_a_push_to_a_full_jetstream_names_the_fix_and_workers_drain_it",),
        "a push to a JetStream out of storage is BrokerOutOfMemory naming the limit to raise"),
    Mutation(
        "nats-any-503-is-no-jetstream", "lazily_queue/brokers/nats_api_errors.py",
        "    if isinstance(exc, jserr.ServiceUnavailableError) and exc.err_code in (\n"
        "            None, JETSTREAM_UNAVAILABLE):\n",
        "    if isinstance(exc, jserr.ServiceUnavailableError):\n",
        ("tests/brokers/test_no_jetstream.py::"
         "test_a_503_with_another_error_code_is_not_reported_as_no_jetstream",),
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
        "redis-other-protocol-raw", "lazily_queue/brokers/redis_errors.py",
        "    except rexc.InvalidResponse:\n",
        "    except ZeroDivisionError:\n",
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
        "subscriber-name-unchecked", "lazily_queue/storage/raft_topic.py",
        "        check_member(subscriber, \"subscriber name\")\n",
        "        pass\n",
        (f"{SUBS}::test_a_node_refuses_an_overlong_subscriber_or_worker_before_proposing",
         f"{SUBS}::test_a_client_refuses_an_overlong_subscriber_or_worker_before_sending"),
        "a node's and a client's topics refuse a subscriber name over 1024 characters"),
    Mutation(
        "claim-worker-unchecked", "lazily_queue/storage/raft_work_queue.py",
        '        check_member(worker, "worker name")\n'
        "        args = [self.name, check_worker(worker), given_now(now)]\n",
        "        args = [self.name, check_worker(worker), given_now(now)]\n",
        (f"{SUBS}::test_a_node_refuses_an_overlong_subscriber_or_worker_before_proposing",
         f"{SUBS}::test_a_client_refuses_an_overlong_subscriber_or_worker_before_sending"),
        "a node's and a client's work queues refuse a claim by a worker over 1024 characters"),
    Mutation(
        "claim-many-worker-unchecked", "lazily_queue/storage/raft_work_queue.py",
        '        check_member(worker, "worker name")\n'
        "        args = [self.name, check_worker(worker), check_count(n), given_now(now)]\n",
        "        args = [self.name, check_worker(worker), check_count(n), given_now(now)]\n",
        (f"{SUBS}::test_a_node_refuses_an_overlong_subscriber_or_worker_before_proposing",),
        "a node's work queue refuses a batch claim by a worker over 1024 characters"),
    Mutation(
        "node-ignores-subscriber-cap", "lazily_queue/storage/raft_topic.py",
        "        if self.max_subscribers is not None and isinstance(subscriber, str):\n",
        "        if False:\n",
        (f"{SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a node refuses its own subscribe beyond the topic's max_subscribers"),
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
        "serializer-skips-batches", "lazily_queue/storage/serializing.py",
        "        if name not in _BATCHES:\n",
        "        if True:\n",
        ("tests/cells/test_many_pushes.py::test_a_serializer_encodes_every_value_of_a_batch",),
        "a serializer encodes every value of a push_many or publish_many"),
    Mutation(
        "replicated-subscriber-unchecked", "lazily_queue/storage/raft_topic.py",
        "        return [self.name, check_subscriber(subscriber), *rest]\n",
        "        return [self.name, subscriber, *rest]\n",
        ("tests/cells/test_bad_arguments.py::"
         "test_a_member_and_a_client_refuse_them_before_proposing",),
        "a replicated topic refuses a subscriber that is not a str before proposing"),
    Mutation(
        "batch-values-checked-one-by-one", "lazily_queue/storage/replicated_object.py",
        "        for value in values:\n            encode(code, args(value))\n",
        "        for value in values[:0]:\n            encode(code, args(value))\n",
        ("tests/raft/test_consumer_batches.py::"
         "test_a_batch_with_a_value_the_cluster_refuses_is_refused_whole",),
        "a batch with a value the cluster refuses is refused whole, nothing of it applied"),
    Mutation(
        "nats-buffers-while-reconnecting", "lazily_queue/brokers/nats_backend.py",
        "                                  \"pending_size\": 0, \"error_cb\": error_cb,",
        "                                  \"error_cb\": error_cb,",
        ("tests/brokers/test_outage_outcomes.py::"
         "test_a_nats_push_that_failed_during_an_outage_is_not_stored_later",),
        "a NATS push that raised during an outage is never stored once the server is back"),
    Mutation(
        "claim-hands-out-ended-leases", "lazily_queue/storage/raft_work_queue.py",
        "            live = self._live(leased)\n",
        "            live = leased\n",
        ("tests/client/test_claim_ended_leases.py",),
        "a claim on a node or a client never hands out a lease its replica holds as ended"),
]
