"""The lock of a node's data directory: one running node per directory.

A running :class:`~lazily_queue.node.Node` (embedded, or inside ``lazily-queue node``)
holds an exclusive ``flock`` on ``<data_dir>/lock``, which also records its process
id; the kernel releases it when the process exits, however it exits. A second node on
the same directory, in this process or another, is refused before it touches the
journal: two processes sharing a log would corrupt it. :func:`check_complete` refuses a
directory whose journal or snapshot went missing.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
from pathlib import Path

from .errors import InvalidConfiguration, shown, shown_path
from .raft.disk import Disk, OsDisk
from .raft.journal import DurableJournal, JournalError
from .raft.rejoin import floor_of

#: The metadata key naming the handshake features of the version that last started here.
FEATURES_KEY = "features"


class ClusterMismatch(InvalidConfiguration):
    """The data directory belongs to another node or cluster."""


class DataDirectoryTooNew(InvalidConfiguration):
    """The data directory was last used by a newer version (see :func:`claim_directory`)."""


class DataDirectoryLocked(InvalidConfiguration):
    """Another running node holds this data directory."""


class DirectoryLock:
    """The lock of one data directory (module docstring)."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.path = Path(data_dir) / "lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, *, owner: str = "node") -> None:
        """Take the lock; raises :class:`DataDirectoryLocked` naming the holder's pid,
        ``OSError`` when the directory cannot be used."""
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if _gone(holder):  # the recorded node exited: another process holds the lock
                raise DataDirectoryLocked(
                    f"data directory {self.path.parent} is locked by a process other than "
                    f"the node that recorded its pid {holder} there (no longer running): "
                    f"`fuser {self.path}` names it; stop it before starting this {owner}"
                ) from None
            raise DataDirectoryLocked(
                f"data directory {self.path.parent} is in use by another running node "
                f"(pid {holder}, as {self.path} records); two nodes cannot share an id or a "
                f"data directory: give this {owner} its own id and data directory"
            ) from None
        except OSError:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        except OSError:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _gone(pid: str) -> bool:
    """Whether ``pid`` (as a lock file records it) names no running process."""
    if not pid.isdigit() or not 0 < int(pid) < 2**22:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: it exists
        return False
    return False


def disk_problem(exc: OSError) -> str:
    """``exc``, raised using a data directory, as its cause and the operator's fix."""
    where = f" ({shown_path(exc.filename)})" if exc.filename else ""
    code = exc.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        fix = "free space on its file system"
    elif code in (errno.EACCES, errno.EPERM):
        fix = f"give the user running it (uid {os.geteuid()}) " + (
            "read and write access to that file, and write access to its directory"
            if exc.filename and os.path.isfile(exc.filename)
            else "write access to the directory")
    elif code == errno.EROFS:
        fix = "remount its file system read-write or choose another data_dir"
    elif code == errno.ENAMETOOLONG:
        fix = "choose a data_dir with a shorter path"
    elif code in (errno.EISDIR, errno.ENOTDIR, errno.EEXIST, errno.EINVAL):
        fix = "something else is in the way at that path: move it away"
    elif code == errno.ENOENT:
        fix = "a directory on the way to it cannot be made there: choose another data_dir"
    else:
        fix = "fix the disk (see the system log)"
    return f"{exc.strerror or exc}{where}; {fix}"


def _exists(disk: Disk, path: str) -> bool:
    return os.path.exists(path) if isinstance(disk, OsDisk) else disk.read(path) is not None


def _holds_file(disk: Disk, path: str) -> bool:
    """A regular file at ``path`` (something else in the way is reported where it is
    read, as a disk problem)."""
    return os.path.isfile(path) if isinstance(disk, OsDisk) else _exists(disk, path)


def check_complete(journal: DurableJournal, disk: Disk, snapshot_path: str) -> None:
    """Raise :class:`JournalError` when the journal or snapshot of a node that has run is
    gone: started without it, the node would lose acknowledged entries, or wait forever.

    The journal file is created (and its directory synced) before any term is stored;
    the snapshot file is durable before the log below it is dropped. Rejoin removes
    the journal on purpose and records a floor.
    """
    fix = ("nothing was applied. Stop the node and run `lazily-queue rejoin --config FILE` "
           "to rebuild it from its peers; do not start it without the file")
    if journal.first_index > 1 and not _exists(disk, snapshot_path):
        raise JournalError(
            f"{snapshot_path} is missing, but {journal.path} begins at entry "
            f"{journal.first_index}: the entries before it were only in that snapshot; {fix}")
    if journal.getCurrentTerm() == 0 and "node" not in journal.meta and (
            len(journal) > 0 or _holds_file(disk, snapshot_path)):
        # Terms are stored before any entry is appended and the identity with the first
        # start: entries or a snapshot without them mean both metadata copies are gone.
        raise JournalError(
            f"{journal.meta_path} and its copy are missing, but the node has run (its "
            f"journal or snapshot holds entries): whom it voted for and whose directory "
            f"this is are lost; {fix}")
    if (journal.getCurrentTerm() > 0 and floor_of(journal.meta) is None
            and not _exists(disk, journal.path)):
        raise JournalError(
            f"{journal.path} is missing, but the node has run (term "
            f"{journal.getCurrentTerm()} in {journal.meta_path}); {fix}")


def _versioned(feature: str) -> tuple[str, int]:
    """``("name", N)`` of a feature ``name-vN``; ``(feature, -1)`` of any other."""
    name, sep, number = feature.rpartition("-v")
    if sep and number.isdigit():
        return name, int(number)
    return feature, -1


def understood(feature: str, required: frozenset[str]) -> bool:
    """Whether a version requiring ``required`` reads what a version that recorded
    ``feature`` wrote: it requires that feature, or a later one of its name
    (``name-vN`` is read by a version requiring ``name-vM``, M >= N)."""
    if feature in required:
        return True
    name, number = _versioned(feature)
    return number >= 0 and any(n == name and m >= number
                               for n, m in map(_versioned, required))


#: The most unknown features a refusal names.
LISTED_FEATURES = 8


def _listed(features: list[str]) -> str:
    """The first :data:`LISTED_FEATURES` of ``features`` for a one-line message, each
    cut when long, with how many more there are."""
    named = ", ".join(shown(f) for f in features[:LISTED_FEATURES])
    more = len(features) - LISTED_FEATURES
    return f"[{named}{f', and {more} more' if more > 0 else ''}]"


def claim_directory(journal: DurableJournal, node_id: str, cluster: str,
                    data_dir: str | os.PathLike[str]) -> None:
    """The data directory must be this node's (:class:`ClusterMismatch`) and not last
    used by a newer version (:class:`DataDirectoryTooNew`); give it an identity on
    first use, and record the handshake features this version requires."""
    from .raft.mesh import REQUIRED_FEATURES

    meta = journal.meta
    owner = meta.get("node")
    found = meta.get("cluster")
    recorded = meta.get(FEATURES_KEY) or []
    unknown = sorted(f for f in set(recorded) if not understood(f, REQUIRED_FEATURES))
    if unknown:
        raise DataDirectoryTooNew(
            f"data directory {shown_path(data_dir)} was last used by a newer version of "
            f"lazily-queue ({shown_path(journal.meta_source)} records the handshake "
            f"features {_listed(unknown)}, which this version does not know), whose "
            "journal and snapshot this version could "
            "misread; nothing was changed. Start it with that version or a newer one: a "
            "member is not downgraded (README, \"Upgrading a cluster\")")
    if owner is not None and (owner != node_id or found != cluster):
        raise ClusterMismatch(owner_mismatch(data_dir, journal.meta_source, meta, node_id,
                                             cluster, undone="changed"))
    if owner is None:
        journal.set_meta("node", node_id)
        journal.set_meta("cluster", cluster)
    if "incarnation" not in meta:
        journal.set_meta("incarnation", secrets.token_hex(8))
    if recorded != sorted(REQUIRED_FEATURES):
        journal.set_meta(FEATURES_KEY, sorted(REQUIRED_FEATURES))
    if journal.needs_sync:
        journal.sync()


def owner_mismatch(data_dir: str | os.PathLike[str], source: str, meta: dict[str, object],
                   node_id: str, cluster: str, *, undone: str) -> str:
    """Why ``data_dir``, whose metadata file ``source`` records the node and cluster
    ``meta`` names, is not node ``node_id``'s of ``cluster``, and the fix (nothing was
    ``undone``)."""
    return (f"data directory {shown_path(data_dir)} belongs to node {meta.get('node')} of "
            f"cluster {meta.get('cluster')!r} (as {shown_path(source)} records), but this "
            f"node's `id` and `cluster` are {node_id} and {cluster!r}; nothing was {undone}. "
            "Give every node its own data directory: set this node's `data_dir` to its own "
            "(an empty one for a new node), or, if this directory is its own, correct its "
            "`id` and `cluster`")


#: What to do about a member that rejoins knowing no other member (after saying so).
ALONE_ADVICE = ("list the cluster's members in its `peers` and {then}. A cluster of one "
                "cannot rejoin (there is nobody to copy from): restore its data directory "
                "from a backup, or remove it to start empty")


def check_can_rejoin(members: list[str], rejoining: bool, node_id: str) -> None:
    """Raise :class:`InvalidConfiguration` for a member wiped to rejoin (``rejoining``)
    that knows no other member to catch up from: it would wait forever."""
    if rejoining and not [m for m in members if m != node_id]:
        raise InvalidConfiguration(
            f"node {node_id} was wiped to rejoin its cluster (`lazily-queue rejoin`) but "
            "knows no other member to catch up from: "
            + ALONE_ADVICE.format(then="start it again"))
