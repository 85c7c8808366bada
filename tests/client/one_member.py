"""A one-member cluster on a short Unix socket path, serving client "web" (produce on
every name) with :data:`TOKEN`: the member tests of single client behaviours link to."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lazily_queue import ClientAccess, ClientGrant, Node

TOKEN = b"token-of-the-web-tier"


@asynccontextmanager
async def one_member(**options: Any) -> AsyncIterator[Node]:
    """The member, started and led; ``options`` go to :class:`Node`."""
    path = Path(tempfile.mkdtemp(prefix="lqm-", dir="/tmp"))
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{path}/n1.sock",
                secret=b"the-cluster-secret",
                clients=ClientAccess([ClientGrant("web", TOKEN, produce=["*"])]), **options)
    try:
        async with node:
            await node.wait_for_leader()
            yield node
    finally:
        shutil.rmtree(path, ignore_errors=True)
