"""Checks of a node configuration's single keys and small tables: ids, strings,
addresses, ``[peers]``, ``http``, ``[app]``, ``[dedup]`` and ``[metrics]``.

Each takes the ``fail`` callable of :func:`lazily_queue.config.parse_config`, which turns a
message into a :class:`~lazily_queue.config.ConfigError` naming the file.
"""

from __future__ import annotations

import logging
import re
import socket
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from lazily_transports import DEFAULT_SCHEMES, AddressError, MissingDependencyError, scheme_of

from .config_transport import CLOSE, refuse_unknown_keys
from .core.dedup import DedupLimits
from .errors import InvalidConfiguration, shown, shown_path
from .metrics_names import DEFAULT_NAMED_OBJECTS, check_named_objects
from .names import check_max_objects

log = logging.getLogger("lazily_queue.config")

_HTTP = re.compile(r"^(?:http://)?(?P<host>\[[0-9a-fA-F:]+\]|[^:/\[\]]+):(?P<port>\d+)/?$")


#: The longest environment variable name a configuration may give.
MAX_ENV_NAME = 256


def refuse_odd_text(value: Any, fail: Any, where: str = "") -> None:
    """Fail naming the first key whose text holds a NUL character (no name, address,
    path or token can hold one: the system refuses it in a file name, say), or whose
    environment variable name (a ``*_env`` key) no environment can hold."""
    if isinstance(value, str):
        if where.endswith("_env") and (len(value) > MAX_ENV_NAME or "=" in value):
            raise fail(f"`{_where(where)}` must name an environment variable (at most "
                       f"{MAX_ENV_NAME} characters, no \"=\"), not {shown(value)}")
        if "\x00" in value:
            raise fail(f"`{_where(where)}` holds a NUL character (\\u0000); no name, "
                       "address, path or token can hold one: remove it")
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_odd_text(key, fail, f"{where}.{key}" if where else str(key))
            refuse_odd_text(item, fail, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            refuse_odd_text(item, fail, f"{where}[{index + 1}]")


def _where(where: str) -> str:
    return shown_path(where.replace("\x00", "\\u0000"), 80)


def parse_dedup(table: Any, fail: Any) -> DedupLimits | None:
    """The ``[dedup]`` table as limits (``None`` when absent)."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise fail("`dedup` must be a table: [dedup] max_entries = N, max_age = SECONDS")
    refuse_unknown_keys(table, {"max_entries", "max_age"}, "[dedup]", fail)
    try:
        return DedupLimits(**table)
    except InvalidConfiguration as exc:
        raise fail(f"[dedup]: {exc}") from None


def parse_metrics(table: Any, fail: Any) -> int:
    """The ``[metrics]`` table's ``named_objects`` (its default when absent)."""
    if table is None:
        return DEFAULT_NAMED_OBJECTS
    if not isinstance(table, dict):
        raise fail("`metrics` must be a table: [metrics] named_objects = N")
    refuse_unknown_keys(table, {"named_objects"}, "[metrics]", fail)
    try:
        return check_named_objects(table.get("named_objects", DEFAULT_NAMED_OBJECTS))
    except InvalidConfiguration as exc:
        raise fail(f"[metrics]: {exc}") from None


def parse_max_objects(value: Any, fail: Any) -> int:
    """``max_objects``: the queues, topics and work queues the cluster holds, >= 1."""
    try:
        return check_max_objects(value)
    except InvalidConfiguration:
        raise fail(f"`max_objects` must be an int >= 1 (queues, topics and work queues "
                   f"together), not {shown(value)}") from None


def parse_max_subscribers(value: Any, fail: Any) -> int:
    """``max_subscribers``: the subscriptions one topic holds, >= 1."""
    try:
        return check_max_objects(value, "max_subscribers")
    except InvalidConfiguration:
        raise fail(f"`max_subscribers` must be an int >= 1 (subscriptions of one topic), "
                   f"not {shown(value)}") from None


def parse_string(value: Any, fail: Any, key: str) -> str:
    """``value`` as a non-empty string."""
    if not isinstance(value, str) or not value:
        raise fail(f"`{key}` must be a non-empty string, not {shown(value)}")
    return value


def parse_node_id(value: Any, fail: Any, what: str) -> int:
    """``value`` (an int or a string of digits) as a node id in 0..2**64-1."""
    if isinstance(value, str) and value.strip().isdigit():
        try:
            value = int(value)
        except ValueError:  # digits int() does not read, such as "²": refused below
            pass
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise fail(f"{what} must be an integer node id in 0..2**64-1, not {shown(value)}")
    return value


def parse_peers(raw: Any, fail: Any) -> dict[int, str]:
    """The ``[peers]`` table as node id -> address; each id once."""
    if not isinstance(raw, dict):
        raise fail("[peers] must be a table of `id = \"address\"` lines")
    peers: dict[int, str] = {}
    for key, address in raw.items():
        peer = parse_node_id(key, fail, f"[peers] key {shown(key)}")
        if peer in peers:
            raise fail(f"[peers] lists node {peer} twice; every node needs its own id")
        peers[peer] = parse_string(address, fail, f"peers.{key}")
    return peers


#: The address schemes a member can listen on, as advice.
SCHEMES_HINT = "use unix:, tcp:, tls:, ws:, wss:, webrtc+ws: or webrtc+wss:"


def link_address_host(address: str, *, listening: bool,
                      node_id: int | None = None) -> tuple[str, int] | None:
    """Check ``address`` by its transport's own rules, raising ``AddressError`` naming
    what is wrong; returns the ``(host, port)`` it names, for those that have one to
    resolve. A WebRTC address of ``node_id`` must name it with ``?peer=`` (a listen
    address may leave it out). Whitespace and control characters are refused: no
    listener could be reached under such a name."""
    if not address.isprintable() or any(c.isspace() for c in address):
        raise AddressError(f"{shown(address)}: an address has no spaces or control characters")
    scheme = scheme_of(address)
    if scheme == "unix":
        from lazily_transports.sockets import parse_unix

        parse_unix(address)
        return None
    if scheme in ("tcp", "tls"):
        from lazily_transports.sockets import parse_tcp

        return parse_tcp(address, listening=listening)
    if scheme in ("ws", "wss"):
        from lazily_transports.websocket import parse_websocket

        _, host, port, _ = parse_websocket(address, listening=listening)
        return host, port
    if scheme.startswith("webrtc"):
        DEFAULT_SCHEMES.transport(scheme)  # MissingDependencyError without the extra
        from lazily_transports.webrtc import parse_webrtc_address

        peer = parse_webrtc_address(address).peer
        if node_id is not None and peer != node_id and not (listening and peer is None):
            raise AddressError(f"{shown(address)} is node {node_id}'s address: it must end in "
                               f"?peer={node_id}, not {'no ?peer=' if peer is None else peer}")
    return None


def check_address(address: str, fail: Any, what: str, *, listening: bool,
                  node_id: int | None = None) -> tuple[str, str] | None:
    """Refuse an address whose scheme, form, host, socket directory or optional extra is
    not usable here (``node_id``: the node the address is of). A host name that does
    not resolve now refuses an address to listen on (it must be bound), as does one no
    resolver could ever answer for (:func:`never_resolves`); a peer's is returned
    instead with the resolver's reason (``None`` when it resolves), as it may be
    published in DNS only once that peer runs."""
    try:
        scheme = scheme_of(address)
        if scheme == "unix":
            from lazily_transports.sockets import parse_unix

            path = Path(parse_unix(address))
            if not path.parent.is_dir():
                raise fail(
                    f"{what} address {shown(address)}: directory {path.parent} does not exist; "
                    "create it or choose another socket path"
                )
        elif scheme not in DEFAULT_SCHEMES:
            raise fail(f"{what} address {shown(address)}: unsupported scheme {shown(scheme)} "
                       f"({SCHEMES_HINT})")
        named = link_address_host(address, listening=listening, node_id=node_id)
        unresolved = None
        if named is not None:
            host, port = named
            try:
                socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as exc:  # UnicodeError: a label over 63 characters
                reason = getattr(exc, "strerror", None) or exc
                never = None if isinstance(exc, UnicodeError) else never_resolves(host)
                if listening or isinstance(exc, UnicodeError) or never is not None:
                    raise fail(f"{what} address {shown(address)}: host {shown(host)} cannot "
                               f"be resolved ({never or reason})") from None
                unresolved = (host, str(reason))
        DEFAULT_SCHEMES.transport(scheme)  # an optional extra it needs must be installed
        return unresolved
    except MissingDependencyError as exc:
        raise fail(f"{what} address {shown(address)}: {exc}") from None
    except AddressError as exc:
        raise fail(f"{what} address: {exc}") from None


#: A host name's label: letters (any script), digits, ``-`` and ``_`` (service names of
#: container networks), neither first nor last a ``-``.
_LABEL = re.compile(r"(?!-)[\w-]{1,63}(?<!-)")


def never_resolves(host: str) -> str | None:
    """Why no resolver could ever answer for ``host`` (a mistyped IPv4 address, a name
    breaking the host name syntax), or ``None``."""
    if re.fullmatch(r"[\d.]+", host):
        return "not an IPv4 address: four numbers from 0 to 255 joined by dots"
    name = host[:-1] if host.endswith(".") else host
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
        return ("not a host name: labels of letters, digits, - and _ joined by dots, at "
                "most 63 characters each and 253 in all")
    return None


def say_unresolved(node_id: int, unresolved: dict[int, tuple[str, str]],
                   peers: dict[int, str]) -> None:
    """Warn once of each peer whose host name did not resolve (``unresolved``: peer ->
    host and the resolver's reason, as :func:`check_address` returned them)."""
    for peer, (host, reason) in unresolved.items():
        log.warning("node %s: peer %s's host %s (%s in [peers]) does not resolve yet (%s); "
                    "this node keeps trying it with backoff and links once the name "
                    "resolves: if it never links, check the name", node_id, peer, shown(host),
                    shown(peers[peer]), reason)


def parse_http(raw: Any, fail: Any) -> tuple[str, int] | None:
    """``http = "HOST:PORT"`` as ``(host, port)`` (``None`` when absent)."""
    if raw is None:
        return None
    match = _HTTP.match(raw) if isinstance(raw, str) else None
    if match is None or not 0 <= int(match["port"]) < 65536:
        raise fail(f"`http` must be \"HOST:PORT\" (e.g. \"127.0.0.1:8101\"), not {shown(raw)}")
    return match["host"].strip("[]"), int(match["port"])


def parse_app(raw: Any, fail: Any) -> tuple[str | None, dict[str, Any]]:
    """The ``[app]`` table as ``(entry, options)``; ``(None, {})`` when absent."""
    if raw is None:
        return None, {}
    if not isinstance(raw, dict) or not isinstance(raw.get("entry"), str):
        close = get_close_matches("entry", list(raw), n=1, cutoff=CLOSE) if isinstance(
            raw, dict) and "entry" not in raw else []
        meant = f" (it has {shown(close[0])}: a misspelt entry?)" if close else ""
        raise fail(f"[app] needs `entry = \"package.module:function\"`{meant}")
    entry = raw["entry"]
    if entry.count(":") != 1 or not all(entry.split(":")):
        raise fail(f"[app] entry must look like \"package.module:function\", not {shown(entry)}")
    return entry, {k: v for k, v in raw.items() if k != "entry"}

