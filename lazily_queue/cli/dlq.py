"""``lazily-queue dlq list|redrive``: a work queue's dead letters."""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import quote

from .admin_client import (
    AdminClient,
    add_target_arguments,
    check_name,
    emit,
    page_size,
    position,
    run,
    table,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dlq", help="browse or redrive a work queue's dead letters (admin API)",
        description="Browse a work queue's dead letters or move them back to its pending "
                    "items, through a node's admin API (needs the admin token). Every action "
                    "takes --url URL or --config FILE, --token-env NAME or --token-file FILE, "
                    "--timeout and --json; list takes --offset and --limit, redrive --item ID "
                    "(repeatable).")
    commands = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = commands.add_parser("list", help="the dead letters, oldest first")
    listing.add_argument("name", help="the work queue")
    listing.add_argument("--offset", type=position, default=0)
    listing.add_argument("--limit", type=page_size, default=100, help="at most 1000")
    add_target_arguments(listing)
    listing.set_defaults(handler=lambda args: run(_list, args))
    redrive = commands.add_parser("redrive", help="move dead letters back to pending")
    redrive.add_argument("name", help="the work queue")
    redrive.add_argument("--item", type=int, action="append", dest="items", metavar="ID",
                         help="only this item id (repeatable); default: every dead letter")
    add_target_arguments(redrive)
    redrive.set_defaults(handler=lambda args: run(_redrive, args))


def _list(client: AdminClient, args: argparse.Namespace) -> None:
    check_name(args.name, "work queue name")
    doc = client.get(f"/dlq/{quote(args.name, safe='')}?offset={args.offset}"
                     f"&limit={args.limit}")
    rows = [(d["item_id"], json.dumps(d["value"])[:60], d["attempts"], d["reason"])
            for d in doc["dead_letters"]]
    shown = f"{len(rows)} of {doc['total']} dead letter(s) of {args.name}"
    emit(args, doc, (table(("item", "value", "attempts", "reason"), rows) + "\n" + shown)
         if rows else shown)


def _redrive(client: AdminClient, args: argparse.Namespace) -> None:
    check_name(args.name, "work queue name")
    doc = client.post(f"/dlq/{quote(args.name, safe='')}/redrive", {"item_ids": args.items})
    line = f"redrove {doc['redriven']} dead letter(s) of {args.name}"
    missing = len(set(args.items or ())) - doc["redriven"]
    if args.items and missing > 0:
        line += (f"; {missing} of the item ids given {'is' if missing == 1 else 'are'} not "
                 "among its dead letters (redriven already, or never dead-lettered)")
    emit(args, doc, line)
