"""How nats-py's exceptions become the typed broker errors: the JetStream error codes
this library tells apart, and :func:`typed_error`."""

from __future__ import annotations

import nats.errors
import nats.js.errors as jserr

from ..errors import MessageTooLarge
from .errors import (
    BrokerError,
    BrokerObjectLost,
    BrokerOutOfMemory,
    BrokerUnavailable,
    IncompatibleBrokerObject,
)
from .nats_requests import ConnectionDropped

#: JetStream error codes this backend tells apart.
STREAM_NAME_IN_USE = 10058
#: JetStream's answer about a stream that does not exist.
STREAM_NOT_FOUND = 10059
#: JetStream's answer when another stream already takes the subjects.
SUBJECTS_OVERLAP = 10065
#: A stream's own limit refused a message; ``max_msgs`` (a capacity) says MAX_MESSAGES.
MAX_MESSAGES_EXCEEDED, MAX_MESSAGES = 10077, "maximum messages exceeded"
#: JetStream's answers when its storage or memory (server or account limit) is used up:
#: insufficient resources, memory resources exceeded, storage resources exceeded.
INSUFFICIENT_RESOURCES = frozenset({10023, 10028, 10047})
#: JetStream's answer while its cluster has no meta leader ("temporarily unavailable").
JETSTREAM_UNAVAILABLE = 10008
#: The error of a publish whose ``Nats-Expected-Last-Sequence`` does not hold.
WRONG_LAST_SEQUENCE = 10071

#: What nats-py raises when the server did not answer (or could not be reached).
UNANSWERED = (nats.errors.TimeoutError, TimeoutError, nats.errors.NoRespondersError,
              nats.errors.ConnectionClosedError, jserr.NoStreamResponseError, OSError)


def typed_error(exc: Exception, address: str, doing: str, max_payload: int
                ) -> BrokerError | MessageTooLarge | None:
    """The typed error ``exc`` (raised by nats-py while ``doing``, on the server at
    ``address`` whose ``max_payload`` is given) stands for; ``None`` for an exception
    that is not nats-py's, which is raised as it is."""
    if isinstance(exc, BrokerError):
        return exc
    if isinstance(exc, jserr.APIError):
        return _refusal(exc, address, doing)
    if isinstance(exc, nats.errors.MaxPayloadError):
        return MessageTooLarge(
            f"nats at {address}: {doing}: the message is over the server's "
            f"max_payload of {max_payload} bytes (headers included); nothing was stored: "
            "send smaller messages, or raise max_payload in the server's configuration",
            size=None, limit=max_payload)
    if isinstance(exc, (nats.errors.OutboundBufferLimitError,
                        nats.errors.ConnectionReconnectingError)):
        return BrokerUnavailable(
            f"nats at {address} is unreachable (the connection is being "
            f"re-established) while {doing}: nothing was sent; try again once the "
            f"server is back ({exc!r})")
    if isinstance(exc, ConnectionDropped):
        return BrokerUnavailable(
            f"nats at {address}: the connection dropped while {doing} (the server "
            "stopped, or the network failed): whether it applied is unknown; the client "
            "reconnects by itself: try again")
    if isinstance(exc, UNANSWERED):
        return BrokerUnavailable(f"nats at {address} did not answer while {doing}: {exc!r}")
    return None


def _refusal(exc: jserr.APIError, address: str, doing: str) -> BrokerError:
    """The typed error of JetStream's answer ``exc`` refusing what was being done."""
    if exc.err_code in INSUFFICIENT_RESOURCES:
        return BrokerOutOfMemory(
            f"nats at {address} has no JetStream storage left and refused "
            f"{doing} ({exc.description}); nothing was stored: consume (pulls and "
            "acks still work), or raise the server's or account's max_file_store "
            "/ max_memory_store")
    if exc.err_code == MAX_MESSAGES_EXCEEDED:
        return BrokerOutOfMemory(
            f"nats at {address}: a limit of the stream refused {doing} "
            f"({exc.description}); nothing was stored: consume (pulls and acks still "
            "work), or raise the stream's max_bytes / max_msgs(_per_subject)")
    if isinstance(exc, jserr.ServiceUnavailableError) and exc.err_code in (
            None, JETSTREAM_UNAVAILABLE):
        return BrokerUnavailable(
            f"nats at {address} answered that JetStream is not available while "
            f"{doing}: run nats-server with JetStream enabled (-js, or a jetstream "
            "{ store_dir: ... } block in its configuration); a cluster may also "
            "still be electing its JetStream leader")
    if exc.err_code == STREAM_NOT_FOUND:
        return BrokerObjectLost(
            f"nats at {address}: {doing}: the stream is gone (deleted outside "
            "this library, or lost with the server's data); nothing was changed: "
            "try again (the object's next refresh or operation declares it)")
    if exc.err_code == STREAM_NAME_IN_USE:
        return IncompatibleBrokerObject(
            f"nats at {address}: {doing}: a stream of that name exists with "
            "another configuration; use another name or delete it")
    return BrokerError(f"nats at {address} refused {doing}: {exc}")
