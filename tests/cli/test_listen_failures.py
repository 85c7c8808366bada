"""A node that cannot listen says what to change for the cause it met."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from lazily_queue.config import ConfigError, load_config
from lazily_queue.service import NodeService


class _FailedListen:
    """A node whose listen fails with ``error``."""

    def __init__(self, error: OSError) -> None:
        self.error = error

    async def start(self) -> None:
        raise self.error

    async def stop(self) -> None:
        return None


async def _refusal(tmp_path: Path, listen: str, error: OSError) -> str:
    config = tmp_path / "node.toml"
    config.write_text(f'id = 1\ndata_dir = "d"\nlisten = "{listen}"\nsecret_env = "S"\n')
    service = NodeService(load_config(config), handle_signals=False)
    with pytest.raises(ConfigError) as caught:
        await service._start_node(_FailedListen(error))  # type: ignore[arg-type]
    return str(caught.value)


async def test_a_signaling_server_not_reached_is_named_not_another_node(
        tmp_path: Path) -> None:
    message = await _refusal(
        tmp_path, "webrtc+ws://127.0.0.1:8799/orders?peer=1",
        ConnectionError("cannot reach signaling server 'ws://127.0.0.1:8799/orders': "
                        "[Errno 111] Connect call failed ('127.0.0.1', 8799)"))
    assert "cannot reach signaling server" in message, message
    assert "check that the signaling server runs at that address" in message, message
    assert "another node" not in message, message


async def test_a_webrtc_peer_id_taken_in_the_room_is_another_node(tmp_path: Path) -> None:
    message = await _refusal(
        tmp_path, "webrtc+ws://127.0.0.1:8765/orders?peer=1",
        OSError(errno.EADDRINUSE, "cannot join ws://127.0.0.1:8765/orders as peer 1: "
                                  "peer_taken: peer 1 is already joined"))
    assert "if another node with id 1 is running" in message, message


async def test_an_address_this_machine_does_not_have_is_named(tmp_path: Path) -> None:
    message = await _refusal(
        tmp_path, "tcp://10.9.9.9:7101",
        OSError(errno.EADDRNOTAVAIL, "error while attempting to bind on address "
                                     "('10.9.9.9', 7101): cannot assign requested address"))
    assert "this machine has no such address" in message, message
    assert "another node" not in message, message


async def test_an_address_in_use_may_be_another_node(tmp_path: Path) -> None:
    message = await _refusal(tmp_path, "tcp://127.0.0.1:7101",
                             OSError(errno.EADDRINUSE, "address already in use"))
    assert "if another node with id 1 is running" in message, message
