"""Which client links proved a grant's previous token, so an operator replacing a token
knows when every client has moved to the new one (README "Rotating a client's token")."""

from __future__ import annotations

import logging
from collections import Counter

from lazily_transports import LinkAttribute, LinkStream, LogLimiter

log = logging.getLogger(__name__)

#: ``LinkAttribute.credential_token`` of a link that proved its grant's previous token
#: (the access's credential lookup gives the token first, the previous one second).
PREVIOUS = 1


class PreviousTokens:
    """Counts, per client name, the links that proved its previous token, and says so in
    the log (at most one line per 10 s, naming the client and where it linked from)."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        #: Client name -> links it made with its previous token since the start.
        self.links: Counter[str] = Counter()
        self._log = LogLimiter()

    def seen(self, stream: LinkStream, name: str) -> None:
        """Count ``stream`` (a link of client ``name``) if it proved the previous token."""
        if stream.extra(LinkAttribute.credential_token, None) != PREVIOUS:
            return
        self.links[name] += 1
        if self._log.allow():
            log.info("node %s: client %r linked from %s with its previous token (%d links so "
                     "far): move it to its new token before dropping `previous_token`",
                     self.node_id, name, stream.extra(LinkAttribute.remote_address, "?"),
                     self.links[name])
