"""The checks a new member's id and address pass before anything is replicated:
:func:`addition_problem`, shared by :meth:`Node.add_member
<lazily_queue.node.Node.add_member>` and the admin API and CLI (:mod:`.admin`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .errors import shown
from .names import name_problem

if TYPE_CHECKING:
    from .node import Node

#: Member ids are below this bound (an unsigned 64-bit integer, as links carry them).
ID_BOUND = 2**64


def id_problem(member: Any) -> str | None:
    """Why ``member`` is no member id (``None``: it is one). An id is ASCII digits written
    as ``str(int)`` writes them, in ``0..2**64-1``: the id a node's configuration gives
    (``id = N``) and its links use. Another ("01", "²", "+7") would be replicated as a
    voter no node can be, and every member would refuse to start with it in its
    membership."""
    problem = name_problem(member, "id")
    if problem is not None:
        return problem
    text = str(member)
    if not (text.isascii() and text.isdigit() and str(int(text)) == text
            and int(text) < ID_BOUND):
        return f"a member id is an integer in 0..2**64-1, not {shown(text)}; nothing was changed"
    return None


def address_refusal(address: str, member: str | None = None) -> str | None:
    """Why no member could listen on ``address`` (``None``: it could); ``member``, the
    id it is for. Host names are not looked up: they may resolve on the members only."""
    from lazily_transports import DEFAULT_SCHEMES, AddressError, MissingDependencyError, scheme_of

    from .config_keys import SCHEMES_HINT, link_address_host

    try:
        scheme = scheme_of(address)
        if scheme not in DEFAULT_SCHEMES:
            return f"unsupported scheme {scheme!r} ({SCHEMES_HINT})"
        node_id = int(member) if member is not None and member.isdigit() else None
        link_address_host(address, listening=False, node_id=node_id)
    except MissingDependencyError:
        return None  # the members that run it have the extra; this one cannot parse it
    except AddressError as exc:
        return str(exc)
    return None


#: Most seconds the host names of an added member's check are looked up for.
LOOKUP_WITHIN = 5.0


async def member_at(node: Node, address: str, member: str,
                    within: float = LOOKUP_WITHIN) -> str | None:
    """The member other than ``member`` whose address leads where ``address`` does
    (two spellings of one place are one address; host names are looked up in a thread,
    off the event loop, for at most ``within`` seconds: names still unanswered then are
    taken for other places). A member's address is the one the cluster recorded for it,
    else its ``[peers]`` entry (stale once it moved)."""
    from .address_places import same_place

    def address_of(other: str) -> str | None:
        if other == node.node_id:
            return node.listen
        return node.recorded_address(other) or node.peers.get(other)

    others = {m: a for m in node.driver.replica.engine.members
              if m != member and (a := address_of(m)) is not None}
    same = same_place()
    try:
        return await asyncio.wait_for(asyncio.to_thread(
            lambda: next((m for m, a in sorted(others.items()) if same(address, a)), None)),
            within)
    except TimeoutError:
        return None


async def addition_problem(node: Node, member: Any, address: Any,
                           within: float = LOOKUP_WITHIN) -> str | None:
    """Why ``member`` cannot be added at ``address`` (``None``: it can): an id no node
    can have (:func:`id_problem`), an address no member could listen on
    (:func:`address_refusal`), or one where another member listens, however spelled
    (:func:`member_at`, its lookups for at most ``within`` seconds). ``address`` ``None``
    gives none to check."""
    problem = id_problem(member)
    if problem is not None or address is None:
        return problem
    problem = name_problem(address, "address")
    if problem is not None:
        return problem
    refusal = address_refusal(address, str(member))
    if refusal is not None:
        return f"address {address!r}: {refusal}; nothing was changed"
    holder = await member_at(node, address, str(member), within)
    if holder is not None:
        return (f"address {address!r} leads where member {holder} listens: one address has "
                "one member (remove that member first if it is gone); nothing was changed")
    return None
