"""Why the links to a starting node's peers fail: :class:`LinkTrouble` collects the
refusals the mesh logs (and says what to change), :class:`RepeatedRefusals` keeps the
log to one line per reason while the node starts, :class:`RefusalHints` adds what to
change to the transport's refusal lines, :func:`mesh_trouble` asks the mesh
about one peer, :func:`link_loss` why a member's link ended (:func:`loss_known`: whether
that is known yet), :func:`removal` whether the members refuse this node as removed,
:func:`said_stopping`
whether the member said it was stopping before it ended (:func:`runs_again`: whether it
answered since) and :func:`handing_over` whom a
leader said it was handing leadership to."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from lazily_transports import (
    HandshakeError,
    HandshakeTimeoutError,
    PeerRejectedError,
    describe_tls_error,
)

from .raft.link_identity import DUPLICATE, LIVE_ELECTIONS
from .raft.transfer_notice import KEPT_ELECTIONS, TransferNotices

if TYPE_CHECKING:
    from .node import Node


def _network_part(node: Node, name: str) -> Any:
    """The node's network's attribute ``name`` (None: a network without it)."""
    return getattr(getattr(node.driver, "network", None), name, None)


def mesh_trouble(node: Node, peer: int) -> str | None:
    """What the node's mesh knows about why ``peer`` is not linked (say, a probe's answer)."""
    mesh = _network_part(node, "mesh")
    if mesh is None:
        return None
    try:
        trouble = mesh.trouble(peer)
    except LookupError:
        return None
    return trouble if isinstance(trouble, str) else None


#: How the mesh closes a link in order (the peer closed it, saying nothing).
CLOSED_BY_PEER = "closed by peer"
#: How a dial's trouble reads when the link dropped mid-handshake (transient).
_DROPPED_MID_HANDSHAKE = "failed on 'handshake'"


def link_loss(node: Node, member: str) -> str | None:
    """Why the node's last link to ``member`` ended and what to check (None: the node's
    network does not say); when ``member`` now refuses this node as a stranger, that
    this node was removed from the cluster."""
    mesh = _network_part(node, "mesh")
    if mesh is None:
        return None
    try:
        peer = int(member)
        reason, address = mesh.last_down(peer), mesh.peers.get(peer)
    except (ValueError, LookupError, AttributeError):
        return None
    if not isinstance(reason, str) or not isinstance(address, str):
        return None
    trouble = mesh_trouble(node, peer)
    if trouble is not None and _refuses_as_stranger(node, trouble):
        return (f"it refuses this node as not a member ({trouble}): this node was removed "
                f"from the cluster: {removed_fix(node.node_id)}")
    return (f"its link ended ({reason}); check that node {member} runs (its own log says "
            f"why it stopped) and that this node reaches it at {address}")


def _refuses_as_stranger(node: Node, trouble: str) -> bool:
    """Whether a peer's ``trouble`` says it does not know this node's id."""
    return f"peer {node.node_id} is not a member of this mesh" in trouble


def removed_fix(node_id: str) -> str:
    """What to do about node ``node_id``, removed from the cluster and still running."""
    return (f"stop it, or add it again with `lazily-queue members add {node_id} ADDRESS` "
            "on a member")


def removal(node: Node) -> dict[str, Any] | None:
    """Whether the other members refuse this node as not a member, as members that
    removed it from the cluster do: ``refused_by`` (those members), ``since`` (when the
    first of them came to, ``time.time()``; None when the mesh does not say) and ``fix``
    (:func:`removed_fix`); None when none does."""
    mesh = _network_part(node, "mesh")
    if mesh is None:
        return None
    refused_by: list[str] = []
    since: list[float] = []
    for member in node.driver.replica.engine.members:
        trouble = mesh_trouble(node, int(member)) if member.isdigit() else None
        if member == node.node_id or trouble is None or not _refuses_as_stranger(node, trouble):
            continue
        refused_by.append(member)
        try:
            when = mesh.trouble_since(int(member))
        except (LookupError, AttributeError):
            continue
        if isinstance(when, float):
            since.append(when)
    if not refused_by:
        return None
    return {"refused_by": refused_by, "since": min(since, default=None),
            "fix": removed_fix(node.node_id)}


def loss_known(node: Node, member: str) -> bool:
    """Whether :func:`link_loss` can say why the node's last link to ``member`` ended:
    not while it was closed in order and no dial since said more than a link dropped
    mid-handshake (a member that removed this node closes its links so, and refuses the
    next one as a stranger's)."""
    mesh = _network_part(node, "mesh")
    try:
        peer = int(member)
        if mesh is None or mesh.last_down(peer) != CLOSED_BY_PEER:
            return True
    except (ValueError, LookupError, AttributeError):
        return True
    trouble = mesh_trouble(node, peer)
    return trouble is not None and _DROPPED_MID_HANDSHAKE not in trouble


def said_stopping(node: Node, member: str) -> bool:
    """Whether ``member`` said on its last link to the node that it was stopping (a clean
    stop, :mod:`~lazily_queue.raft.goodbye`); for the node itself, whether it said so."""
    goodbyes = _network_part(node, "goodbyes")
    if member == node.node_id:
        return getattr(goodbyes, "sent", None) is True
    said = getattr(goodbyes, "said", None)
    return isinstance(said, set) and member in said


def runs_again(node: Node, member: str) -> bool:
    """Whether ``member`` answered a dial or probe of the node's mesh since its last link
    ended: a member that said it was stopping runs again, and is unlinked for another
    reason (:func:`mesh_trouble`)."""
    mesh = _network_part(node, "mesh")
    try:
        return member.isdigit() and mesh is not None and mesh.answered(int(member)) is True
    except LookupError:
        return False


def handing_over(node: Node, leader: str, term: int) -> str | None:
    """Whom ``leader``, leading ``term``, said it was handing leadership to, at most
    :func:`handover_window` seconds ago (a transfer notice,
    :mod:`~lazily_queue.raft.transfer_notice`); for the node itself, whom it started
    handing leadership to. None: it said no such thing (or said it too long ago)."""
    transfers = _network_part(node, "transfers")
    if not isinstance(transfers, TransferNotices):
        return None
    notice = transfers.handing if leader == node.node_id else transfers.heard.get(leader)
    if notice is None or not notice.explains(term, handover_window(node), transfers.clock()):
        return None
    return notice.target


def refusal_grace(node: Node, trouble: LinkTrouble, grace: float) -> float:
    """Seconds a refused handshake must stand before the start fails: ``grace``, and the
    peers' liveness window besides when they refused a second process of this member
    (the old process may only have gone silent: they take this one once it passed)."""
    if not trouble.duplicate:
        return grace
    return grace + LIVE_ELECTIONS * node.driver.replica.config.engine.election_timeout_max


def handover_window(node: Node) -> float:
    """Seconds a transfer notice explains a lost leader: a few election timeouts."""
    return KEPT_ELECTIONS * node.driver.replica.config.engine.election_timeout_max


def explained(trouble: str) -> str:
    """``trouble`` (as :func:`mesh_trouble` tells it) with which side's version is the
    older one when the peers were refused for their handshake features."""
    if "on 'features'" not in trouble:
        return trouble
    which = "a newer" if "peer refused the link" in trouble else "an older"
    return (f"{trouble} (it runs {which} version than this node: run one version on "
            "every member)")


class LinkTrouble(logging.Handler):
    """Collects the refusals of links this node dials or probes while it starts.

    Only links to configured peers count: a stranger's connection that we refuse says
    nothing about this node's configuration and must not stop its start.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.fatal: str | None = None
        self.fatal_at = 0.0
        #: The refusal standing is one of a second process of a live member: this node
        #: while its old process's link is still live to the peer (a restart after the
        #: old process went silent), or a copy of it (see :func:`refusal_grace`).
        self.duplicate = False
        self.last: dict[int, str] = {}

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        error = next((a for a in args if isinstance(a, BaseException)), None)
        peer = next((a for a in args if isinstance(a, int) and not isinstance(a, bool)), None)
        if peer is None or error is None:
            return
        self.last[peer] = str(error)
        tls = describe_tls_error(error)
        if tls is not None:
            if self.fatal is None:
                self.fatal_at = time.monotonic()
            self.fatal = (f"the TLS link to peer {peer} failed: {tls}. Check this node's [tls] "
                          "files and the peer's")
            return
        if not isinstance(error, HandshakeError) or isinstance(error, HandshakeTimeoutError):
            return
        if error.field == "handshake":  # the link dropped mid-handshake: transient
            return
        if self.fatal is None:
            self.fatal_at = time.monotonic()
        self.duplicate = DUPLICATE in str(error)
        self.fatal = f"the link to peer {peer} failed: {error}. {_fix_for(error)}"


class RepeatedRefusals(logging.Filter):
    """Passes the first transport record of each refused handshake reason and drops the
    ones repeating it (every peer dials and is probed again and again while the node
    starts, each refused for the same reason), with the transport's count of refusals it
    did not log. Put on the log's handlers, not its loggers, so that a
    :class:`LinkTrouble` still sees every refusal."""

    def __init__(self) -> None:
        super().__init__()
        self.logged: set[str] = set()
        #: Records dropped as repeats.
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("lazily_transports"):
            return True
        if record.msg == "%d more refused handshakes were not logged":
            self.dropped += 1
            return False
        args = record.args if isinstance(record.args, tuple) else ()
        error = next((a for a in args if isinstance(a, HandshakeError)), None)
        if error is None or error.field == "handshake":
            return True
        if str(error) in self.logged:
            self.dropped += 1
            return False
        self.logged.add(str(error))
        return True


class RefusalHints(logging.Filter):
    """Adds what to change (the settings to compare) to the transport's WARNING lines
    about a refused handshake: the transport names the reason, not this package's
    settings. Put on the log's handlers; a record is completed once."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (record.levelno < logging.WARNING or not record.name.startswith("lazily_transports")
                or record.__dict__.get("lazily_hint")):
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        error = next((a for a in args if isinstance(a, HandshakeError)), None)
        if (error is None or isinstance(error, HandshakeTimeoutError)
                or error.field == "handshake"):
            return True
        record.msg = f"{record.msg}. %s"
        record.args = (*args, _fix_for(error))
        record.lazily_hint = True
        return True


def _fix_for(error: HandshakeError) -> str:
    """What to change for a refused link, by the field the refusal names."""
    if error.field == "features":
        return version_fix(newer=isinstance(error, PeerRejectedError))
    if error.field in ("auth", "credential") and "client" in error.message:
        return ("That link is a client's, not a member's: compare the name and token (or "
                "certificate) it presents with this node's [[client]] tables; the cluster "
                "secret is not concerned")
    if error.field == "auth":
        return ("The cluster secrets differ: every node needs the same "
                "`cluster` and secret; compare the secret this node's `secret_env` / "
                "`secret_file` gives with that node's")
    if error.field == "session_id":
        return "The cluster names differ: every node needs the same `cluster` and secret"
    if "not a member" in error.message:
        return ("That member does not know this node's id (it was never added, or was "
                "removed). A node joining a running cluster is added first (`lazily-queue "
                "members add ID ADDRESS`, or `await node.add_member(ID, ADDRESS)`, on a "
                "member), then started; otherwise list this node in every member's [peers], "
                "or correct this node's `id`")
    if "share one id" in error.message or "share id" in error.message:
        return ("Every node needs a unique `id` and its own data directory. A node whose "
                "data directory was replaced (emptied, another cluster's, a copy) is "
                "started with its own again, or removed (`lazily-queue members remove ID` "
                "on a member) and added back (`lazily-queue members add ID ADDRESS`) before "
                "it starts with an empty one")
    return ("Every node needs the same `cluster` and secret, a unique `id`, and every "
            "other node in its [peers]")


def version_fix(*, newer: bool) -> str:
    """What to do about a peer refused for the handshake features (``newer``: the peer
    requires features this node's version lacks; otherwise it lacks ones this node's
    version requires)."""
    which = ("a newer version of lazily-queue than this node" if newer
             else "an older version of lazily-queue than this node")
    return (f"That peer runs {which}: members whose versions do not share the handshake "
            "features each requires cannot link, so a cluster is not upgraded one member at "
            "a time across such versions. Run the same version on every member: stop them "
            "all, upgrade every one, and start them again (README, \"Upgrading a cluster\")")
