"""A member of a topic's consumer group, as a client process of a running cluster.

Every process started with the same ``--group`` shares the topic's elements (each goes
to one of them; a process that dies leaves leases the others get once they expire);
each group gets every element. It is no cluster member: it links to one of the members,
authenticates with its own token, and survives a member dying (its operations go
through another one, applied once). Its members list a ``[[client]]`` named as
``--client`` (default ``consumer``) with ``consume`` on the topic::

    export GROUP_TOKEN=...                  # the token of that client
    python examples/group_consumer.py unix:///run/orders/1.sock unix:///run/orders/2.sock \\
        --topic orders --group billing --member billing-1

It prints one line per element it settled (``settled <value> by <member>``) and runs
until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys

from lazily_queue import Credentials, LazilyQueueError, connect


async def consume(members: list[str], client: str, topic: str, group: str,
                  member: str) -> None:
    credentials = Credentials.from_env(client, "GROUP_TOKEN")
    async with connect(members, credentials) as cluster:
        cell = cluster.topic(topic).group(group, visibility_timeout=10, max_deliveries=5)
        await cell.declare()
        print(f"joined {group} as {member}", flush=True)
        async for job in cell.deliveries(member, prefetch=8):
            async with job:  # acked when the block ends, nacked if it raises
                print(f"settled {json.dumps(job.value)} by {member}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("members", nargs="+", help="addresses of the cluster's members")
    parser.add_argument("--client", default="consumer", help="this client's name")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="billing")
    parser.add_argument("--member", default="member-1", help="this member's name")
    args = parser.parse_args()
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(consume(args.members, args.client, args.topic, args.group, args.member))
    except LazilyQueueError as exc:  # refused credentials or permissions, no member, ...
        sys.exit(f"group_consumer.py: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
