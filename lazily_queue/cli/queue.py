"""``lazily-queue queue list|purge|delete|delete-subscriber``: queues, work queues and
topics of a cluster."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from .admin_client import (
    AdminClient,
    CliError,
    add_target_arguments,
    check_name,
    emit,
    run,
    table,
)

KINDS = ("queue", "work_queue", "topic")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "queue", help="list, purge or delete queues (admin API)",
        description="List, purge or delete the queues, work queues and topics of a cluster, "
                    "or delete one subscriber of a topic, through a node's admin API (needs "
                    "the admin token). Every action takes "
                    "--url URL or --config FILE, --token-env NAME or --token-file FILE, "
                    "--timeout and --json; purge and delete take --kind, purge "
                    "--dead-letters.")
    commands = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = commands.add_parser("list", help="every queue, work queue and topic")
    add_target_arguments(listing)
    listing.set_defaults(handler=lambda args: run(_list, args))
    for action, text in (("purge", "drop every element (work queue: every pending item, or "
                                   "with --dead-letters every dead letter)"),
                         ("delete", "forget the object and everything it holds")):
        sub = commands.add_parser(action, help=text, description=text)
        sub.add_argument("name")
        sub.add_argument("--kind", choices=KINDS,
                         help="needed only when two kinds share the name")
        if action == "purge":
            sub.add_argument("--dead-letters", action="store_true",
                             help="purge a work queue's dead letters instead")
        add_target_arguments(sub)
        sub.set_defaults(handler=lambda args, action=action: run(_change(action), args))
    text = ("forget one subscriber of a topic, durable or not: it frees one of the topic's "
            "max_subscribers slots and the elements it held back")
    sub = commands.add_parser("delete-subscriber", help=text, description=text)
    sub.add_argument("topic")
    sub.add_argument("subscriber")
    add_target_arguments(sub)
    sub.set_defaults(handler=lambda args: run(_delete_subscriber, args))


def _list(client: AdminClient, args: argparse.Namespace) -> None:
    doc = client.get("/queues")
    rows = [(q["kind"], q["name"], q["depth"], q.get("in_flight"), q.get("dead_letters"),
             q.get("subscribers")) for q in doc["queues"]]
    emit(args, doc, table(("kind", "name", "depth", "in flight", "dead letters",
                           "subscribers"), rows) if rows else "no queues")


def kind_of(client: AdminClient, name: str, kind: str | None) -> str:
    """The kind of the object called ``name`` (asked when not given)."""
    if kind is not None:
        return kind
    kinds = [q["kind"] for q in client.get("/queues")["queues"] if q["name"] == name]
    if not kinds:
        raise CliError(f"not_found: no queue, work queue or topic is called {name!r}")
    if len(kinds) > 1:
        raise CliError(f"{name!r} names a {' and a '.join(kinds)}; pass --kind", 2)
    return str(kinds[0])


def _change(action: str) -> Any:
    def change(client: AdminClient, args: argparse.Namespace) -> None:
        check_name(args.name, "name")
        kind = kind_of(client, args.name, args.kind)
        body = {"dead_letters": True} if getattr(args, "dead_letters", False) else {}
        doc = client.post(f"/queues/{kind}/{quote(args.name, safe='')}/{action}", body)
        if action == "purge":
            what = "dead letter(s)" if body else "element(s)"
            text = f"purged {kind} {args.name}: {doc['removed']} {what} dropped"
        else:
            text = f"deleted {kind} {args.name} (it held {doc['held']})"
        emit(args, doc, text)

    return change


def _delete_subscriber(client: AdminClient, args: argparse.Namespace) -> None:
    check_name(args.topic, "topic name")
    path = f"/queues/topic/{quote(args.topic, safe='')}/subscribers"
    if args.subscriber:
        path += f"/{quote(args.subscriber, safe='')}/delete"
    else:  # an empty id cannot be a path segment: it goes in the query
        path += "/_/delete?subscriber="
    doc = client.post(path)
    emit(args, doc, f"deleted subscriber {args.subscriber} of topic {args.topic}")
