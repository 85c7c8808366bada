"""NodeService: one configured node as a process (``lazily-queue node --config FILE``).

:meth:`NodeService.run` starts the node (which locks its data directory) and its HTTP
monitor (:mod:`.service_http`: its port bound before the node starts),
prints one ``ready`` line, waits up to ``startup_timeout`` for a leader, runs the
configured ``[app]`` entry and serves until SIGTERM or SIGINT. After each snapshot it hands the C
allocator's free pages back to the system (:mod:`.allocator`). Misconfiguration found on the way (a
locked or foreign data directory, an address in use, peers refusing this node or
failing authentication while no peer is linked, no leader in time) raises
:class:`ConfigError` with the fix. A peer that should dial this node is probed after
half a second without a link, so its refusal (unknown member, wrong secret or
cluster) is known whatever the ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib
import inspect
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Coroutine
from typing import IO, TYPE_CHECKING, Any

from .address_places import with_configured_name
from .allocator import freeze_started_process, freeze_survivors, release_after_snapshots
from .config import ConfigError, NodeConfig
from .datadir import (
    ClusterMismatch,
    DataDirectoryLocked,
    DataDirectoryTooNew,
    DirectoryLock,
    disk_problem,
)
from .errors import AddressInUse
from .link_trouble import (
    LinkTrouble,
    RefusalHints,
    RepeatedRefusals,
    mesh_trouble,
    refusal_grace,
)
from .monitor import Monitor
from .out_of_files import OutOfFiles
from .raft.errors import StorageUnavailable
from .service_http import HttpFront
from .thaw_guard import ThawGuard

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

#: Seconds a refused handshake must stand, with no peer linked, before the start fails.
FATAL_GRACE = 1.0
AppEntry = Callable[["Node", dict[str, Any]], Coroutine[Any, Any, None]]


def _listen_fix(config: NodeConfig, exc: OSError) -> str:
    """What to change when the node cannot listen for ``exc`` (not a permission)."""
    if exc.errno == errno.EADDRNOTAVAIL:
        return ("this machine has no such address: listen on one of its own, and give the "
                "other nodes that address in their [peers]")
    if config.listen.startswith("webrtc") and exc.errno != errno.EADDRINUSE:
        return ("check that the signaling server runs at that address (`lazily-queue "
                "signaling --listen HOST:PORT`) and that this host reaches it")
    return (f"if another node with id {config.node_id} is running, stop it or give this "
            "node its own id and address")


class AppFailed(Exception):
    """The ``[app]`` module raised while it was imported (its traceback is logged)."""


class NodeService:
    """Runs ``config``'s node in this process; see the module docstring."""

    def __init__(self, config: NodeConfig, *, out: IO[str] | None = None,
                 handle_signals: bool = True, freeze_when_started: bool = False) -> None:
        """``freeze_when_started``: spare the garbage collector what the process holds
        once the node started (:func:`~.allocator.freeze_started_process`), for a
        process that runs only this service."""
        self.config = config
        self.freeze_when_started = freeze_when_started
        self.out = out or sys.stdout
        self.handle_signals = handle_signals
        self.node: Node | None = None
        self.monitor: Monitor | None = None
        self._stop = asyncio.Event()
        self._http = HttpFront(config)
        self._url: str | None = None
        self._announce: asyncio.Task[None] | None = None
        self._trim: asyncio.Task[None] | None = None
        #: Stops freezing what survives full collections (set once the process froze).
        self._thaw: Callable[[], None] | None = None
        #: Defers the collector's thaw on a leader and hands leadership over for it.
        self.thaw_guard: ThawGuard | None = None
        self._guard: asyncio.Task[None] | None = None

    def request_stop(self) -> None:
        """Stop serving (what SIGTERM does)."""
        self._stop.set()

    @property
    def http_url(self) -> str | None:
        """The bound HTTP address, once serving."""
        return self._url

    async def run(self) -> int:
        """Serve until stopped; 0 on a clean stop, 1 when the app failed."""
        config = self.config
        secret = config.secret()
        admin_token = config.admin_token()
        entry = load_entry(config) if config.app_entry else None
        try:
            config.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageUnavailable(
                f"{config.source}: cannot use data directory {config.data_dir}: "
                f"{disk_problem(exc)}, then start the node again"
            ) from None
        watch = LinkTrouble()
        logging.getLogger("lazily_transports").addHandler(watch)
        quiet, outputs = RepeatedRefusals(), list(logging.getLogger().handlers)
        files, hints = OutOfFiles(), RefusalHints()
        for output in outputs:
            output.addFilter(quiet)
            output.addFilter(files)
            output.addFilter(hints)
        try:
            try:
                await self._http.bind()
            except ConfigError:
                self._check_directory_free()  # a running node's twin: say so, not its port
                raise
            self.node = node = config.node(secret=secret)
            await self._start_node(node)
            self.monitor = Monitor(node, named_objects=config.metrics_named_objects)
            self.monitor.start()
            self._trim = asyncio.create_task(release_after_snapshots(node),
                                             name="lazily-allocator-trim")
            if self._http.connections is not None:
                self.monitor.http_figures = self._http.connections.stats
            url = self._url = await self._http.start(node, self.monitor, admin_token)
            if self.freeze_when_started:
                freeze_started_process()
                guard = self.thaw_guard = ThawGuard(node)
                self._thaw = freeze_survivors(may_thaw=guard.may_thaw, due=guard.due)
                self._guard = asyncio.create_task(guard.run(), name="lazily-thaw-guard")
            clients = ("" if node.clients is None
                       else f" clients={','.join(node.clients.addresses)}")
            if self.handle_signals:  # a SIGTERM sent once `ready` is seen stops it cleanly
                self._install_signals()
            raft = getattr(node.driver.network, "listen_address", None) or config.listen
            http = "-" if url is None else with_configured_name(url, self._http.bound or url)
            self._say(f"ready node={config.node_id} cluster={config.cluster} "
                      f"raft={with_configured_name(config.listen, raft)} http={http}{clients} "
                      f"pid={os.getpid()}")
            await self._await_leader(node, watch)
            if url is not None:
                page = config.http_advertise or _advertised(url)
                self.monitor.vitals_source.http_url = page
                self._announce = asyncio.create_task(announce_page(node, page),
                                                     name="lazily-announce-page")
        except BaseException:
            await self._shutdown()
            for output in outputs:
                output.removeFilter(files)
                output.removeFilter(hints)
            raise
        finally:
            logging.getLogger("lazily_transports").removeHandler(watch)
            for output in outputs:
                output.removeFilter(quiet)
        code = 0
        app: asyncio.Task[None] | None = None if entry is None else asyncio.create_task(
            entry(node, dict(config.app_options)), name="lazily-app")
        stop = asyncio.create_task(self._stop.wait())
        try:
            waiting: set[asyncio.Future[Any]] = {stop} if app is None else {stop, app}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if app is not None and app.done() and not app.cancelled():
                error = app.exception()
                if error is not None:
                    log.error("the app %s failed", config.app_entry, exc_info=error)
                    code = 1
                else:
                    await stop  # the app finished; keep serving as a replica
        finally:
            stop.cancel()
            if app is not None and not app.done():
                app.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await app
            await self._shutdown()
            for output in outputs:
                output.removeFilter(files)
                output.removeFilter(hints)
        return code

    # -- steps ------------------------------------------------------------------------------

    def _check_directory_free(self) -> None:
        """:class:`ConfigError` when another running node holds the data directory."""
        lock = DirectoryLock(self.config.data_dir)
        try:
            lock.acquire()
        except DataDirectoryLocked as exc:
            raise ConfigError(f"{self.config.source}: {exc}") from None
        except OSError:
            return
        lock.release()

    async def _start_node(self, node: Node) -> None:
        try:
            await node.start()
        except DataDirectoryLocked as exc:
            raise ConfigError(f"{self.config.source}: {exc}") from None
        except (ClusterMismatch, DataDirectoryTooNew) as exc:
            raise type(exc)(f"{self.config.source}: {exc}") from None
        except AddressInUse as exc:
            raise ConfigError(f"{self.config.source}: {exc}") from None
        except OSError as exc:
            with contextlib.suppress(Exception):
                await node.stop()
            if exc.errno in (errno.EACCES, errno.EPERM) and \
                    not self.config.listen.startswith("webrtc"):
                raise ConfigError(
                    f"{self.config.source}: cannot listen on `listen` = "
                    f"{self.config.listen!r}: {exc.strerror or exc}; this user may not bind "
                    "it: a port below 1024 needs privileges, a Unix socket a directory this "
                    "user can write (remove a socket file another user left there)"
                ) from None
            if exc.errno == errno.EACCES:
                raise ConfigError(
                    f"{self.config.source}: cannot listen on `listen` = "
                    f"{self.config.listen!r}: {exc.strerror or exc}; check [webrtc] "
                    "`signaling_token_env` (the token the signaling server was started with)"
                ) from None
            raise ConfigError(
                f"{self.config.source}: cannot listen on `listen` = {self.config.listen!r}: "
                f"{exc.strerror or exc}; {_listen_fix(self.config, exc)}"
            ) from None

    async def _await_leader(self, node: Node, watch: LinkTrouble) -> None:
        timeout = self.config.startup_timeout
        deadline = None if timeout == 0 else time.monotonic() + timeout
        while node.leader_id is None:
            grace = refusal_grace(node, watch, FATAL_GRACE)
            # A refused handshake stops the start only while no peer at all is linked: a
            # node that can reach some members is not failed for another one's mistake.
            if (watch.fatal is not None and time.monotonic() - watch.fatal_at > grace
                    and not node.driver.replica.engine.connected):
                raise ConfigError(f"{self.config.source}: {watch.fatal}")
            if deadline is not None and time.monotonic() > deadline:
                if (disk := node.driver.disk_error) is not None:
                    raise StorageUnavailable(
                        f"{self.config.source}: no leader within startup_timeout="
                        f"{timeout:g}s: this node {disk}, and a node that cannot write its "
                        "journal takes no part in the cluster; make room on the disk under "
                        "`data_dir` or fix it (see the system log), then start the node again")
                raise ConfigError(
                    f"{self.config.source}: no leader within startup_timeout={timeout:g}s. "
                    + self._peer_report(node, watch)
                )
            if self._stop.is_set():
                return
            await asyncio.sleep(0.05)
        self._say(f"leader node={node.leader_id} term={node.driver.replica.engine.term}")

    def _peer_report(self, node: Node, watch: LinkTrouble) -> str:
        connected = node.driver.replica.engine.connected
        parts = []
        for peer, address in sorted(self.config.peers.items()):
            if str(peer) in connected:
                parts.append(f"peer {peer} ({address}): linked")
                continue
            problem = mesh_trouble(node, peer) or watch.last.get(peer, "no link")
            if "closed by peer" in problem and address.startswith(("tls://", "wss://")):
                problem += (" (a peer that refuses this node's TLS certificate closes the "
                            "link so: check that the CA the peers trust signed it and that "
                            "it allows client use (extendedKeyUsage clientAuth), and the "
                            "peer's log for why)")
            parts.append(f"peer {peer} ({address}): {problem}")
        return ("A majority must be running and reachable; check that the other nodes are "
                "started with matching [peers], `cluster` and secret. " + "; ".join(parts))

    async def _shutdown(self) -> None:
        for task in (self._announce, self._trim, self._guard):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._announce = self._trim = self._guard = None
        if self._thaw is not None:
            self._thaw()
            self._thaw = None
        if self.monitor is not None:
            await self.monitor.stop()
        await self._http.close()
        if self.node is not None:
            await self.node.stop()

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop.set)

    def _say(self, line: str) -> None:
        print(line, file=self.out, flush=True)


def _advertised(url: str) -> str:
    """The bound URL as other machines reach it (a wildcard host becomes the host name)."""
    host_port = url.split("://", 1)[1]
    host, _, port = host_port.rpartition(":")
    if host in ("0.0.0.0", "[::]", "::", ""):
        return f"http://{socket.gethostname()}:{port}"
    return url


async def announce_page(node: Node, url: str, *, retry: float = 1.0) -> None:
    """Replicate where this node serves its status page (until it is committed), every
    ``retry`` seconds while it fails: a failure is logged once until another one comes
    (a stalled disk or a lost quorum would otherwise log a line a second)."""
    from .replicated import ops

    said: str | None = None
    while node.running and node.view.member_pages.get(node.node_id) != url:
        try:
            result = await node.driver.call(ops.MEMBER_PAGE, [node.node_id, url],
                                            timeout=node.op_timeout)
            if isinstance(result, ops.OpError):
                log.warning("node %s: its page address was refused: %s", node.node_id, result)
                return
        except Exception as exc:
            level = logging.DEBUG if str(exc) == said else logging.INFO
            said = str(exc)
            log.log(level, "node %s: announcing its page %s failed (%s); retrying every %g s "
                    "(not logged again while it fails so)", node.node_id, url, exc, retry)
            await asyncio.sleep(retry)


def load_entry(config: NodeConfig) -> AppEntry:
    """Import ``[app] entry`` ("package.module:function"), looking in ``config.app_dir``
    first (as ``python -m`` looks in the current directory)."""
    assert config.app_entry is not None
    module_name, _, attr = config.app_entry.partition(":")
    app_dir = None if config.app_dir is None else str(config.app_dir)
    if app_dir is not None and app_dir not in sys.path:
        sys.path.insert(0, app_dir)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a SyntaxError or anything the module raises at import
        if _not_found(exc, module_name):
            where = "the installed packages" if app_dir is None else \
                f"{app_dir} (--app-dir, default the configuration file's directory) and " \
                "the installed packages"
            raise ConfigError(f"{config.source}: [app] entry {config.app_entry!r}: cannot "
                              f"import {module_name!r} ({exc}); looked in {where}") from None
        log.error("the app %s failed to import", config.app_entry, exc_info=exc)
        raise AppFailed(f"{config.source}: [app] entry {config.app_entry!r}: importing "
                        f"{module_name!r} raised {type(exc).__name__}: {exc} (traceback "
                        "above); fix the module") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"{config.source}: [app] entry {config.app_entry!r}: {module_name} "
                          f"has no function {attr!r}")
    if not any(inspect.iscoroutinefunction(f) for f in (
            fn, inspect.unwrap(fn), type(fn).__call__)):
        raise ConfigError(f"{config.source}: [app] entry {config.app_entry!r}: "
                          f"{module_name}.{attr} is not an async function; define it as "
                          f"`async def {attr}(node, options)`")
    try:
        inspect.signature(fn).bind(None, {})
    except TypeError:
        raise ConfigError(f"{config.source}: [app] entry {config.app_entry!r}: "
                          f"{module_name}.{attr} cannot be called with the node and the "
                          f"[app] options; define it as `async def {attr}(node, options)`"
                          ) from None
    except ValueError:  # a callable without a signature: called as it is
        pass
    return fn  # type: ignore[no-any-return]


def _not_found(exc: Exception, module_name: str) -> bool:
    """Whether ``exc`` says the entry's module or a package above it does not exist (not
    that the module was found and failed to import one of its own)."""
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    return missing is not None and f"{module_name}.".startswith(f"{missing}.")
