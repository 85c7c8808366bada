"""Checks of the settings a :class:`~lazily_queue.node.Node` is made with: each wrong one
raises at construction naming the setting, before anything starts."""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Mapping
from typing import Any

from .core.numbers import FOREVER, is_finite
from .errors import InvalidConfiguration, shown
from .raft.batch import MAX_MESSAGE_BYTES_LIMIT


def check_seconds(value: Any, name: str, *, optional: bool = False) -> None:
    """``value`` is seconds above 0 (``None`` too when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not is_finite(value) or not 0 < value <= FOREVER:
        either = " or None" if optional else ""
        raise InvalidConfiguration(f"{name} must be a number of seconds above 0 and at most "
                                   f"{FOREVER:.0e}{either}, not {shown(value)}")


def check_settings(*, cluster: Any, peers: Any, op_timeout: Any, tick_interval: Any,
                   maintenance_interval: Any, topic_gc_interval: Any, disk_retry: Any,
                   kinds: Mapping[str, tuple[Any, type]], max_message_bytes: Any) -> None:
    """Raise for the first wrong setting; ``kinds``: name -> (value, the class it must be
    an instance of when given)."""
    if not isinstance(cluster, str) or not cluster:
        raise InvalidConfiguration(f"cluster must be a non-empty str, not {shown(cluster)}")
    if peers is not None and not isinstance(peers, Mapping):
        raise InvalidConfiguration(
            f"peers must be a mapping of node id to address, not {shown(peers)}")
    for name, value in (("op_timeout", op_timeout), ("tick_interval", tick_interval),
                        ("topic_gc_interval", topic_gc_interval), ("disk_retry", disk_retry)):
        check_seconds(value, name)
    check_seconds(maintenance_interval, "maintenance_interval", optional=True)
    for name, (value, kind) in kinds.items():
        if value is not None and not isinstance(value, kind):
            raise InvalidConfiguration(
                f"{name} must be a {kind.__name__} or None, not {shown(value)}")
    if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int) \
            or not 1024 <= max_message_bytes <= MAX_MESSAGE_BYTES_LIMIT:
        raise InvalidConfiguration(
            f"max_message_bytes must be an int from 1024 to {MAX_MESSAGE_BYTES_LIMIT} "
            f"(bytes), not {shown(max_message_bytes)}")


def check_data_dir(data_dir: Any, durability: str) -> None:
    """``data_dir`` is a directory's path, or None (a temporary directory) with
    ``durability='none'``."""
    if data_dir is None:
        if durability == "fsync":
            raise InvalidConfiguration(
                "data_dir is required with durability='fsync'; pass durability='none' for "
                "an ephemeral node whose data lives in a temporary directory"
            )
    elif not isinstance(data_dir, str | os.PathLike) or not os.fspath(data_dir):
        raise InvalidConfiguration(f"data_dir must be a directory's path, not "
                                   f"{shown(data_dir)}")


def peer_address_problem(node_id: object, listen: str | None,
                         peers: Mapping[Any, str], own_id: str,
                         same: Callable[[str, str], bool] = operator.eq) -> str | None:
    """Why the addresses of ``peers`` would dial the wrong process: another peer listed
    at this node's own ``listen`` address, or two peers at one address; ``None`` when
    they would not. ``own_id`` says how to give this node id ``{peer}``; ``same`` says
    whether two addresses lead to one listener (by default, when they are equal)."""
    seen: list[tuple[str, object]] = []
    for peer, address in peers.items():
        if str(peer) == str(node_id):
            continue
        if listen is not None and same(address, listen):
            spelled = "" if address == listen else f" ({shown(address)} leads there)"
            return (f"peer {peer} has this node's own listen address {shown(listen)}"
                    f"{spelled}; if this node is {peer}, {own_id.format(peer=peer)}, else "
                    "give it its own `listen` address")
        for earlier, owner in seen:
            if same(address, earlier):
                spelled = "" if address == earlier else f" ({shown(earlier)} leads there)"
                return (f"peers {owner} and {peer} share the address {shown(address)}"
                        f"{spelled}; give each member its own")
        seen.append((address, peer))
    return None
