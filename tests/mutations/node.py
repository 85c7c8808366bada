"""Planted defects in the node and its operations (``lazily_queue/*.py``)."""

from __future__ import annotations

from .mutation import BOUNDS, FORGETS, HOSTILE, LISTING, NAMES, SUBDEL_ADMIN, SUBS, Mutation

CHECKS = "tests/raft/test_membership_checks.py"

MUTATIONS = [
    Mutation(
        "admin-add-member-address-unchecked", "lazily_queue/member_checks.py",
        "    refusal = address_refusal(address, str(member))\n",
        "    refusal = None\n",
        ("tests/integrations/test_admin_api.py::test_membership_and_leadership",
         f"{CHECKS}::test_an_address_no_member_can_listen_on_is_refused"),
        "the admin API and node.add_member refuse a member address no member could listen "
        "on"),
    Mutation(
        "node-add-member-unchecked", "lazily_queue/membership.py",
        "    problem = await addition_problem(node, member, address, min(timeout, "
        "LOOKUP_WITHIN))\n",
        "    problem = None\n",
        (CHECKS,),
        "node.add_member refuses an id no node can have and an address no member can use"),
    Mutation(
        "new-member-at-a-members-address", "lazily_queue/member_checks.py",
        "    if holder is not None:\n",
        "    if False:\n",
        (f"{HOSTILE}::test_a_member_at_another_members_address_is_refused",
         f"{CHECKS}::test_another_members_address_in_another_spelling_is_refused"),
        "no member is added where another member listens, however the address is spelled"),
    Mutation(
        "lone-member-told-nothing", "lazily_queue/membership.py",
        "    if not others or target == node.node_id:\n",
        "    if False:\n",
        ("tests/testing/test_testing_cluster.py::"
         "test_a_lone_member_is_told_why_it_can_neither_leave_nor_hand_over",),
        "a leader with no one to hand leadership to is told so"),
    Mutation(
        "maintenance-promotes-work-at-its-time", "lazily_queue/maintenance.py",
        "            due.append((ops.WORK_PROMOTE, [name]))",
        "            due.append((ops.WORK_PROMOTE, [name, now_ms]))",
        ("tests/replicated/test_scheduling_ops.py",),
        "the leader's maintenance proposes WORK_PROMOTE as [name]"),
    Mutation(
        "startup-timeout-nan", "lazily_queue/config.py",
        "not isinstance(timeout, int | float) or not timeout >= 0 \\\n",
        "not isinstance(timeout, int | float) or timeout < 0 \\\n",
        ("tests/cli/test_node_config.py",),
        "a startup_timeout of nan is refused when the file is read (it never expired)"),
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
        (f"{HOSTILE}::test_credentials_that_are_not_text_are_refused_not_a_server_error",),
        "a credential that is not valid UTF-8 is a wrong token (401/403), not a 500"),
    Mutation(
        "admin-token-guessing-unthrottled", "lazily_queue/admin_auth.py",
        "        if len(times) >= MAX_GUESSES:",
        "        if False:",
        (f"{HOSTILE}::test_guessing_the_token_is_throttled_per_source",),
        "a source that guessed 10 wrong tokens in a minute is refused (429), right token too"),
    Mutation(
        "admin-advertised-origin-refused", "lazily_queue/admin_auth.py",
        "        self.origins = frozenset(origin_of(url) for url in origins)",
        "        self.origins = frozenset()",
        ("tests/integrations/test_service_http.py::"
         "test_the_advertised_page_is_a_same_origin_for_the_admin_api",),
        "behind a proxy, the advertised page's origin may use the admin API"),
    Mutation(
        "admin-dead-letter-json-unsafe", "lazily_queue/admin.py",
        '    doc["value"] = json_safe(doc["value"])',
        '    doc["value"] = doc["value"]',
        (f"{HOSTILE}::test_dead_letters_of_every_value_type_are_listed",),
        "dead letters holding datetimes, sets, nested bytes or NaN are listed as strict JSON"),
    Mutation(
        "admin-member-address-control-chars", "lazily_queue/config_keys.py",
        "    if not address.isprintable() or any(c.isspace() for c in address):",
        "    if False:",
        (f"{HOSTILE}::test_a_member_address_no_member_can_listen_on_is_refused",),
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
        (f"{FORGETS}::test_a_removed_member_leaves_no_address_behind",),
        "a committed remove_member forgets the removed node's replicated address"),
    Mutation(
        "remove-member-in-flight-said-unchanged", "lazily_queue/membership.py",
        "        if not _may_still_commit(outcomes):",
        "        if True:",
        (f"{FORGETS}::test_a_removal_that_may_still_commit_keeps_the_address",),
        "a remove_member that may still commit says the address stays replicated"),
    Mutation(
        "remove-member-timeout-silent-on-address", "lazily_queue/membership.py",
        '        raise TimeoutError(f"{late}; {kept}") from None',
        "        raise",
        (f"{FORGETS}::test_a_removal_that_may_still_commit_keeps_the_address",),
        "a remove_member that timed out says the address stays replicated and how to drop it"),
    Mutation(
        "remove-member-forget-failure-raised", "lazily_queue/membership.py",
        '        log.warning("node %s: node %s was removed, but forgetting its address failed',
        '        raise\n        log.warning("node %s: node %s was removed, but forgetting its '
        'address failed',
        (f"{FORGETS}::test_a_forget_that_fails_is_logged_and_removing_again_cleans_up",),
        "a removal that committed is reported done when forgetting the address fails"),
    Mutation(
        "remove-member-leftover-address-kept", "lazily_queue/membership.py",
        "        if address is None:\n"
        "            raise InvalidConfiguration(f\"node {member} is not",
        "        if True:\n            raise InvalidConfiguration(f\"node {member} is not",
        (f"{FORGETS}::test_a_forget_that_fails_is_logged_and_removing_again_cleans_up",),
        "removing a former member again forgets the address a failed forget left behind"),
    Mutation(
        "admin-remove-leftover-address-not-found", "lazily_queue/admin.py",
        "            member_id) is None:  # a former member's address left behind is forgotten\n",
        "            member_id) is None or True:\n",
        (f"{FORGETS}::test_a_forget_that_fails_is_logged_and_removing_again_cleans_up",),
        "the admin API removes the address a former member left behind, not 404"),
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
        (f"{BOUNDS}::test_workers_listed_are_bounded",),
        "a status lists only the busiest workers of a work queue"),
    Mutation(
        "status-workers-scan-unbounded", "lazily_queue/status.py",
        "    if core.in_flight_len() > MAX_WORKER_SCAN:",
        "    if False:",
        (f"{BOUNDS}::test_a_status_does_not_scan_a_huge_in_flight_set",),
        "a status does not walk a huge in-flight set per request"),
    Mutation(
        "status-subscribers-unbounded", "lazily_queue/status.py",
        "    behind = heapq.nsmallest(MAX_SUBSCRIBERS_SHOWN, records.items(),",
        "    behind = heapq.nsmallest(10**9, records.items(),",
        (f"{BOUNDS}::test_subscribers_listed_are_the_most_lagging",),
        "a status and the lag metric list only a topic's most lagging subscribers"),
    Mutation(
        "peer-pages-deep-json", "lazily_queue/peer_pages.py",
        "    except RecursionError:\n        raise ValueError(",
        "    except ZeroDivisionError:\n        raise ValueError(",
        ("tests/integrations/test_peer_pages.py",),
        "a page answering deeply nested JSON is that member's error; the reading goes on"),
    Mutation(
        "peer-vitals-unproven-trusted", "lazily_queue/peer_pages.py",
        "            if self.key is not None and not proven(",
        "            if False and not proven(",
        ("tests/integrations/test_vitals_proof.py",),
        "a page without the cluster's key cannot speak for a member's disk"),
    Mutation(
        "full-gate-makes-no-room", "transports/lazily_transports/_core/_admission.py",
        "if full and not (close is not None and self._evict(source, held)):",
        "if full:",
        ("tests/integrations/test_service_http.py::"
         "test_strangers_holding_every_slot_give_way_to_another_source",
         "tests/transports/test_strangers.py::"
         "test_strangers_holding_every_slot_make_room_for_a_member"),
        "strangers holding every HTTP or link slot from a few addresses give way to "
        "another source"),
    Mutation(
        "http-unread-answers-kept", "lazily_queue/service_http.py",
        "self.connections = http_gate.Connections(gate, stall_limit=HTTP_IDLE_TIMEOUT)",
        "self.connections = http_gate.Connections(gate, stall_limit=None)",
        ("tests/integrations/test_service_http.py::"
         "test_a_reader_that_does_not_take_its_answers_is_closed",),
        "a connection whose reader does not take its answers is closed"),
    Mutation(
        "http-idle-connections-kept", "lazily_queue/service_http.py",
        "        runner = web.AppRunner(app, access_log=None, "
        "keepalive_timeout=HTTP_IDLE_TIMEOUT,\n",
        "        runner = web.AppRunner(app, access_log=None,\n",
        ("tests/integrations/test_service_http.py::test_idle_and_half_sent_requests_are_closed",),
        "an idle or half-sent HTTP request is closed after HTTP_IDLE_TIMEOUT"),
    Mutation(
        "http-connections-ungated", "lazily_queue/http_gate.py",
        "        return self.gate.admit(source, connection, connection.evict)",
        "        return True",
        ("tests/integrations/test_service_http.py::"
         "test_one_source_cannot_take_every_connection",),
        "one IP address cannot hold more than its share of the node's HTTP connections"),
    Mutation(
        "http-port-listened-late", "lazily_queue/http_gate.py",
        "    if not start_serving:  # asyncio listens only from start_serving()",
        "    if False:",
        ("tests/integrations/test_http_port_held.py",),
        "no other socket takes the node's HTTP port between its bind and its serving"),
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
        "failed-start-keeps-directory", "lazily_queue/node.py",
        "        except BaseException as exc:  # an address in use: nothing stays running or "
        "locked\n",
        "        except ZeroDivisionError as exc:\n",
        ("tests/raft/test_data_dir_lock.py::"
         "test_a_node_whose_address_is_taken_leaves_its_directory_free",),
        "a node whose start fails at its address leaves nothing running or locked"),
    Mutation(
        "address-in-use-untyped", "lazily_queue/node.py",
        "                raise AddressInUse.at(self.node_id, self.listen, exc, clients=False) "
        "from None\n",
        "                raise\n",
        ("tests/raft/test_address_in_use.py::test_two_nodes_on_one_unix_address",),
        "a node whose listen address is taken raises AddressInUse naming it, not a bare "
        "OSError"),
    Mutation(
        "cell-name-unchecked", "lazily_queue/node_cells.py",
        "        check_name(name, what or f\"{kind.replace('_', ' ')} name\")\n",
        "        pass\n",
        (f"{NAMES}::test_a_node_refuses_an_overlong_name_before_proposing",
         f"{NAMES}::test_a_client_refuses_an_overlong_name_before_sending"),
        "a node's and a client's cells refuse a name over 1024 characters before sending"),
    Mutation(
        "member-ignores-object-cap", "lazily_queue/names.py",
        "        problem = op_room_problem(view, code, args, max_objects)\n",
        "        problem = None\n",
        (f"{NAMES}::test_members_cap_the_objects_a_cluster_holds",),
        "a member refuses a client's op creating an object beyond max_objects"),
    Mutation(
        "node-ignores-object-cap", "lazily_queue/node_cells.py",
        "        if self.max_objects is not None:\n            check_room(",
        "        if False:\n            check_room(",
        (f"{NAMES}::test_members_cap_the_objects_a_cluster_holds",),
        "a node refuses opening a new cell beyond max_objects"),
    Mutation(
        "max-objects-key-ignored", "lazily_queue/config.py",
        "            \"max_objects\": self.max_objects,\n",
        "",
        (f"{NAMES}::test_the_object_cap_is_a_node_option_and_a_config_key",),
        "`max_objects` in a node's TOML reaches the node"),
    Mutation(
        "admin-name-unbounded", "lazily_queue/admin.py",
        "    problem = name_problem(name, what)\n",
        "    problem = None\n",
        (f"{NAMES}::test_the_admin_api_uses_the_same_name_rule",),
        "the admin API refuses a name over 1024 characters, as the cells do"),
    Mutation(
        "member-ignores-subscriber-cap", "lazily_queue/names.py",
        "        problem = op_subscriber_room_problem(view, code, args, max_subscribers)\n",
        "        problem = None\n",
        (f"{SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a member refuses a client's subscribe beyond the topic's max_subscribers"),
    Mutation(
        "node-topics-uncapped", "lazily_queue/node_cells.py",
        "        storage.max_subscribers = self.max_subscribers\n",
        "",
        (f"{SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a node's topic cells carry the node's max_subscribers"),
    Mutation(
        "existing-subscriber-capped", "lazily_queue/names.py",
        "    if core is None or core.cursor(subscriber) is not None:\n",
        "    if core is None:\n",
        (f"{SUBS}::test_members_cap_the_subscriptions_of_a_topic",),
        "a subscriber that exists subscribes (reconnects) at the cap"),
    Mutation(
        "max-subscribers-key-ignored", "lazily_queue/config.py",
        "            \"max_subscribers\": self.max_subscribers,\n",
        "",
        (f"{SUBS}::test_the_subscriber_cap_is_a_node_option_and_a_config_key",),
        "`max_subscribers` in a node's TOML reaches the node"),
    Mutation(
        "tally-bucket-off-by-one", "lazily_queue/metrics_tallies.py",
        "        self.counts[bisect_left(self.bounds, value)] += 1",
        "        self.counts[bisect_left(self.bounds, value) + (value in self.bounds)] += 1",
        ("tests/integrations/test_metrics_tallies.py",),
        "an observation equal to a bucket bound counts in that bucket (le), as Prometheus says"),
    Mutation(
        "subscriber-delete-name-unserved", "lazily_queue/names.py",
        "    if code in SUBSCRIBES or code == ops.TOPIC_DELETE_SUBSCRIBER:",
        "    if code in SUBSCRIBES:",
        (f"{SUBS}::test_a_client_deletes_a_durable_subscriber_freeing_its_slot",),
        "a member refuses a client's deletion naming an overlong subscriber (RequestRefused)"),
    Mutation(
        "admin-subscriber-type-unchecked", "lazily_queue/admin.py",
        "    if not isinstance(subscriber, str):\n",
        "    if False:\n",
        (f"{SUBDEL_ADMIN}::test_admin_delete_subscriber_frees_a_slot",),
        "admin.delete_subscriber refuses a subscriber that is not a string with bad_request"),
    Mutation(
        "too-many-subscribers-no-operator-hint", "lazily_queue/names.py",
        "`lazily-queue queue delete-subscriber TOPIC ID` or the status page), or raise ",
        "the status page), or raise ",
        (f"{SUBDEL_ADMIN}::test_admin_delete_subscriber_frees_a_slot",),
        "TooManySubscribers tells an operator the command that frees a slot"),
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
        "subscriber-listing-offset-ignored", "lazily_queue/subscriber_listing.py",
        "    shown = ids[offset:offset + PAGE_SIZE]\n",
        "    shown = ids[:PAGE_SIZE]\n",
        (f"{LISTING}::test_every_subscriber_is_reached_by_offset_and_prefix",),
        "/subscribers.json reaches every subscriber of a topic, a page from the offset"),
    Mutation(
        "subscriber-listing-offset-unchecked", "lazily_queue/subscriber_listing.py",
        "    if not (raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_OFFSET))\n",
        "    if not (True or len(raw) <= len(str(MAX_OFFSET))\n",
        (f"{LISTING}::test_a_malformed_listing_query_is_a_400_naming_the_cause",),
        "a /subscribers.json offset that is not a whole number of 0..10^9 is a 400, no traceback"),
    Mutation(
        "survivors-not-frozen", "lazily_queue/service.py",
        "                self._thaw = freeze_survivors(may_thaw=guard.may_thaw, due=guard.due)\n",
        "                pass\n",
        ("tests/cli/test_node_allocator.py::"
         "test_a_node_process_spares_the_collector_what_it_held_when_started",),
        "a node process spares later full collections what survived an earlier one"),
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
        "config-host-unicode-error", "lazily_queue/config_keys.py",
        "            except (OSError, UnicodeError) as exc:",
        "            except OSError as exc:",
        ("tests/cli/test_node_config.py::test_a_huge_value_is_named_by_its_first_characters",),
        "a host name no resolver can encode is a ConfigError, not a traceback"),
    Mutation(
        "member-addresses-not-kept", "lazily_queue/node.py",
        "            self._addresses.get(member))",
        "            None)",
        ("tests/raft/test_membership_restart.py::"
         "test_a_restarted_founder_finds_its_cluster_and_catches_up",),
        "a restarted founder dials its members at the addresses it kept"),
    Mutation(
        "member-id-any-digits", "lazily_queue/member_checks.py",
        "    if not (text.isascii() and text.isdigit() and str(int(text)) == text\n"
        "            and int(text) < ID_BOUND):",
        "    if not text.isdigit():",
        (f"{HOSTILE}::test_a_member_id_no_node_can_have_is_refused",
         f"{CHECKS}::test_an_id_no_node_can_have_is_refused"),
        "no member id that no node can have is replicated as a voter"),
    Mutation(
        "metadata-copies-gone-accepted", "lazily_queue/datadir.py",
        "    if journal.getCurrentTerm() == 0 and \"node\" not in journal.meta and (",
        "    if False and (",
        ("tests/raft/test_data_dir_lock.py::"
         "test_a_directory_whose_metadata_copies_are_both_gone_is_damaged",),
        "a node that lost both metadata copies does not start forgetting its vote"),
    Mutation(
        "earlier-feature-taken-for-newer", "lazily_queue/datadir.py",
        "    return number >= 0 and any(n == name and m >= number",
        "    return False and any(n == name and m >= number",
        ("tests/raft/test_versions.py::"
         "test_a_directory_stamped_with_an_earlier_form_of_a_feature_loads",),
        "a data directory stamped by the version before a feature's bump loads"),
    Mutation(
        "planned-transfer-warns", "lazily_queue/state_log.py",
        "        elif (target := handing_over(self.node, gone, led)) is not None:",
        "        elif False and (target := handing_over(self.node, gone, led)):",
        ("tests/raft/test_transfer_notice.py::"
         "test_a_manual_transfer_is_logged_at_info_by_every_member",),
        "a planned leadership transfer is logged at INFO, naming the target, by every member"),
]
