"""``lazily-queue members list|add|remove|transfer``: the members of a cluster."""

from __future__ import annotations

import argparse
from typing import Any

from .admin_client import AdminClient, CliError, add_target_arguments, emit, run, table


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "members", help="list, add or remove members, transfer leadership (admin API)",
        description="Membership of a cluster through a node's admin API (needs the admin "
                    "token). Changes are made on the leader: a follower's answer names it "
                    "and the command asks it (a leader removing itself hands over first). "
                    "Every action takes --url URL or --config FILE, --token-env NAME or "
                    "--token-file FILE, --timeout and --json.")
    commands = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = commands.add_parser("list", help="members, roles, reachability and lag")
    add_target_arguments(listing)
    listing.set_defaults(handler=lambda args: run(_list, args))
    add = commands.add_parser("add", help="add a member (then start it with every member "
                                          "in its [peers])")
    add.add_argument("id", type=int)
    add.add_argument("address", help="its Raft address, e.g. tcp://10.0.0.4:7001")
    add.add_argument("--force", action="store_true",
                     help="add it even though the cluster would lose its quorum until it "
                          "runs (refused otherwise while another member is down)")
    add_target_arguments(add)
    add.set_defaults(handler=lambda args: run(_add, args))
    remove = commands.add_parser("remove", help="remove a member (then stop it)")
    remove.add_argument("id", type=int)
    remove.add_argument("--force", action="store_true",
                        help="remove it even though the others reachable would be no majority")
    add_target_arguments(remove)
    remove.set_defaults(handler=lambda args: run(_remove, args))
    transfer = commands.add_parser("transfer", help="hand leadership to a member")
    transfer.add_argument("id", type=int, nargs="?",
                          help="the new leader (default: the most caught-up follower)")
    add_target_arguments(transfer)
    transfer.set_defaults(handler=lambda args: run(_transfer, args))


def _list(client: AdminClient, args: argparse.Namespace) -> None:
    doc = client.get("/members")
    rows = [(m["id"] + (" (this node)" if m["self"] else ""), m["role"],
             "up" if m["reachable"] else "DOWN", m["match_index"], m["lag"], m["page"])
            for m in doc["members"]]
    emit(args, doc, table(("id", "role", "link", "match index", "lag", "page"), rows))


def check_address(address: str, member: int) -> None:
    """Refuse an address no member could listen on (a typo would otherwise be replicated
    as a member's address, and the cluster would wait for a node that cannot exist)."""
    from ..member_checks import address_refusal

    refusal = address_refusal(address, str(member))
    if refusal is not None:
        raise CliError(f"address {address!r}: {refusal}; nothing was changed", 2)


def _add(client: AdminClient, args: argparse.Namespace) -> None:
    check_address(args.address, args.id)
    body: dict[str, Any] = {"id": args.id, "address": args.address}
    if args.force:
        body["force"] = True
    doc = client.post("/members", body)
    emit(args, doc, f"added node {args.id} at {args.address}; start it now")


def _remove(client: AdminClient, args: argparse.Namespace) -> None:
    doc = client.post(f"/members/{args.id}/remove", {"force": True} if args.force else None)
    emit(args, doc, f"removed node {args.id}; stop it now")


def _transfer(client: AdminClient, args: argparse.Namespace) -> None:
    doc = client.post("/leadership", {"to": args.id})
    emit(args, doc, f"node {doc['leader']} leads now")
