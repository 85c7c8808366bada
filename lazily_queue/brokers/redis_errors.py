"""The typed broker errors of redis-py's exceptions, each naming the server and what
was being done, and what to do about an object part of which was deleted outside this
library."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator

import redis.exceptions as rexc

from .errors import (
    UNREACHABLE_FIX,
    BrokerAuthenticationFailed,
    BrokerError,
    BrokerObjectLost,
    BrokerOutOfMemory,
    BrokerUnavailable,
    IncompatibleBrokerObject,
)

#: How redis-py words a connection failure from before anything was sent on it.
NOT_SENT = ("connecting to", "Timeout connecting", "before write", "Connection has data")
#: A script's ``LOST <key> ...`` reply: the key (``prefix:{kind:name}:part``; a name may
#: hold spaces and ``}:``, the text after the key holds neither) and the rest.
_LOST = re.compile(r"LOST (?P<key>.*\}:[a-z]+) (?:\(the |holds )", re.DOTALL)


def lost_advice(reply: str) -> str:
    """A script's ``LOST <key> ...`` reply (part of an object deleted outside this
    library) with what was lost and what to do: the pattern of the object's keys
    matches no other object's (its name's glob characters escaped)."""
    detail = reply.removeprefix("LOST ")
    found = _LOST.match(reply)
    key = found["key"] if found else detail.split(" ", 1)[0]
    head = key.rpartition("}:")[0] + "}:" if found else key.rpartition(":")[0] + ":"
    pattern = re.sub(r"([\\*?\[\]])", r"\\\1", head) + "*"
    if key.partition("{")[2].startswith("t:") and not key.endswith(":meta"):
        return (f"{detail}: entries were deleted outside this library (DEL, XTRIM, XDEL); "
                "the elements are gone: restore the topic from a snapshot, or delete its "
                f"keys ({pattern}) to start it afresh")
    return (f"{detail}: deleted outside this library (DEL, EXPIRE, UNLINK); nothing was "
            "changed: what remains cannot be used safely without it: delete the object's "
            f"keys ({pattern}) to start it afresh (its elements go with them), or restore "
            "the key from a backup")


def unreachable(address: str, doing: str, exc: BaseException) -> BrokerUnavailable:
    """The error of a connection that failed while ``doing``: one not made (nothing was
    sent) names the address to check; one lost after the command may have been sent
    says whether it applied is unknown."""
    text = str(exc).rstrip(".")
    if any(words in text for words in NOT_SENT):
        return BrokerUnavailable(
            f"redis at {address} is unreachable while {doing}: {text}{UNREACHABLE_FIX}")
    if isinstance(exc, rexc.TimeoutError):
        return BrokerUnavailable(
            f"redis at {address} did not answer while {doing} within the client's socket "
            f"timeout ({text}): whether it applied is unknown; the server is paused, "
            "overloaded or cut off: read the object's state before doing it again")
    return BrokerUnavailable(
        f"redis at {address}: the connection dropped while {doing} ({text}): whether it "
        "applied is unknown; the client reconnects by itself: read the object's state "
        "before doing it again")


@contextlib.asynccontextmanager
async def mapped_errors(address: str, doing: str) -> AsyncIterator[None]:
    """Map redis-py's exceptions raised inside to the typed broker errors, naming the
    server at ``address`` and what it was ``doing``."""
    try:
        yield
    except rexc.AuthenticationError as exc:
        raise BrokerAuthenticationFailed(
            f"redis at {address} refused the credentials ({exc}); put the password "
            "in the URL (redis://:PASSWORD@host:port/db) or pass credentials="
        ) from None
    except rexc.OutOfMemoryError as exc:
        raise BrokerOutOfMemory(
            f"redis at {address} is out of memory and refused {doing} ({exc}); "
            "nothing was stored: consume (pops, claims and acks still work), or raise "
            "the server's maxmemory") from None
    except rexc.ResponseError as exc:
        text = str(exc)
        if "NOAUTH" in text or "WRONGPASS" in text:
            raise BrokerAuthenticationFailed(
                f"redis at {address} needs a password: {text}") from None
        if "INCOMPATIBLE" in text or "WRONGTYPE" in text:
            detail = text.split("INCOMPATIBLE", 1)[-1].strip()
            raise IncompatibleBrokerObject(
                f"redis at {address}: {detail}; use another name or delete the "
                "existing keys") from None
        if text.startswith("LOST "):
            raise BrokerObjectLost(
                f"redis at {address}: {doing}: {lost_advice(text)}") from None
        raise BrokerError(f"redis at {address} refused {doing}: {text}") from None
    except rexc.InvalidResponse:
        raise BrokerUnavailable(
            f"redis at {address} answered {doing} in another protocol: it is not a "
            "Redis server (check the host and port)") from None
    except rexc.BusyLoadingError:
        raise BrokerUnavailable(
            f"redis at {address} is loading its data (it was just started) and refused "
            f"{doing}; nothing was changed: try again in a moment") from None
    except (rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
        raise unreachable(address, doing, exc) from None
    except rexc.RedisError as exc:
        raise BrokerError(f"redis at {address} failed {doing}: {exc}") from None
