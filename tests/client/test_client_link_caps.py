"""A member caps the client links it holds open: per client (its grant's ``max_links``)
and in all (``ClientAccess(max_links=)``, lowered to fit the open-file limit). A link
over a cap is refused with a message the client raises as :class:`TooManyLinks`; other
clients stay served, and a closed link frees its place at once."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import resource
import sys
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from lazily_transports import LinkConfig, LinkStream, dial

from lazily_queue import (
    ClientAccess,
    ClientGrant,
    ClusterClient,
    Node,
    TooManyLinks,
    Unreachable,
    connect,
)
from lazily_queue.client import link_caps
from lazily_queue.config import ConfigError
from lazily_queue.out_of_files import OutOfFiles
from tests.client.one_member import client_stats, one_member, web_client_config

pytestmark = pytest.mark.timeout(60)

WEB, OTHER = b"token-of-the-web-tier", b"token-of-the-other-tier"


def member(*, web_links: int = 64, total: int = 4096) -> AbstractAsyncContextManager[Node]:
    """A one-member cluster serving clients ``web`` (at most ``web_links`` links) and
    ``other``, ``total`` client links in all."""
    grants = [ClientGrant("web", WEB, produce=["*"], max_links=web_links),
              ClientGrant("other", OTHER, produce=["*"])]
    return one_member(ClientAccess(grants, max_links=total))


def _client(node: Node, name: str = "web", **options: Any) -> ClusterClient:
    assert node.listen is not None
    return connect(node.listen, (name, WEB if name == "web" else OTHER),
                   connect_timeout=5.0, **options)


async def test_a_client_over_its_max_links_is_refused_and_others_are_served() -> None:
    async with member(web_links=2) as node, AsyncExitStack() as held:
        clients = [await held.enter_async_context(_client(node)) for _ in range(2)]
        with pytest.raises(TooManyLinks, match=r"client 'web' already holds 2 links to "
                           r"member 1, its cap \(max_links = 2 in its \[\[client\]\] table"):
            await _client(node).start()
        assert client_stats(node)["links_refused"] == 1
        async with _client(node, "other") as other:  # another client is served
            await other.queue("jobs").push(1)
        await clients[0].queue("jobs").push(2)  # and so are the links held
        await clients[0].close()  # a closed link frees its place at once
        async with _client(node) as again:
            await again.queue("jobs").push(3)
        assert node.queue("jobs").len() == 3
        assert client_stats(node)["links_refused"] == 1


async def test_a_member_over_its_client_links_refuses_any_client() -> None:
    async with member(total=2) as node, AsyncExitStack() as held:
        for name in ("web", "other"):
            await held.enter_async_context(_client(node, name))
        with pytest.raises(TooManyLinks, match=r"member 1 already holds 2 client links, its "
                           r"cap \(max_client_links = 2 in its configuration"):
            await _client(node, "other").start()
        assert isinstance(TooManyLinks("x"), Unreachable)


async def test_a_client_takes_at_most_a_quarter_of_the_members_links_whatever_its_grant(
) -> None:
    """A grant with a raised ``max_links`` does not let its client take every client
    link of a member serving others: a quarter of them stays its share."""
    async with member(web_links=1000, total=8) as node, AsyncExitStack() as held:
        for _ in range(2):
            await held.enter_async_context(_client(node))
        with pytest.raises(TooManyLinks, match=r"client 'web' already holds 2 links to "
                           r"member 1, its share of the member's client links \(a quarter "
                           r"of its cap of 8"):
            await _client(node).start()
        async with _client(node, "other") as other:  # the others link and are served
            await other.queue("jobs").push(1)
        assert client_stats(node)["links_refused"] == 1


def test_the_only_client_of_a_member_has_no_share_of_its_links() -> None:
    caps = link_caps.LinkCaps("1", 8, clients=1)
    assert all(caps.admit("web", 1000) is None for _ in range(8))
    assert caps.admit("web", 1000) is not None  # the cap in all
    shared = link_caps.LinkCaps("1", 8, clients=2)
    assert [shared.admit("web", 1000) is None for _ in range(3)] == [True, True, False]


async def test_a_client_linking_again_is_not_refused_for_the_link_it_lost() -> None:
    """The member drops the client's only link it may hold: the client links again at
    once, and that link is not counted against the dropped one."""
    async with member(web_links=1) as node:
        async with _client(node, ping_interval=0.2, ping_timeout=1.0) as client:
            await client.queue("jobs").push(1)
            assert node.clients is not None
            for conn in list(node.clients._conns):
                conn.close()
            await client.queue("jobs").push(2)
            assert client.links == 2
        assert node.queue("jobs").len() == 2
        assert client_stats(node)["links_refused"] == 0


async def _cut_off_over_its_cap(node: Node) -> LinkStream:
    """A second link of "web" (it says no hello), then "web" held to one link and its
    client's link closed: the client's next links are refused over the cap until the
    returned one closes."""
    assert node.clients is not None and node.listen is not None
    other = await dial(node.listen, LinkConfig(peer_id=0, session_id="x", secret=WEB,
                                               credential="web"))
    while node.clients.links.total < 2:  # noqa: ASYNC110 - the member counts it
        await asyncio.sleep(0.01)
    access = node.clients.access
    access.grants["web"] = dataclasses.replace(access.grants["web"], max_links=1)
    for conn in list(node.clients._conns):
        if conn.session is not None:  # the client's link (the other said no hello)
            conn.close()
    return other


async def test_operations_of_a_client_refused_everywhere_fail_with_too_many_links() -> None:
    """A linked client loses its link and its member then refuses it over a cap: its
    operations fail with :class:`TooManyLinks` naming the cap; once a place frees, it
    links again and is served."""
    async with member(web_links=2) as node, _client(node, op_timeout=1.0) as client:
        await client.queue("jobs").push(1)
        other = await _cut_off_over_its_cap(node)
        with pytest.raises(TooManyLinks, match=r"no member reachable.*max_links = 1"):
            await client.queue("jobs").push(2)
        await other.aclose()
        await client.queue("jobs").push(3)
        assert node.queue("jobs").len() in (2, 3)  # the refused push: outcome unknown


async def test_the_open_file_limit_lowers_the_cap_in_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    soft = 66
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (soft, soft))
    assert link_caps.fd_room() == (2, soft)  # 64 kept for what is not a client link
    async with member() as node, AsyncExitStack() as held:
        for name in ("web", "other"):
            await held.enter_async_context(_client(node, name))
        with pytest.raises(TooManyLinks, match=r"max_client_links = 2 in its configuration, "
                           r"ClientAccess\(max_links=\), lowered from 4096 to fit the "
                           r"open-file limit \(ulimit -n 66\)"):
            await _client(node).start()


def test_caps_are_grant_access_and_toml_settings(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert ClientGrant("web", WEB).max_links == link_caps.DEFAULT_MAX_LINKS_PER_CLIENT == 64
    assert ClientAccess([]).max_links == link_caps.DEFAULT_MAX_CLIENT_LINKS == 4096
    for bad in (0, -1, True, "8"):
        with pytest.raises(ValueError, match="max_links must be an int >= 1"):
            ClientGrant("web", WEB, max_links=bad)
        with pytest.raises(ValueError, match="max_links must be an int >= 1"):
            ClientAccess([], max_links=bad)
    config = tmp_path / "node.toml"

    def loaded(top: str, client: str) -> Any:
        return web_client_config(config, top, client)

    monkeypatch.setenv("LQ_WEB", WEB.decode())
    access = loaded("max_client_links = 10", "max_links = 3").client_access()
    assert access.max_links == 10 and access.grants["web"].max_links == 3
    access = loaded("", "").client_access()
    assert access.max_links == 4096 and access.grants["web"].max_links == 64
    with pytest.raises(ConfigError, match="max_client_links"):
        loaded("max_client_links = 0", "")
    with pytest.raises(ConfigError, match=r"\[\[client\]\] 'web': .*max_links"):
        loaded("", 'max_links = "many"')


def test_refused_accepts_at_the_open_file_limit_log_one_line() -> None:
    """asyncio's error with a traceback for every accept the open-file limit refuses
    becomes one line per interval, saying what to change."""
    files = OutOfFiles()
    try:
        raise OSError(24, "Too many open files")
    except OSError:
        exc_info = sys.exc_info()
    records = [logging.LogRecord("asyncio", logging.ERROR, __file__, 1,
                                 "socket.accept() out of system resource\nsocket: <x>", (),
                                 exc_info) for _ in range(100)]
    passed = [r for r in records if files.filter(r)]
    assert len(passed) == 1 and passed[0].exc_info is None
    line = passed[0].getMessage()
    assert "\n" not in line and "Too many open files" in line and "ulimit -n" in line
    assert files.dropped == 99
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "other", (), None)
    assert files.filter(other) and other.getMessage() == "other"


async def test_a_refused_link_is_closed_when_too_many_refused_links_wait() -> None:
    """Beyond :data:`HELD_REFUSED` refused links waiting for their clients to close
    them, a refused link is closed at once (each holds a file descriptor)."""
    caps = link_caps.LinkCaps("1", 1)
    assert caps.admit("web", 8) is None
    refusal = caps.admit("web", 8)
    assert refusal is not None and caps.refused == 1 and caps.total == 1
    caps.holding = link_caps.HELD_REFUSED

    class Stream:
        sent: list[bytes] = []
        closed = False

        async def send(self, data: bytes) -> None:
            self.sent.append(data)

        async def receive(self) -> bytes:
            await asyncio.sleep(30)
            return b""

        async def aclose(self) -> None:
            self.closed = True

    stream = Stream()
    async with asyncio.timeout(0.5):
        await caps.refuse(stream, refusal)  # type: ignore[arg-type]
    assert stream.closed and len(stream.sent) == 1
    caps.release("web")
    assert caps.total == 0 and not caps.open


async def test_an_operation_sent_only_on_links_refused_over_a_cap_was_not_applied() -> None:
    """A member reads and drops what a link it refuses over a cap sends: an operation
    whose every attempt went on such links fails as not applied."""
    async with member(web_links=2) as node, _client(node, op_timeout=1.0, ping_interval=0.2,
                                                     ping_timeout=1.0) as client:
        await client.queue("jobs").push(1)
        other = await _cut_off_over_its_cap(node)
        while client.links < 2:  # noqa: ASYNC110 - it linked again, and was refused
            await asyncio.sleep(0.01)
        with pytest.raises(TooManyLinks) as refused:
            await client.queue("jobs").push(2)
        assert refused.value.applied is False, str(refused.value)
        assert "it was not applied" in str(refused.value)
        await other.aclose()
        await client.queue("jobs").push(3)
        assert node.queue("jobs").len() == 2
