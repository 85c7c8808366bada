"""``lazily-queue rejoin --config FILE``: recover a node whose journal is damaged."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "rejoin",
        help="wipe a node whose journal is damaged so that it rejoins empty",
        description=(
            "For a stopped node whose journal, metadata or snapshot failed its checks: "
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
    parser.add_argument("--reset-features", action="store_true",
                        help="wipe nothing: drop only the unreadable `features` field of "
                             "the node's metadata (recorded again when it starts), keeping "
                             "its journal, snapshot, term and vote")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..datadir import ALONE_ADVICE, DataDirectoryLocked, DirectoryLock, disk_problem
    from ..errors import InvalidConfiguration

    try:
        config = load_config(args.config)
    except InvalidConfiguration as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.reset_features and not [p for p in config.peers if p != config.node_id]:
        print(f"error: node {config.node_id} lists no other member in [peers]: wiped, it "
              "would have nobody to catch up from; "
              + ALONE_ADVICE.format(then="run rejoin again"), file=sys.stderr)
        return 2
    raft_dir = config.data_dir / "raft"
    if not raft_dir.is_dir():
        print(f"error: {raft_dir} does not exist: node {config.node_id} has no data to "
              "recover", file=sys.stderr)
        return 2
    # Held until the wipe is done: a node started meanwhile would open what is removed.
    lock = DirectoryLock(config.data_dir)
    try:
        lock.acquire(owner="rejoin")
        stranger = _owner_mismatch(config.data_dir, raft_dir, str(config.node_id),
                                   config.cluster)
        if stranger is not None:
            print(f"error: {args.config}: {stranger}", file=sys.stderr)
            return 2
        if args.reset_features:
            return _reset_features(config.node_id, raft_dir)
        return _recover(config.node_id, raft_dir, force=args.force)
    except DataDirectoryLocked:
        print(f"error: node {config.node_id} is running (it holds {lock.path}); stop it first",
              file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot recover node {config.node_id}: {disk_problem(exc)}, then run "
              "rejoin again", file=sys.stderr)
        return 4
    finally:
        lock.release()


def _owner_mismatch(data_dir: Path, raft_dir: Path, node_id: str, cluster: str) -> str | None:
    """Why ``data_dir`` is another node's or cluster's (as its metadata records), and the
    fix, or ``None``; metadata that cannot be read is for :func:`_recover` to judge."""
    from ..datadir import owner_mismatch
    from ..raft.disk import OsDisk
    from ..raft.journal import JournalError
    from ..raft.meta import RECORDED_AGAIN, MetaStore

    store = MetaStore(OsDisk(), str(raft_dir / "journal.meta"))
    try:
        meta = store.load(dropping=RECORDED_AGAIN)
    except JournalError:
        return None
    owner, found = meta.get("node"), meta.get("cluster")
    if owner is None or (owner == node_id and found == cluster):
        return None
    return owner_mismatch(data_dir, store.read_from or store.path, meta, node_id, cluster,
                          undone="removed")


def _reset_features(node_id: int | str, raft_dir: Path) -> int:
    """Rewrite both metadata copies of ``raft_dir`` without an unreadable ``features``
    field; refuses when it is readable, or when the term and vote are not."""
    from ..raft.disk import OsDisk
    from ..raft.journal import JournalError
    from ..raft.meta import RECORDED_AGAIN, MetaStore, UnreadableFeatures

    store = MetaStore(OsDisk(), str(raft_dir / "journal.meta"))
    try:
        store.load()
    except UnreadableFeatures:
        pass
    except JournalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    else:
        print(f"error: the `features` field of node {node_id}'s metadata is readable; "
              "nothing to reset", file=sys.stderr)
        return 2
    store.store(store.load(dropping=RECORDED_AGAIN))
    print(f"node {node_id}: the unreadable `features` field of its metadata was dropped "
          "(it records it again when it starts); its journal, snapshot, term and vote are "
          "kept: start it again")
    return 0


def _recover(node_id: int | str, raft_dir: Path, *, force: bool) -> int:
    """Check the journal, metadata and snapshot of ``raft_dir`` and wipe them for a rejoin
    when damaged (or ``force``); raises ``OSError`` before anything is removed when
    one of them cannot be read."""
    from ..datadir import check_complete
    from ..raft.disk import OsDisk
    from ..raft.journal import DurableJournal, JournalError
    from ..raft.meta import MetaStore, UnreadableFeatures
    from ..raft.rejoin import check_continues, wipe_for_rejoin
    from ..raft.replica import check_stored_state
    from ..raft.snapshot import SnapshotError, decode_snapshot
    from ..replicated.state_machine import StateMachine

    disk = OsDisk()
    damaged: list[str] = []
    snapshot_path = raft_dir / "snapshot.cbor"
    journal = None
    try:
        journal = DurableJournal(disk, str(raft_dir))
        check_complete(journal, disk, str(snapshot_path))
    except UnreadableFeatures as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except JournalError as exc:
        damaged.append(f"damaged journal: {exc}")
    finally:
        disk.close()
    raw = disk.read(str(snapshot_path))
    if raw is not None:
        try:
            doc = decode_snapshot(raw)
            check_stored_state(StateMachine(), doc["state"])
            if journal is not None:
                check_continues(journal, doc)
        except SnapshotError as exc:
            damaged.append(f"damaged snapshot: {snapshot_path}: {exc}")
    if not damaged and not force:
        print(f"error: the journal of node {node_id} passes its checks, and so does its "
              "snapshot; nothing to recover (use --force to wipe them anyway)",
              file=sys.stderr)
        return 2
    for problem in damaged:
        print(problem)
    try:
        MetaStore(disk, str(raft_dir / "journal.meta")).load()
        vote = "term and vote kept; start it again"
    except JournalError:
        vote = ("its term and vote were unreadable and are lost, so it could vote twice in "
                "a term: start it again only once the other members have a leader")
    term, index = wipe_for_rejoin(disk, str(raft_dir), str(snapshot_path))
    print(f"node {node_id}: journal and snapshot removed, {vote}: it catches up from "
          f"the leader and will not vote until its log reaches term {term} index {index}")
    return 0
