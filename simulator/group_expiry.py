"""A consumer group of a topic with expiry in the simulation.

:class:`GroupTtlClient` declares a topic of its own (:data:`GROUP_TOPIC`, age limit
:data:`AGE_MS`) and a group of it at its tail, then publishes (half with a TTL of their
own), claims from the group one or a few at a time, acks, nacks or abandons what it
holds and sometimes sweeps the group, through whichever member it is on, under every
fault; the leader's maintenance sweeps, collects and reaps too. The checker replays
those ops through :class:`~.group_model.ExpiringGroupModel`.
"""

from __future__ import annotations

from typing import Any

from lazily_queue.core.groups import group_queue_name
from lazily_queue.replicated import ops as C

from .work_expiry import MAX_DELIVERIES, TTLS, VISIBILITY_MS, WorkTtlClient, _ignore

GROUP_TOPIC, GROUP = "t-ttl", "g"
GROUP_QUEUE = group_queue_name(GROUP_TOPIC, GROUP)
#: The topic's age limit (ms).
AGE_MS = 400


class GroupTtlClient(WorkTtlClient):
    """Publishes to :data:`GROUP_TOPIC` and works its group (module docstring)."""

    kind = "group-ttl-client"
    queue = GROUP_QUEUE

    def declarations(self) -> list[tuple[int, list[Any]]]:
        return [(C.TOPIC_DECLARE, [GROUP_TOPIC]),
                (C.EXPIRY_RULES, [GROUP_TOPIC, "topic", None, AGE_MS]),
                (C.GROUP_DECLARE, [GROUP_TOPIC, GROUP, VISIBILITY_MS, MAX_DELIVERIES, "tail"])]

    def push(self, value: str) -> None:
        if self.rng.random() < 0.5:
            self.call(C.TOPIC_PUBLISH_OPTIONS, [GROUP_TOPIC, {"ttl_ms": self.rng.choice(TTLS)},
                                                value], _ignore)
        else:
            self.call(C.TOPIC_PUBLISH, [GROUP_TOPIC, value], _ignore)
