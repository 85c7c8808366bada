"""A client used before it is opened says how to open it: a forgotten ``await`` on
``connect()`` is the usual cause."""

from __future__ import annotations

import pytest

from lazily_queue import ClientClosed, connect


async def test_a_client_never_opened_says_how_to_open_it() -> None:
    client = connect(["unix:nobody-listens.sock"], ("web", "a-token-of-16-chars"))
    with pytest.raises(ClientClosed, match=r"not open yet: use it inside `async with connect"):
        await client.queue("jobs").push(1)
    with pytest.raises(ClientClosed, match=r"^barrier: the client is closed, or not open yet"):
        await client.barrier()
