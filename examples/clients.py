"""A member serving clients and a client of it, in one script (run it as shown below).

In a deployment the member is a ``lazily-queue node`` (its ``[[client]]`` tables give
the same grants) and the client any other process: a web worker, a script, a cron job.

    export APP_CLUSTER_SECRET=$(openssl rand -hex 32) APP_WEB_TOKEN=$(openssl rand -hex 16)
    python examples/clients.py
"""

from __future__ import annotations

import asyncio
import os

from lazily_queue import ClientAccess, ClientGrant, Credentials, LazilyQueueError, Node, connect


async def main() -> None:
    grant = ClientGrant("web", os.environ["APP_WEB_TOKEN"], produce=["jobs"], consume=["jobs"])
    member = Node(1, data_dir=None, durability="none", listen="unix:clients-example.sock",
                  secret=os.environ["APP_CLUSTER_SECRET"], clients=ClientAccess([grant]))
    async with member:
        await member.wait_for_leader()
        web = Credentials.from_env("web", "APP_WEB_TOKEN")
        async with connect(["unix:clients-example.sock"], web) as client:
            jobs = client.work_queue("jobs")
            await jobs.push({"resize": "cat.png"})
            async for job in jobs.deliveries("worker-1", prefetch=1):
                async with job:  # acked (committed) when the block ends
                    print("done", job.value, "through member", client.member)
                break
            await client.barrier()
            print("pending", jobs.pending_len(), "in flight", jobs.in_flight_len())


if __name__ == "__main__":
    if not {"APP_CLUSTER_SECRET", "APP_WEB_TOKEN"} <= os.environ.keys():
        raise SystemExit("export APP_CLUSTER_SECRET and APP_WEB_TOKEN first (see the docstring)")
    try:
        asyncio.run(main())
    except LazilyQueueError as exc:  # a token too short, refused credentials, ...
        raise SystemExit(f"clients.py: {type(exc).__name__}: {exc}") from None
