"""``lazily-queue rejoin --config FILE``: recover a node whose journal is damaged."""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rejoin",
        help="wipe a node whose journal is damaged so that it rejoins empty",
        description=(
            "For a stopped node whose journal failed its checks (JournalCorruptedError): "
            "remove its journal and snapshot, keep its term and vote, and record the newest "
            "entry it held, so that it catches up from the leader and takes no part in "
            "elections until its log is at least that recent. Never delete a data "
            "directory by hand instead: the node could then vote twice or elect a member "
            "that lacks entries committed with its help. Refuses a healthy journal unless "
            "--force is given, and a node that is running."
        ),
    )
    parser.add_argument("--config", required=True, metavar="FILE", help="the node's TOML file")
    parser.add_argument("--force", action="store_true",
                        help="wipe even though the journal passes its checks")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..errors import InvalidConfiguration
    from ..raft.disk import OsDisk
    from ..raft.journal import DurableJournal, JournalError
    from ..raft.meta import MetaStore
    from ..raft.rejoin import wipe_for_rejoin

    try:
        config = load_config(args.config)
    except InvalidConfiguration as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    raft_dir = config.data_dir / "raft"
    if not raft_dir.is_dir():
        print(f"error: {raft_dir} does not exist: node {config.node_id} has no data to "
              "recover", file=sys.stderr)
        return 2
    lock = config.data_dir / "lock"
    if lock.exists():
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"error: node {config.node_id} is running (it holds {lock}); stop it first",
                  file=sys.stderr)
            return 2
        finally:
            os.close(fd)
    disk = OsDisk()
    try:
        DurableJournal(disk, str(raft_dir))
        damaged = None
    except JournalError as exc:
        damaged = exc
    if damaged is None and not args.force:
        print(f"error: the journal of node {config.node_id} passes its checks; nothing to "
              "recover (use --force to wipe it anyway)", file=sys.stderr)
        return 2
    if damaged is not None:
        print(f"damaged journal: {damaged}")
    try:
        MetaStore(disk, str(raft_dir / "journal.meta")).load()
        vote = "term and vote kept; start it again"
    except JournalError:
        vote = ("its term and vote were unreadable and are lost, so it could vote twice in "
                "a term: start it again only once the other members have a leader")
    term, index = wipe_for_rejoin(disk, str(raft_dir), str(raft_dir / "snapshot.cbor"))
    print(f"node {config.node_id}: journal and snapshot removed, {vote}: it catches up from "
          f"the leader and will not vote until its log reaches term {term} index {index}")
    return 0
