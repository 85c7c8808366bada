"""Node configuration files (TOML), as read by ``lazily-queue node --config FILE``.

::

    id = 1                              # this node's integer id, unique in the cluster
    cluster = "orders"                  # the same on every node
    data_dir = "data/1"                 # relative paths are relative to this file
    listen = "unix:///run/orders/1.sock"
    http = "127.0.0.1:8101"             # status page, /status.json, /metrics (optional)
    durability = "fsync"                # or "none"
    secret_env = "ORDERS_SECRET"        # the cluster secret, from this environment variable
    # secret_file = "secret"            # ... or from this file (exactly one of the two)
    startup_timeout = 30                # seconds to find a leader, 0 waits forever
    max_message_bytes = 1048576         # largest push/publish message (the same everywhere)
    max_objects = 100000                # queues, topics and work queues the cluster holds
    max_subscribers = 10000             # subscriptions of one topic
    admin_token_env = "ORDERS_ADMIN"    # the admin API's token (16+ characters), from this
    # admin_token_file = "admin-token"  # variable or file; without either the API is off
    http_advertise = "http://q1.internal:8101"  # the page address other members link to

    clients = "unix:///run/orders/1-clients.sock"   # optional: clients' own address(es)
    # clients_ca = "certs/clients-ca.pem"   # CA of client certificates (lazily_queue.client)
    max_client_links = 4096             # client links this member holds open in all
    client_frame_budget = 67108864      # bytes of client frames still arriving it holds
    client_commit_target = 0.01         # seconds: under a flood, propose fewer at once

    [metrics]                           # optional: /metrics
    named_objects = 1000                # queues, work queues, topics each shown by name;
                                        # the others are summed into name="" (0: all)

    [dedup]                             # optional: the window of producers' msg_ids
    max_entries = 20000                 # ids kept (the cluster uses its leader's) ...
    max_age = 300                       # ... each for at most this many seconds

    [peers]                             # the other members (may list this node too)
    2 = "unix:///run/orders/2.sock"
    3 = "unix:///run/orders/3.sock"

    [tls]                               # optional: tls:// and wss:// addresses
    certificate = "certs/n1.pem"        # (see lazily_queue.config_transport)
    key = "certs/n1.key"
    ca = "certs/ca.pem"

    [app]                               # optional: run an application in the process
    entry = "orders.worker:main"        # async def main(node, options) -> None
    workers = 4                         # every other key is passed in ``options``

    [[client]]                          # a process that may connect as a client
    name = "web"
    token_env = "ORDERS_WEB_TOKEN"      # its token, from this variable ...
    # token_file = "web.token"          # ... or this file: exactly one of the two
    # previous_token_env = "ORDERS_WEB_TOKEN_OLD"  # while replacing the token: the old
                                        # one, accepted too (or `previous_token_file`)
    produce = ["jobs", "orders.*"]      # name patterns it may push to / publish on
    consume = ["jobs"]                  # ... pop, claim, ack, subscribe
    admin = []                          # ... everything, reaping and redriving too
    max_links = 64                      # links it may hold open to this member at once

Members serve clients (``lazily_queue.connect``) once a ``[[client]]`` is listed: on
``listen``, or on ``clients`` when given.

The ``[app]`` module is imported from the configuration file's directory first (or the
directory ``lazily-queue node --app-dir DIR`` names), then from the installed packages.

Every mistake raises :class:`ConfigError` whose message names the file, the key and
the fix. The secret is never read from the command line or written to logs.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lazily_transports import TLSFiles

from .address_places import same_place
from .client.settings import (
    ClientConfig,
    ClientLimits,
    check_clients_tls,
    client_access,
    parse_client_limits,
    parse_clients,
    parse_clients_ca,
    parse_clients_listen,
)
from .config_credentials import admin_token, cluster_secret
from .config_keys import (
    check_address,
    parse_app,
    parse_dedup,
    parse_http,
    parse_max_objects,
    parse_max_subscribers,
    parse_metrics,
    parse_node_id,
    parse_peers,
    parse_string,
    refuse_odd_text,
    say_unresolved,
)
from .config_transport import (
    WebRTCConfig,
    check_tls_addresses,
    parse_tls,
    parse_webrtc,
    refuse_unknown_keys,
    webrtc_options,
)
from .core.dedup import DedupLimits
from .core.numbers import FOREVER
from .errors import InvalidConfiguration, shown
from .metrics_names import DEFAULT_NAMED_OBJECTS
from .names import DEFAULT_MAX_OBJECTS, DEFAULT_MAX_SUBSCRIBERS
from .node_settings import peer_address_problem
from .raft.batch import DEFAULT_MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES_LIMIT
from .small_files import read_bounded

if TYPE_CHECKING:
    from .client.access import ClientAccess
    from .node import Durability, Node

KNOWN_KEYS = frozenset(
    {"id", "cluster", "data_dir", "listen", "http", "durability", "secret_env", "secret_file",
     "startup_timeout", "max_message_bytes", "peers", "app", "admin_token_env",
     "admin_token_file", "http_advertise", "tls", "webrtc", "clients", "clients_ca",
     "client", "dedup", "max_objects", "max_subscribers", "metrics",
     "max_client_links", "client_frame_budget", "client_commit_target"}
)


class ConfigError(InvalidConfiguration):
    """A node configuration is unusable; the message says what to change."""


@dataclass(frozen=True)
class NodeConfig:
    """One node's validated settings; see the module docstring for the file format."""

    node_id: int
    data_dir: Path
    listen: str
    peers: dict[int, str]
    cluster: str = "lazily-queue"
    durability: Durability = "fsync"
    http: tuple[str, int] | None = None
    secret_env: str | None = None
    secret_file: Path | None = None
    startup_timeout: float = 30.0
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_objects: int = DEFAULT_MAX_OBJECTS
    max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS
    app_entry: str | None = None
    app_options: dict[str, Any] = field(default_factory=dict)
    #: Where ``[app] entry``'s module is looked for first (``--app-dir``; by default the
    #: configuration file's directory), before the installed packages.
    app_dir: Path | None = None
    source: str = "<config>"
    clients_listen: tuple[str, ...] | None = None
    clients: tuple[ClientConfig, ...] = ()
    clients_ca: Path | None = None
    client_limits: ClientLimits = field(default_factory=ClientLimits)
    admin_token_env: str | None = None
    admin_token_file: Path | None = None
    http_advertise: str | None = None
    tls: TLSFiles | None = None
    webrtc: WebRTCConfig | None = None
    dedup: DedupLimits | None = None
    #: Objects of each kind ``/metrics`` shows by name (:mod:`.metrics_names`).
    metrics_named_objects: int = DEFAULT_NAMED_OBJECTS
    #: Peers whose host name did not resolve when the file was read: peer -> host.
    unresolved_peers: dict[int, tuple[str, str]] = field(default_factory=dict)

    @property
    def http_url(self) -> str | None:
        if self.http is None:
            return None
        host, port = self.http
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def secret(self) -> bytes:
        """The cluster secret from the environment variable or file the config names."""
        return cluster_secret(self.secret_env, self.secret_file, self._fail)

    def client_access(self) -> ClientAccess | None:
        """The ``[[client]]`` grants with their tokens read now (``None`` without any)."""
        return client_access(self.clients, self.clients_listen, self.tls, self.source,
                             self.clients_ca, self.client_limits)

    def admin_token(self, *, check_secret: bool = True) -> str | None:
        """The admin API's token (``None``: no `admin_token_env` / `admin_token_file`);
        ``check_secret`` refuses a token equal to the cluster secret (the node checks,
        a command-line client need not know the secret)."""
        return admin_token(self.admin_token_env, self.admin_token_file,
                           self.secret if check_secret else None, self._fail)

    def _fail(self, message: str) -> ConfigError:
        return ConfigError(f"{self.source}: {message}")

    def node(self, **overrides: Any) -> Node:
        """A :class:`~lazily_queue.node.Node` built from this configuration; a warning
        names each peer whose host name did not resolve when the file was read."""
        from .node import Node

        say_unresolved(self.node_id, self.unresolved_peers, self.peers)
        kwargs: dict[str, Any] = {
            "data_dir": self.data_dir,
            "peers": self.peers,
            "listen": self.listen,
            "secret": self.secret(),
            "cluster": self.cluster,
            "durability": self.durability,
            "max_message_bytes": self.max_message_bytes,
            "max_objects": self.max_objects,
            "max_subscribers": self.max_subscribers,
            "tls": self.tls,
            "dedup": self.dedup,
        }
        if "clients" not in overrides:
            kwargs["clients"] = self.client_access()
        if self.webrtc is not None:
            kwargs.update(webrtc_options(self.webrtc, self.source))
        kwargs.update(overrides)
        return Node(self.node_id, **kwargs)


#: The largest configuration file read (bytes).
MAX_CONFIG_BYTES = 1024 * 1024


def load_config(path: str | os.PathLike[str]) -> NodeConfig:
    """Read and validate a TOML node configuration."""
    file = Path(path)
    try:
        data = read_bounded(file, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {file} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {file}: {exc.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{file} holds more than {MAX_CONFIG_BYTES // 1024 // 1024} MiB; "
                          "a node configuration is a few lines of TOML")
    try:
        doc = tomllib.loads(data.decode())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{file}: its arrays or tables are nested too deeply to read; "
                          "a node configuration nests at most a few levels") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file} is not UTF-8 text ({exc.reason} at byte {exc.start}); save "
                          "it as UTF-8, as TOML requires") from None
    return parse_config(doc, base=_base_of(file), source=str(file))


def _base_of(file: Path) -> Path:
    """Where the file's relative paths start: its directory, or the working directory
    for a pipe (``--config <(...)``, ``/dev/stdin``), whose directory is ``/proc``'s."""
    try:
        regular = stat.S_ISREG(file.stat().st_mode)
    except OSError:
        regular = False
    return file.resolve().parent if regular else Path.cwd()


def parse_config(doc: dict[str, Any], *, base: Path, source: str = "<config>") -> NodeConfig:
    """Validate a parsed configuration; relative paths are resolved against ``base``."""

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{source}: {message}")

    refuse_unknown_keys(doc, KNOWN_KEYS, "", fail)
    refuse_odd_text(doc, fail)
    for key in ("id", "data_dir"):
        if key not in doc:
            raise fail(f"`{key}` is required")
    node_id = parse_node_id(doc["id"], fail, "`id`")
    cluster = parse_string(doc.get("cluster", "lazily-queue"), fail, "cluster")
    data_dir = base / parse_string(doc["data_dir"], fail, "data_dir")
    for place in (data_dir, *data_dir.parents):
        try:
            exists = place.exists()
        except OSError as exc:  # a name too long for the file system, say
            raise fail(f"`data_dir` {shown(str(data_dir))} cannot be used: "
                       f"{exc.strerror or exc}") from None
        if exists:  # the nearest existing ancestor must be a directory
            if not place.is_dir():
                raise fail(f"`data_dir` {data_dir}: {place} is not a directory; name a "
                           "directory (it is created when missing)")
            break
    durability = doc.get("durability", "fsync")
    if durability not in ("fsync", "none"):
        raise fail(f"`durability` must be \"fsync\" or \"none\", not {shown(durability)}")
    peers = parse_peers(doc.get("peers", {}), fail)
    listen = doc.get("listen")
    own = peers.pop(node_id, None)
    if listen is None:
        if own is None:
            raise fail(
                "`listen` is required (this node's Raft address, e.g. "
                "\"unix:///run/q/1.sock\" or \"tcp://127.0.0.1:7001\")"
            )
        listen = own
    listen = parse_string(listen, fail, "listen")
    same = same_place()
    if own is not None and not same(own, listen):
        raise fail(
            f"two nodes with id {node_id}: `listen` is {shown(listen)} but [peers] gives node "
            f"{node_id} the address {shown(own)}; every node needs its own id"
        )
    check_address(listen, fail, "`listen`", listening=True, node_id=node_id)
    unresolved = {peer: host for peer, address in peers.items() if (host := check_address(
        address, fail, f"peer {peer}", listening=False, node_id=peer)) is not None}
    if problem := peer_address_problem(node_id, listen, peers, "set `id = {peer}`", same):
        raise fail(problem)
    secret_env, secret_file = doc.get("secret_env"), doc.get("secret_file")
    if (secret_env is None) == (secret_file is None):
        raise fail(
            "give exactly one of `secret_env` (the name of an environment variable holding the "
            "cluster secret) or `secret_file` (a file containing it); secrets are never "
            "accepted on the command line"
        )
    if secret_env is not None:
        secret_env = parse_string(secret_env, fail, "secret_env")
    secret_path = None if secret_file is None else base / parse_string(
        secret_file, fail, "secret_file")
    timeout = doc.get("startup_timeout", 30.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0 \
            or timeout > FOREVER:
        raise fail(f"`startup_timeout` must be a number of seconds from 0 to "
                   f"{FOREVER:.0e} (0 waits forever), not {shown(timeout)}")
    max_message = doc.get("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)
    if isinstance(max_message, bool) or not isinstance(max_message, int) or \
            not 1024 <= max_message <= MAX_MESSAGE_BYTES_LIMIT:
        raise fail(f"`max_message_bytes` must be an int from 1024 to {MAX_MESSAGE_BYTES_LIMIT}"
                   f" (bytes; the same on every node), not {shown(max_message)}")
    max_objects = parse_max_objects(doc.get("max_objects", DEFAULT_MAX_OBJECTS), fail)
    max_subscribers = parse_max_subscribers(
        doc.get("max_subscribers", DEFAULT_MAX_SUBSCRIBERS), fail)
    entry, options = parse_app(doc.get("app"), fail)
    clients = parse_clients(doc.get("client", []), base, fail)
    if doc.get("clients") == []:
        raise fail("`clients` is an address or a non-empty list of addresses; leave it out "
                   "to serve clients on `listen`")
    clients_listen = parse_clients_listen(
        doc.get("clients"), bool(clients), {listen, *peers.values()}, fail,
        lambda address: check_address(address, fail, "`clients`", listening=True))
    tls = parse_tls(doc.get("tls"), base, fail)
    check_tls_addresses(tls, {"`listen`": listen, **{f"peer {p}": a for p, a in peers.items()}},
                        fail)
    clients_ca = parse_clients_ca(doc.get("clients_ca"), base, clients, clients_listen, listen,
                                  tls, fail)
    check_clients_tls(clients_listen, tls, fail)
    webrtc = parse_webrtc(doc.get("webrtc"), base, fail)
    token_env, token_file = doc.get("admin_token_env"), doc.get("admin_token_file")
    if token_env is not None and token_file is not None:
        raise fail("give at most one of `admin_token_env` and `admin_token_file`")
    advertise = doc.get("http_advertise")
    if advertise is not None and (not isinstance(advertise, str) or not advertise.startswith(
            ("http://", "https://"))):
        raise fail(f"`http_advertise` must be an http:// or https:// URL, not {shown(advertise)}")
    return NodeConfig(
        node_id=node_id,
        data_dir=data_dir,
        listen=listen,
        peers=peers,
        cluster=cluster,
        durability=durability,
        http=parse_http(doc.get("http"), fail),
        secret_env=secret_env,
        secret_file=secret_path,
        startup_timeout=float(timeout),
        max_message_bytes=max_message,
        max_objects=max_objects,
        max_subscribers=max_subscribers,
        app_entry=entry,
        app_options=options,
        app_dir=base,
        source=source,
        clients_listen=clients_listen,
        clients=clients,
        clients_ca=clients_ca,
        client_limits=parse_client_limits(doc, fail),
        admin_token_env=None if token_env is None else parse_string(
            token_env, fail, "admin_token_env"),
        admin_token_file=None if token_file is None else base / parse_string(
            token_file, fail, "admin_token_file"),
        http_advertise=None if advertise is None else advertise.rstrip("/"),
        tls=tls,
        webrtc=webrtc,
        dedup=parse_dedup(doc.get("dedup"), fail),
        metrics_named_objects=parse_metrics(doc.get("metrics"), fail),
        unresolved_peers=unresolved,
    )
