"""WebRTC needs the ``webrtc`` extra; without it a WebRTC address fails at once, naming it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from lazily_transports import (
    AddressError,
    Mesh,
    MissingDependencyError,
    SchemeTable,
    TransportError,
    dial,
    listen,
)
from transport_helpers import make_config

pytestmark = pytest.mark.timeout(60)

WEBRTC_SCHEMES = ("webrtc", "webrtc+ws", "webrtc+wss")
FIX = r"pip install -e '\.\[webrtc\]' in the lazily-queue clone"


@pytest.fixture
def without_aiortc(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import aiortc`` fails from now on, as in an install without the extra."""
    monkeypatch.setitem(sys.modules, "aiortc", None)


async def _idle(stream: object) -> None:
    return None


@pytest.mark.parametrize("scheme", WEBRTC_SCHEMES)
async def test_dial_and_listen_fail_at_once_naming_the_extra(
    scheme: str, without_aiortc: None
) -> None:
    address = f"{scheme}://127.0.0.1:9/room?peer=2"
    table = SchemeTable.builtin()
    with pytest.raises(MissingDependencyError, match=FIX) as info:
        await dial(address, make_config(1), schemes=table)
    error = info.value
    assert isinstance(error, ImportError) and isinstance(error, TransportError)
    assert not isinstance(error, AddressError)
    assert (error.extra, error.package) == ("webrtc", "aiortc")
    assert str(error).startswith(f"{scheme}:// addresses need the 'aiortc' package")
    with pytest.raises(MissingDependencyError, match=FIX):
        async with listen(address, make_config(2), _idle, schemes=table):
            pass


def test_a_mesh_with_a_webrtc_peer_fails_when_made(without_aiortc: None) -> None:
    with pytest.raises(MissingDependencyError, match=FIX):
        Mesh(make_config(1), None, {2: "webrtc+ws://127.0.0.1:9/room?peer=2"},
             schemes=SchemeTable.builtin())


def test_the_webrtc_names_fail_naming_the_extra(without_aiortc: None) -> None:
    import lazily_transports.webrtc as webrtc

    with pytest.raises(MissingDependencyError, match=FIX):
        webrtc.WebRTCTransport  # noqa: B018
    with pytest.raises(AttributeError):
        webrtc.NoSuchName  # type: ignore[attr-defined]  # noqa: B018


def test_with_the_extra_the_same_table_makes_the_transport() -> None:
    from lazily_transports.webrtc import WebRTCTransport

    table = SchemeTable.builtin()
    transport = table.transport("webrtc+ws")
    assert isinstance(transport, WebRTCTransport)
    assert table.transport("webrtc") is table.transport("webrtc+wss") is transport


def test_a_fresh_process_without_aiortc_runs_every_other_transport() -> None:
    """A base install: aiortc, aioice and PyAV cannot be imported at all."""
    code = textwrap.dedent(
        """
        import asyncio, importlib.abc, sys

        class Blocked(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("aiortc", "aioice", "av"):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, Blocked())
        import lazily_transports as t
        from lazily_transports.webrtc.signaling import SignalingServer

        async def main():
            config = t.LinkConfig(peer_id=1, session_id="s", secret=b"secret")
            async def idle(stream):
                await stream.receive()
            async with t.listen("memory://base", t.LinkConfig(
                    peer_id=2, session_id="s", secret=b"secret"), idle):
                stream = await t.dial("memory://base", config)
                await stream.aclose()
            async with SignalingServer() as server:
                try:
                    await t.dial(f"webrtc+ws://127.0.0.1:{server.port}/r?peer=2", config)
                except t.MissingDependencyError as exc:
                    print(exc)

        asyncio.run(main())
        assert not [m for m in sys.modules if m.split(".")[0] in ("aiortc", "aioice", "av")]
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "webrtc+ws:// addresses need the 'aiortc' package, which is not installed: "
        "pip install -e '.[webrtc]' in the lazily-queue clone"
    )
