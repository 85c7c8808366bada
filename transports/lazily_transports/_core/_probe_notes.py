"""A probe's answer (the note a member gives a peer that should be dialed by it) and
how the prober reads it: a start-up race, a link on its way, or a configuration fault."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

__all__ = ["SHUTTING_DOWN", "ProbeReading", "dialing_note", "lookup_timed_out", "read_answer",
           "refusal_note", "unresolved"]

#: The refusal of a dial or probe reaching a mesh that is closing (not an answer of a
#: running member: a member that said it was stopping stays so).
SHUTTING_DOWN = "this node is shutting down"

_DIALING = re.compile(
    r"node (?P<me>\d+) dials node (?P<peer>\d+) at (?P<address>\S+?)"
    r"(?:, last failure(?: (?P<age>\d+(?:\.\d+)?)s ago)?: (?P<failure>.*))?",
    re.DOTALL,
)
#: How :mod:`ssl` names a certificate the dialer could not verify, in its messages.
_CERTIFICATE_REFUSED = "CERTIFICATE_VERIFY_FAILED"
#: How :func:`unresolved` ends the first part of its message.
_UNRESOLVED = " does not resolve ("
#: How :func:`lookup_timed_out` goes on after the address.
_LOOKUP_TIMED_OUT = ": the lookup timed out after "


def unresolved(address: str, reason: str) -> str:
    """The failure of a dial or probe of ``address`` whose host name did not resolve
    (``reason``: the resolver's words), as the dialer's answer to a probe quotes it."""
    return f"the host name of {address}{_UNRESOLVED}{reason})"


def lookup_timed_out(address: str, timeout: float) -> str:
    """The failure of a dial or probe of ``address`` whose host name's lookup did not
    finish within ``timeout`` seconds (the resolver did not answer)."""
    return (f"looking up the host name of {address}{_LOOKUP_TIMED_OUT}{timeout:g} s "
            "(the resolver did not answer)")


def refusal_note(refuser: int, refused: int, reason: str = "") -> str:
    """A probe's answer saying that ``refuser`` refuses the links it dials to ``refused``
    after authentication, and why (the prober reports it as a refusal)."""
    return f"node {refuser} refuses links from node {refused}: {reason}"


def dialing_note(me: int, peer_id: int, address: str, failure: str | None,
                 age: float) -> str:
    """A probe's answer saying that ``me`` dials ``peer_id`` at ``address``, with its last
    failure (if any) and how many seconds ago it happened."""
    note = f"node {me} dials node {peer_id} at {address}"
    return f"{note}, last failure {age:.2f}s ago: {failure}" if failure else note


def coming_note(me: int, peer_id: int, *, redialed: bool) -> str:
    """A probe's answer saying that a link from ``me`` is on its way: up at ``me`` (its
    end at the prober is still being set up), or dropped as stale and dialed again."""
    if redialed:
        return f"node {me} had a stale link to node {peer_id} and dials it again"
    return f"node {me} has a link to node {peer_id} up"


@dataclass(frozen=True)
class ProbeReading:
    """What a probe's answer means to the prober: the link's trouble, and the level it
    is logged at (DEBUG while the link is on its way)."""

    outcome: str
    level: int


def read_answer(peer_id: int, note: str, listened_for: float) -> ProbeReading:
    """Read ``note``, the answer of ``peer_id`` (which should dial the prober) to a probe
    sent ``listened_for`` seconds after the prober started to listen.

    A peer that dials the prober, and whose last failure came before the prober
    listened, is late, not misdirected: it dials again within its backoff. One whose
    dial failed while the prober listened, or that has no link to it, is told at
    WARNING with the hint to check its ``[peers]``, or, when it dials an address, that
    this process may be a stale copy of the member the others reach there (when the
    peer could not verify the prober's TLS certificate: to check that certificate).
    """
    dialing = _DIALING.fullmatch(note)
    coming = note.startswith(
        tuple(f"node {peer_id} {verb} " for verb in ("had a stale link", "has a link")))
    hint = "check that its [peers] lists this node's address"
    if dialing is not None:  # said without when it last failed, so that it reads alike
        failure = dialing["failure"]
        if failure is not None and _CERTIFICATE_REFUSED in failure:
            hint = ("it cannot verify this node's TLS certificate: give this node one signed "
                    "by the CA in the peer's `ca` that names the address the peer dials")
        elif failure is not None and (_UNRESOLVED in failure or _LOOKUP_TIMED_OUT in failure):
            hint = (f"the peer cannot resolve the host name it dials this node at: check that "
                    f"name where peer {peer_id} runs (it keeps trying)")
        else:  # or the prober is not the process the others know as that member
            me, address = dialing["peer"], dialing["address"]
            hint += (f"; or this process may be a stale copy of node {me}, a member now at "
                     f"{address} (the address the others know): stop it, or remove node "
                     f"{me} from the cluster and add it back at this node's address")
        late = failure is None or (dialing["age"] is not None
                                   and float(dialing["age"]) >= listened_for)
        note = f"node {dialing['me']} dials node {dialing['peer']} at {dialing['address']}"
        note += f", last failure: {failure}" if failure else ""
        coming = late
    if coming:
        return ProbeReading(
            f"peer {peer_id} accepted our credentials and its link is on its way ({note})",
            logging.DEBUG)
    return ProbeReading(
        f"peer {peer_id} accepted our credentials but has not dialed us"
        f"{f' ({note})' if note else ''}: {hint}",
        logging.WARNING)
