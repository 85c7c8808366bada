"""``lazily-queue status``: a running node's view of the cluster, from its HTTP monitor."""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ..health import removed_reason
from .admin_client import (
    CliError,
    node_url,
    not_a_node,
    position,
    reach_note,
    refuse_port_zero,
    seconds,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show a running node's cluster status",
        description=(
            "Read GET /status.json from a running node (`lazily-queue node` with `http` "
            "set) and show the leader, term, commit and applied index, members with their "
            "match index and lag, and the depth, in-flight, dead letters and consumer lag "
            "of every queue, work queue and topic."
        ),
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the node's HTTP address, e.g. http://127.0.0.1:8101")
    where.add_argument("--config", metavar="FILE", help="the node's TOML file (uses `http`)")
    parser.add_argument("--json", action="store_true", help="print the raw JSON document")
    parser.add_argument("--timeout", type=seconds, default=5.0, help="seconds (default 5)")
    parser.add_argument("--require-leader", action="store_true",
                        help="exit with status 3 while the node knows no leader, reaches no "
                             "majority of the members, or was removed from the cluster")
    parser.add_argument("--kind", choices=("queues", "topics", "work_queues"),
                        help="list every object of this kind by name, a page at a time "
                             "(GET /objects.json), instead of the status (which lists the "
                             "largest of each kind)")
    parser.add_argument("--prefix", default="", help="with --kind: names starting with this")
    parser.add_argument("--offset", type=position, default=0,
                        help="with --kind: the page starting at this position")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.kind is None and (args.offset or args.prefix):
        print("error: --offset and --prefix page a listing of objects: add --kind queues, "
              "topics or work_queues", file=sys.stderr)
        return 2
    url = args.url
    if args.config is not None:
        from ..config import load_config
        from ..errors import InvalidConfiguration

        try:
            config = load_config(args.config)
            refuse_port_zero(args.config, config.http)
        except InvalidConfiguration as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except CliError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.code
        url = config.http_url
        if url is None:
            print(f"error: {args.config} has no `http` address; add `http = \"127.0.0.1:8101\"`"
                  " and restart the node, or pass --url", file=sys.stderr)
            return 2
    try:
        url = node_url(url)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    if args.kind is not None:
        return _objects(url, args)
    try:
        status = _get(url, "/status.json", args.timeout, STATUS_FIELDS)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
    elif (code := _show("render", status, f"{url.rstrip('/')}/status.json")) is not None:
        return code
    removed = status.get("removed")
    if args.require_leader and isinstance(removed, dict):
        print(f"error: {removed_reason(removed)}", file=sys.stderr)
        return 3
    if args.require_leader and not status.get("has_quorum", True):
        leader = _leader(status)
        why = ("no leader can be elected" if leader is None
               else f"its leader (node {leader}) may be gone")
        print(f"error: the node reaches no majority of the members, so {why} "
              f"({_leader_detail(status)}; unreachable: {_unreachable(status)})",
              file=sys.stderr)
        return 3
    if args.require_leader and _leader(status) is None:
        print(f"error: the node knows no leader yet ({_leader_detail(status)})", file=sys.stderr)
        return 3
    disk = status.get("disk")
    if (args.require_leader and status.get("state") == "leader" and isinstance(disk, dict)
            and disk.get("writable") is False):
        print("error: the node says it leads, but its journal is not writable, so it may no "
              "longer lead: it drops what the others send and they may have elected another "
              f"(ask them; {_leader_detail(status)}; journal: {disk.get('error')})",
              file=sys.stderr)
        return 3
    if args.require_leader and (journal := _leader_journal(status)) is not None:
        print(f"error: the leader (node {_leader(status)}) says its journal is not writable, "
              "so it may no longer lead: it drops what the others send and they may elect "
              f"another ({journal}; {_leader_detail(status)})", file=sys.stderr)
        return 3
    return 0


def _leader_journal(status: dict[str, Any]) -> str | None:
    """Asked of a member that does not lead: why the leader's journal is not writable, as
    the leader's vitals proven with the cluster secret say (``None`` when they do not)."""
    members = status.get("members")
    if status.get("state") == "leader" or not isinstance(members, list):
        return None
    for member in members:
        if not isinstance(member, dict) or member.get("id") != _leader(status) or \
                member.get("vitals_proof") != "proven":
            continue
        vitals = member.get("vitals")
        journal = vitals.get("journal") if isinstance(vitals, dict) else None
        if isinstance(journal, dict) and journal.get("writable") is False:
            at = member.get("vitals_at")
            age = f" {max(0.0, time.time() - at):.0f} s ago" if isinstance(at, (int, float)) else ""
            return f"its proven vitals read{age}: {journal.get('error')}"
    return None


def _objects(url: str, args: argparse.Namespace) -> int:
    """Print one page of ``/objects.json``."""
    query = urllib.parse.urlencode({"kind": args.kind, "prefix": args.prefix,
                                    "offset": max(0, args.offset)})
    try:
        page = _get(url, f"/objects.json?{query}", args.timeout, ("kind", "objects"))
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    if args.json:
        print(json.dumps(page, indent=2, sort_keys=True))
        return 0
    return _show("render_page", page, f"{url.rstrip('/')}/objects.json") or 0


def _show(view: str, document: dict[str, Any], source: str) -> int | None:
    """Print ``document`` with the :mod:`.status_view` function ``view`` (imported here:
    rich is loaded only to print tables); 1 after one line on stderr when it cannot read
    the document (a node of another version), else ``None``."""
    from . import status_view

    try:
        status_view.show(getattr(status_view, view), document)
    except status_view.ShapeError as exc:
        print(f"error: {source} is not a status document of this version of lazily-queue "
              f"({exc}); --json prints it as it is", file=sys.stderr)
        return 1
    return None


#: Fields every node's status document has.
STATUS_FIELDS = ("node", "cluster", "state")


class _NotANode(ValueError):
    """JSON that no node answers at that path."""


def _read_object(response: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object ``response`` holds, with each of ``keys``; else :class:`_NotANode`."""
    document = json.load(response)
    if not isinstance(document, dict) or any(key not in document for key in keys):
        raise _NotANode("it answered JSON without the fields " + ", ".join(keys))
    return document


def _get(url: str, path: str, timeout: float, fields: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object ``url`` answers at ``path``, with each of ``fields``; any failure
    raises :class:`CliError` with one line saying why and what to check."""
    node = url.rstrip("/")
    target = node + path
    try:
        with urllib.request.urlopen(target, timeout=timeout) as response:
            return _read_object(response, fields)
    except urllib.error.HTTPError as exc:
        body = " ".join(exc.read()[:300].decode(errors="replace").split())
        raise CliError(f"{target} answered {exc.code} {exc.reason}"
                       + (f": {body}" if body else "")) from None
    except (http.client.HTTPException, ValueError) as exc:
        why = str(exc) if isinstance(exc, _NotANode) else type(exc).__name__
        raise CliError(not_a_node(node, why, "status page")) from None
    except urllib.error.URLError as exc:
        raise CliError(f"cannot read {target}: {exc.reason}{reach_note(url, exc.reason)}; is the "
                       "node running with `http` set to this address?") from None
    except OSError as exc:
        raise CliError(f"cannot read {target}: {exc}{reach_note(url, exc)}; is the node "
                       "running with `http` set to this address?") from None


def _leader(status: dict[str, Any]) -> Any:
    return status.get("leader")


def _unreachable(status: dict[str, Any]) -> str:
    members = status.get("members")
    down = [str(m.get("id")) for m in members if isinstance(m, dict) and not m.get("reachable")
            ] if isinstance(members, list) else []
    return ", ".join(down) or "none known"


def _leader_detail(status: dict[str, Any]) -> str:
    return f"state {status.get('state')}, term {status.get('term')}"
