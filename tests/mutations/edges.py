"""Planted defects in the command line, web integrations, transports and examples."""

from __future__ import annotations

from .mutation import HOSTILE, PAGE_SUBS, SUBDEL_ADMIN, Mutation

MUTATIONS = [
    Mutation(
        "hmac", "transports/lazily_transports/_core/_authentication.py",
        "if hmac.compare_digest(proof, _proof(key,",
        "if True or hmac.compare_digest(proof, _proof(key,",
        ("tests/transports/test_authentication.py", "tests/raft/test_mesh_node.py"),
        "a peer without the cluster secret is refused"),
    Mutation(
        "shared-references", "transports/lazily_transports/safe_cbor.py",
        "            if tag not in tags:\n"
        "                decoders[tag] = functools.partial(_refuse_tag, tag)",
        "            if tag not in tags and tag not in (28, 29):\n"
        "                decoders[tag] = functools.partial(_refuse_tag, tag)",
        ("tests/transports/test_safe_cbor.py",),
        "CBOR shared references from peers are refused (no hash bomb)"),
    Mutation(
        "tag-budget-skips-built-in-tags", "transports/lazily_transports/safe_cbor.py",
        "        self._left -= cost\n",
        "        self._left -= cost if tag in self._decoders else 0\n",
        ("tests/transports/test_safe_cbor_tag_budget.py",
         "tests/client/test_client_frame_decoding.py::"
         "test_a_frame_past_the_tag_budget_is_refused_naming_the_tag_and_the_limit"),
        "a client frame's tagged values, those cbor2 builds without a hook too, are bounded"),
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
        "status-not-http", "lazily_queue/cli/status.py",
        "    except (http.client.HTTPException, ValueError) as exc:\n        "
        "why = str(exc) if isinstance(exc, _NotANode)",
        "    except ZeroDivisionError as exc:\n        "
        "why = str(exc) if isinstance(exc, _NotANode)",
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
        "cli-http-port-zero", "lazily_queue/cli/admin_client.py",
        "    if http is not None and http[1] == 0:",
        "    if False:",
        ("tests/cli/test_wrong_address.py",),
        "--config with `http` port 0 says to pass --url (it dialled port 0)"),
    Mutation(
        "admin-paging-unicode-digits", "lazily_queue/integrations/aiohttp_admin.py",
        "    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):",
        "    if not raw.isdigit():",
        (f"{HOSTILE}::test_malformed_paging_parameters_are_bad_requests",),
        "offset/limit of Unicode or 5,000 digits are 400, not a 500"),
    Mutation(
        "admin-purge-dead-letters-truthy", "lazily_queue/integrations/aiohttp_admin.py",
        "    if not isinstance(dead_letters, bool):",
        "    if False:",
        (f"{HOSTILE}::test_purge_takes_dead_letters_as_a_boolean",),
        'purge refuses a dead_letters that is not a boolean ("false" purged them)'),
    Mutation(
        "admin-body-one-read", "lazily_queue/integrations/aiohttp_admin.py",
        "            while len(raw) <= MAX_BODY:  # read() returns what has arrived",
        "            while not raw:  # read() returns what has arrived",
        (f"{HOSTILE}::test_a_body_is_read_whole_and_not_waited_for_forever",),
        "an admin request body split across TCP segments is read whole"),
    Mutation(
        "admin-body-no-deadline", "lazily_queue/integrations/aiohttp_admin.py",
        "        async with asyncio.timeout(BODY_TIMEOUT):",
        "        async with asyncio.timeout(None):",
        (f"{HOSTILE}::test_a_body_is_read_whole_and_not_waited_for_forever",),
        "a trickled admin body (unauthenticated login included) ends with 408"),
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
        "page-names-in-the-path", "lazily_queue/web/status.html",
        '"admin/api/queues/" + kind + "/_/" + button.dataset.action + "?" + named(name);',
        '"admin/api/queues/" + kind + "/" + encodeURIComponent(name) + "/" + '
        'button.dataset.action;',
        ("tests/integrations/test_status_page_names.py",),
        "the page purges objects named . and .. (a browser resolves them out of a path)"),
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
        "admin-subscriber-missing-not-404", "lazily_queue/integrations/aiohttp_admin.py",
        "    if not await admin.delete_subscriber(request.app[NODE], name, subscriber):",
        "    if not await admin.delete_subscriber(request.app[NODE], name, subscriber) and 0:",
        (f"{SUBDEL_ADMIN}::test_subscriber_route",),
        "deleting a subscriber the topic does not have answers 404 not_found, not success"),
    Mutation(
        "admin-subscriber-of-any-kind", "lazily_queue/integrations/aiohttp_admin.py",
        '    if kind != "topic":\n',
        "    if False:\n",
        (f"{SUBDEL_ADMIN}::test_subscriber_route",),
        "the subscriber route named with a queue's kind is refused, not run on a topic"),
    Mutation(
        "admin-subscriber-query-ignored", "lazily_queue/integrations/aiohttp_admin.py",
        '    subscriber = _segment(request, "subscriber")',
        '    subscriber = request.match_info["subscriber"]',
        (f"{SUBDEL_ADMIN}::test_subscriber_route",
         f"{SUBDEL_ADMIN}::test_cli_deletes_subscribers_named_like_path_segments"),
        "a subscriber id given as ?subscriber= (., .., the empty id) is the one deleted"),
    Mutation(
        "cli-empty-subscriber-in-path", "lazily_queue/cli/queue.py",
        "    if args.subscriber:\n",
        "    if True:\n",
        (f"{SUBDEL_ADMIN}::test_cli_deletes_subscribers_named_like_path_segments",),
        "queue delete-subscriber deletes the empty subscriber id (it cannot be a path segment)"),
    Mutation(
        "cli-empty-topic-sent", "lazily_queue/cli/admin_client.py",
        "    problem = name_problem(name, what)\n    if problem is not None:",
        "    problem = name_problem(name, what)\n    if False:",
        (f"{SUBDEL_ADMIN}::test_cli_deletes_subscribers_named_like_path_segments",
         "tests/cli/test_wrong_address.py::test_an_empty_name_is_a_usage_error_before_any_request"),
        "queue purge|delete|delete-subscriber and dlq list|redrive with an empty name are a "
        "usage error naming the cause"),
    Mutation(
        "page-subscriber-delete-unconfirmed", "lazily_queue/web/status.html",
        '<button type="button" id="subscriber-delete" data-confirm="1">',
        '<button type="button" id="subscriber-delete">',
        ("tests/integrations/test_status_page_names.py::"
         "test_page_deletes_a_subscriber_after_confirming",),
        "the page deletes a subscriber only after a confirming second click"),
    Mutation(
        "cli-follows-one-not-leader-answer", "lazily_queue/cli/admin_client.py",
        "                *, follow_leader: int = 2) -> Any:",
        "                *, follow_leader: int = 1) -> Any:",
        ("tests/cli/test_admin_cli.py::test_admin_commands_against_node_processes",),
        "members remove <leader> asked of a follower reaches the member that removes it"),
    Mutation(
        "page-subscribers-next-stuck", "lazily_queue/web/status.html",
        "browseSubscribers(listed.offset + listed.limit));",
        "browseSubscribers(listed.offset));",
        (PAGE_SUBS,),
        "the page pages through every subscriber of a topic past the ones its status lists"),
    Mutation(
        "page-listed-subscriber-delete-unconfirmed", "lazily_queue/web/status.html",
        'button.textContent = "delete subscriber"; button.dataset.confirm = "1";',
        'button.textContent = "delete subscriber";',
        (PAGE_SUBS,),
        "the page deletes a found subscriber only after a confirming second click"),
    Mutation(
        "config-value-shown-whole", "transports/lazily_transports/errors.py",
        "    return text if len(text) <= limit else",
        "    return text if True else",
        ("tests/cli/test_node_config.py::test_a_huge_value_is_named_by_its_first_characters",),
        "a huge configuration value is named by its first characters"),
    Mutation(
        "query-redirects-admin-delete", "lazily_queue/integrations/aiohttp_admin.py",
        "    if segment != \"_\":\n",
        "    if False:\n",
        (f"{HOSTILE}::test_a_query_never_redirects_a_delete_to_another_object",),
        "an admin request's query never makes it act on another object"),
    Mutation(
        "refused-dialer-redials-at-once", "transports/lazily_transports/_core/_peer_reach.py",
        "            if await self.serve(channel):\n",
        "            if await self.serve(channel) or True:\n",
        ("tests/raft/test_mesh_node.py::"
         "test_a_replaced_member_that_others_dial_is_told_why_they_refuse_it",),
        "peers refusing a member after authentication back off and tell it why"),
    Mutation(
        "stale-link-moved-before-tried", "lazily_queue/stale_peers.py",
        "            if self._seen.get(number) == state and mesh.failed_here(number):",
        "            if self._seen.get(number) == state:",
        ("tests/raft/test_stale_peers.py::"
         "test_a_link_moves_on_only_once_its_address_was_tried",),
        "a link moved to a member's other address is dialed there before it moves on"),
    Mutation(
        "dial-looks-its-host-up-twice", "transports/lazily_transports/schemes.py",
        "            if found is not None and isinstance(transport, HostTransport):",
        "            if False:",
        ("tests/transports/test_host_lookups.py",),
        "a dial of a host name looks it up once"),
    Mutation(
        "lookup-timeout-said-as-connect-timeout", "transports/lazily_transports/schemes.py",
        "        if named is not None and found is None:",
        "        if False:",
        ("tests/transports/test_unresolved_names.py",),
        "a dial whose host name lookup timed out says so, not that connecting did"),
]
