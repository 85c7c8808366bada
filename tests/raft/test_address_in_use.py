"""A node whose address something else listens on is refused with ``AddressInUse``
(an ``InvalidConfiguration`` and an ``OSError``) naming the address and the fix, and
leaves nothing running or locked."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest

from lazily_queue import AddressInUse, ClientAccess, ClientGrant, InvalidConfiguration, Node

SECRET = "s3cret-address"


def _check(error: AddressInUse, address: str) -> None:
    assert isinstance(error, InvalidConfiguration) and isinstance(error, OSError)
    assert error.errno == errno.EADDRINUSE and error.address == address
    assert address in str(error) and "another process" in str(error), error
    assert "stop it, or give" in str(error), error


async def test_two_nodes_on_one_unix_address(short_tmp: Path) -> None:
    address = f"unix://{short_tmp}/n.sock"
    async with Node(1, data_dir=short_tmp / "a", listen=address, secret=SECRET) as first:
        with pytest.raises(AddressInUse) as caught:
            async with Node(2, data_dir=short_tmp / "b", listen=address, secret=SECRET):
                pass
        _check(caught.value, address)
        assert "node 2 cannot listen on" in str(caught.value)
        assert "another `listen` address" in str(caught.value)
        assert first.running
    async with Node(2, data_dir=short_tmp / "b", listen=address, secret=SECRET) as second:
        assert second.running  # the refused start left its directory free


async def test_a_tcp_port_another_process_listens_on(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(AddressInUse) as caught:
            async with Node(1, data_dir=tmp_path / "d", listen=address, secret=SECRET):
                pass
    _check(caught.value, address)


async def test_a_clients_address_in_use(tmp_path: Path) -> None:
    clients = "memory://address-in-use-clients"
    grant = ClientGrant("web", "token-of-web", produce=["*"])
    async with Node(1, data_dir=tmp_path / "a", listen="memory://address-in-use-1",
                    secret=SECRET, clients=ClientAccess([grant], listen=clients)):
        with pytest.raises(AddressInUse) as caught:
            async with Node(2, data_dir=tmp_path / "b", listen="memory://address-in-use-2",
                            secret=SECRET, clients=ClientAccess([grant], listen=clients)):
                pass
    _check(caught.value, clients)
    assert "node 2 cannot listen for clients on" in str(caught.value)
    assert "give its clients another address" in str(caught.value)
