"""A member that accepts connections and never answers (paused by SIGSTOP, a frozen VM:
the kernel still completes the connect) does not keep a client from linking to the
others when it is listed first."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def hung_member() -> AsyncIterator[str]:
    """A unix: address whose listener accepts and never says a word."""
    where = Path(tempfile.mkdtemp(prefix="lqh-", dir="/tmp"))
    held: list[asyncio.StreamWriter] = []

    async def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_unix_server(accept, path=str(where / "hung.sock"))
    try:
        yield f"unix:{where / 'hung.sock'}"
    finally:
        server.close()
        for writer in held:
            writer.close()
        shutil.rmtree(where, ignore_errors=True)


async def test_a_client_links_past_a_hung_member_listed_first(hung_member: str) -> None:
    async with cluster_with_clients(1) as (_, addresses):
        async with client_of([hung_member, *addresses], connect_timeout=3) as client:
            await client.queue("q").push("x")
            assert client.member == "1"


async def test_a_hung_member_alone_is_named_in_the_error(hung_member: str) -> None:
    client = client_of([hung_member], connect_timeout=1)
    with pytest.raises(Exception, match="unreachable") as failed:
        await client.start()
    assert "not tried" not in str(failed.value)
