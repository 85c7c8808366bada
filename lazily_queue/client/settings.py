"""The ``[[client]]`` tables of a node configuration: who may connect as a client.

::

    [[client]]
    name = "web"
    token_env = "ORDERS_WEB_TOKEN"      # its token, from this variable ...
    # token_file = "web.token"          # ... or this file: exactly one of the two
    produce = ["jobs", "orders.*"]      # name patterns (see lazily_queue.client.access)
    consume = ["jobs"]
    admin = []

Tokens are never written in the configuration; they are read when the node is built.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazily_transports import TLSConfigError, TLSFiles, scheme_of

from ..errors import InvalidConfiguration

if TYPE_CHECKING:
    from .access import ClientAccess

CLIENT_KEYS = frozenset({"name", "token_env", "token_file", "produce", "consume", "admin"})

Fail = Callable[[str], Exception]


@dataclass(frozen=True)
class ClientConfig:
    """One ``[[client]]`` table: a name, where its token is, its permissions."""

    name: str
    token_env: str | None = None
    token_file: Path | None = None
    produce: tuple[str, ...] = ()
    consume: tuple[str, ...] = ()
    admin: tuple[str, ...] = ()


def _string(value: Any, fail: Fail, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise fail(f"`{key}` must be a non-empty string, not {value!r}")
    return value


def parse_clients(raw: Any, base: Path, fail: Fail) -> tuple[ClientConfig, ...]:
    if not isinstance(raw, list):
        raise fail("clients are [[client]] tables (name, token_env or token_file, produce, "
                   "consume, admin)")
    found: dict[str, ClientConfig] = {}
    for table in raw:
        if not isinstance(table, dict):
            raise fail("every [[client]] is a table")
        unknown = sorted(set(table) - CLIENT_KEYS)
        if unknown:
            raise fail(f"[[client]] has unknown key(s) {', '.join(unknown)}; the known keys "
                       f"are {', '.join(sorted(CLIENT_KEYS))}")
        name = _string(table.get("name"), fail, "client.name")
        if name in found:
            raise fail(f"[[client]] {name!r} is listed twice")
        where = f"[[client]] {name!r}"
        token_env, token_file = table.get("token_env"), table.get("token_file")
        if (token_env is None) == (token_file is None):
            raise fail(f"{where}: give exactly one of `token_env` (an environment variable "
                       "holding its token) or `token_file`; tokens are never written in the "
                       "configuration")
        lists: dict[str, tuple[str, ...]] = {}
        for key in ("produce", "consume", "admin"):
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise fail(f"{where}: `{key}` is a list of name patterns like [\"jobs\", "
                           "\"orders.*\"]")
            lists[key] = tuple(value)
        found[name] = ClientConfig(
            name,
            token_env=None if token_env is None else _string(token_env, fail, "token_env"),
            token_file=None if token_file is None else base / _string(
                token_file, fail, "token_file"),
            **lists,
        )
    return tuple(found.values())


def parse_clients_listen(raw: Any, has_clients: bool, raft: Collection[str], fail: Fail,
                         check: Callable[[str], None]) -> tuple[str, ...] | None:
    """The top-level ``clients`` key: one address or a list, none of them a Raft one."""
    if raw is None:
        return None
    items = raw if isinstance(raw, list) else [raw]
    addresses = tuple(_string(a, fail, "clients") for a in items)
    for address in addresses:
        if address in raft:
            raise fail(f"`clients` {address!r} must differ from the Raft addresses")
        check(address)
    if not has_clients:
        raise fail("`clients` gives an address for clients but no [[client]] is listed")
    return addresses


def client_access(clients: tuple[ClientConfig, ...], listen: tuple[str, ...] | None,
                  tls: TLSFiles | None, source: str) -> ClientAccess | None:
    """The grants of ``clients`` with their tokens read now (``None`` without any); a
    ``tls://`` or ``wss://`` address is served with the node's TLS files."""
    if not clients:
        return None
    from ..config import ConfigError
    from .access import ClientAccess, ClientGrant, token_from_env, token_from_file

    grants = []
    for client in clients:
        what = f"{source}: [[client]] {client.name!r}"
        try:
            token = (token_from_env(client.token_env, what) if client.token_env
                     else token_from_file(client.token_file or "", what))
        except InvalidConfiguration as exc:
            raise ConfigError(str(exc)) from None
        grants.append(ClientGrant(client.name, token, produce=client.produce,
                                  consume=client.consume, admin=client.admin))
    ssl_context = None
    if tls is not None and any(scheme_of(a) in ("tls", "wss") for a in listen or ()):
        try:
            ssl_context = tls.server_context()
        except TLSConfigError as exc:
            raise ConfigError(f"{source}: [tls]: {exc}") from None
    return ClientAccess(grants, listen=listen, ssl_context=ssl_context)
