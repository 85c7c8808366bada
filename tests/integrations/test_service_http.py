"""The HTTP server of ``lazily-queue node`` bounds what a stranger's connections hold:
an idle or half-sent request is closed after a while, and one source cannot open more
than its share of connections (the node's file descriptors serve its journal and links);
its advertised page address is one of its own origins for the admin API."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from lazily_transports import AdmissionGate
from prometheus_client.parser import text_string_to_metric_families

from lazily_queue import http_gate, service_http
from lazily_queue.config import parse_config
from lazily_queue.monitor import Monitor
from lazily_queue.service import NodeService

TOKEN = "service-admin-token-0123456789"


@contextlib.asynccontextmanager
async def one_node(root: Path, monkeypatch: pytest.MonkeyPatch,
                   **extra: str) -> AsyncIterator[tuple[str, int]]:
    monkeypatch.setenv("LAZILY_HTTP_SECRET", "http-secret")
    monkeypatch.setenv("LAZILY_HTTP_ADMIN", TOKEN)
    node = NodeService(parse_config({"id": 1, "data_dir": "d1", "http": "127.0.0.1:0",
                                     "durability": "none", "secret_env": "LAZILY_HTTP_SECRET",
                                     "admin_token_env": "LAZILY_HTTP_ADMIN",
                                     "peers": {"1": f"unix:{root}/n1.sock"}, **extra},
                                    base=root),
                       out=io.StringIO(), handle_signals=False)
    task = asyncio.create_task(node.run())
    try:
        async with asyncio.timeout(20):
            while node.http_url is None or node.node is None or node.node.leader_id is None:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        parts = urlsplit(node.http_url)
        assert parts.hostname is not None and parts.port is not None
        yield parts.hostname, parts.port
    finally:
        node.request_stop()
        assert await task == 0


async def status_of(host: str, port: int) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET /status.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return (await reader.readline()).rstrip()
    finally:
        writer.close()


async def closed_by_the_node(reader: asyncio.StreamReader, within: float) -> bool:
    try:
        async with asyncio.timeout(within):
            return await reader.read(1) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def test_idle_and_half_sent_requests_are_closed(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_http, "HTTP_IDLE_TIMEOUT", 0.5)
    async with one_node(tmp_path, monkeypatch) as (host, port):
        idle = await asyncio.open_connection(host, port)
        half = await asyncio.open_connection(host, port)
        half[1].write(b"GET /status.json HTTP/1.1\r\nHost: x\r\n")  # never finished
        assert await closed_by_the_node(idle[0], within=5)
        assert await closed_by_the_node(half[0], within=5)
        assert await status_of(host, port) == b"HTTP/1.1 200 OK"


async def test_one_source_cannot_take_every_connection(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_http, "HTTP_MAX_PER_SOURCE", 4)
    async with one_node(tmp_path, monkeypatch) as (host, port):
        held = [await asyncio.open_connection(host, port) for _ in range(4)]
        extra = await asyncio.open_connection(host, port)
        assert await closed_by_the_node(extra[0], within=2)
        held[0][1].write(b"GET /status.json HTTP/1.1\r\nHost: x\r\n\r\n")  # held ones work
        assert (await held[0][0].readline()).rstrip() == b"HTTP/1.1 200 OK"
        for _, writer in held:
            writer.close()
        await asyncio.sleep(0.2)
        assert await status_of(host, port) == b"HTTP/1.1 200 OK"  # slots given back


async def document(host: str, port: int, path: str) -> bytes | None:
    """The body of the node's answer to ``GET path`` (``None`` while the connection
    asking for it is refused)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        head, _, body = (await reader.read()).partition(b"\r\n\r\n")
    except ConnectionError:
        return None
    finally:
        writer.close()
    if not head:
        return None
    assert head.startswith(b"HTTP/1.1 200 "), head
    return body


async def http_figures(host: str, port: int) -> dict[str, int]:
    """The ``http`` section of the node's ``/status.json`` (empty while the connection
    asking for it is refused)."""
    body = await document(host, port, "/status.json")
    figures: dict[str, int] = {} if body is None else json.loads(body)["http"]
    return figures


async def http_metrics(host: str, port: int) -> dict[str, float]:
    """The ``lazily_queue_http_*`` samples of the node's ``/metrics`` (empty while the
    connection asking for it is refused)."""
    body = await document(host, port, "/metrics")
    return {} if body is None else {
        sample.name: sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples if sample.name.startswith("lazily_queue_http_")}


async def test_the_status_and_metrics_show_the_http_servers_connections(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service_http, "HTTP_MAX_PER_SOURCE", 3)
    async with one_node(tmp_path, monkeypatch) as (host, port):
        held = [await asyncio.open_connection(host, port) for _ in range(3)]
        extra = await asyncio.open_connection(host, port)
        assert await closed_by_the_node(extra[0], within=2)
        held.pop()[1].close()  # room for the status reads
        async with asyncio.timeout(10):  # the document is rebuilt at most every so often
            while (figures := await http_figures(host, port)).get(  # noqa: ASYNC110 - polls
                    "refused_connections", 0) < 1:
                await asyncio.sleep(0.1)
        assert figures.pop("refused_connections") >= 1  # the status reads may be too
        assert figures == {"open_connections": 3, "max_connections": 256,
                           "max_per_source": 3, "evicted_connections": 0,
                           "stalled_connections": 0}
        async with asyncio.timeout(10):
            while (metrics := await http_metrics(host, port)).get(  # noqa: ASYNC110 - polls
                    "lazily_queue_http_refused_connections_total", 0) < 1:
                await asyncio.sleep(0.1)
        assert metrics == {"lazily_queue_http_open_connections": 3,
                           "lazily_queue_http_open_connections_limit": 256,
                           "lazily_queue_http_connections_per_source_limit": 3,
                           "lazily_queue_http_refused_connections_total":
                               metrics["lazily_queue_http_refused_connections_total"],
                           "lazily_queue_http_evicted_connections_total": 0,
                           "lazily_queue_http_stalled_connections_total": 0}
        for _, writer in held:
            writer.close()


Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def answered(stream: Stream) -> bool:
    """Whether a request on ``stream`` is answered 200 (its whole answer read)."""
    reader, writer = stream
    writer.write(b"GET /vitals.json HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
    except (asyncio.IncompleteReadError, ConnectionError):
        return False
    length = next(int(line.split(":")[1]) for line in head.split("\r\n")
                  if line.lower().startswith("content-length:"))
    await reader.readexactly(length)
    return head.startswith("HTTP/1.1 200 ")


async def held_from(source: str, host: str, port: int, count: int) -> list[Stream]:
    """``count`` connections from ``source``, each answered once and kept open."""
    held = []
    for _ in range(count):
        stream = await asyncio.open_connection(host, port, local_addr=(source, 0))
        assert await answered(stream)
        held.append(stream)
    return held


async def test_strangers_holding_every_slot_give_way_to_another_source(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every slot held from two addresses: a reader from a third (a member reading the
    vitals) is served in place of the oldest connection of a source holding the most,
    while a source holding no fewer than the others is refused, pushing out none."""
    monkeypatch.setattr(service_http, "HTTP_MAX_CONNECTIONS", 8)
    monkeypatch.setattr(service_http, "HTTP_MAX_PER_SOURCE", 8)
    async with one_node(tmp_path, monkeypatch) as (host, port):
        first = await held_from("127.0.0.2", host, port, 4)
        second = await held_from("127.0.0.3", host, port, 4)
        tie = await asyncio.open_connection(host, port, local_addr=("127.0.0.3", 0))
        assert await closed_by_the_node(tie[0], within=2)
        assert await status_of(host, port) == b"HTTP/1.1 200 OK"
        assert await closed_by_the_node(first[0][0], within=2)
        for stream in first[1:] + second:
            assert await answered(stream)
        for _, writer in first + second:
            writer.close()
        async with asyncio.timeout(10):
            while (await http_figures(host, port)).get(  # noqa: ASYNC110 - polls
                    "evicted_connections", 0) < 1:
                await asyncio.sleep(0.1)


async def admin_status(host: str, port: int, origin: str) -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET /admin/api/queues HTTP/1.1\r\nHost: internal:8101\r\n"
                     b"Authorization: Bearer " + TOKEN.encode() + b"\r\nOrigin: "
                     + origin.encode() + b"\r\nConnection: close\r\n\r\n")
        return (await reader.readline()).rstrip()
    finally:
        writer.close()


async def test_the_advertised_page_is_a_same_origin_for_the_admin_api(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a TLS proxy the browser's origin is the public (advertised) address."""
    async with one_node(tmp_path, monkeypatch,
                        http_advertise="https://Q1.Example.com:443/lazily") as (host, port):
        assert await admin_status(host, port, "https://q1.example.com") == b"HTTP/1.1 200 OK"
        assert await admin_status(host, port, "http://internal:8101") == b"HTTP/1.1 200 OK"
        for other in ("https://evil.example", "http://q1.example.com", "null"):
            assert await admin_status(host, port, other) == b"HTTP/1.1 403 Forbidden", other


async def answer_to(host: str, port: int, path: str, host_header: str,
                    extra: bytes = b"") -> bytes:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host_header}\r\n".encode() + extra
                     + b"Connection: close\r\n\r\n")
        return await reader.read()
    finally:
        writer.close()


async def test_a_page_of_another_site_rebound_to_the_node_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: a page of evil.example, its name re-pointed at 127.0.0.1, sends
    ``Host: evil.example``; the node answers only for its own names."""
    bearer = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
    async with one_node(tmp_path, monkeypatch,
                        http_advertise="https://q1.example.com/lazily") as (host, port):
        for path in ("/", "/status.json", "/vitals.json", "/history.json",
                     "/subscribers.json?name=t", "/admin/session", "/admin/api/queues"):
            for evil in (f"evil.example:{port}", "evil.example", f"q1.example.com.evil.io:{port}"):
                answer = await answer_to(host, port, path, evil, bearer)
                assert answer.startswith(b"HTTP/1.1 421 "), (path, evil, answer[:80])
                assert b"DNS rebinding" in answer and b"http_advertise" in answer
        for own in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}",
                    "q1.example.com", "Q1.Example.com:443", "x", f"internal:{port}"):
            for path in ("/status.json", "/admin/api/queues"):
                answer = await answer_to(host, port, path, own, bearer)
                assert answer.startswith(b"HTTP/1.1 200 "), (path, own, answer[:80])


async def test_metrics_answer_only_for_the_nodes_own_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/metrics`` holds object names and figures: a rebound page of another site is
    refused it like the status page, while a scraper naming the node by its address, its
    configured or advertised name (what Prometheus sends as ``Host``) is answered."""
    async with one_node(tmp_path, monkeypatch,
                        http_advertise="https://q1.example.com/lazily") as (host, port):
        for evil in (f"evil.example:{port}", "prometheus.target.example:9"):
            answer = await answer_to(host, port, "/metrics", evil)
            assert answer.startswith(b"HTTP/1.1 421 "), (evil, answer[:80])
            assert b"421 misdirected request: " in answer and b"DNS rebinding" in answer
            assert b"lazily_queue_" not in answer
        for own in (f"{host}:{port}", f"localhost:{port}", "q1.example.com", f"node-1:{port}"):
            answer = await answer_to(host, port, "/metrics", own)
            assert answer.startswith(b"HTTP/1.1 200 "), (own, answer[:80])
            assert b"lazily_queue_" in answer


def test_own_host_names() -> None:
    names = http_gate.own_names("0.0.0.0", "https://Q1.Example.com/lazily")
    for own in (None, "127.0.0.1", "10.1.2.3:8101", "[::1]:8101", "localhost.", "a.localhost",
                "node-2", "q1.example.com.", "Q1.EXAMPLE.COM:443"):
        assert http_gate.own_host(own, names), own
    for other in ("evil.example", "evil.example.", "localhost.evil.example",
                  "127.0.0.1.evil.example", "q1.example.com.evil.io", "", "[bad", ":80"):
        assert not http_gate.own_host(other, names), other


async def login_cookie(host: str, port: int, headers: bytes) -> str:
    """The ``Set-Cookie`` header of a successful admin login."""
    body = b'{"token": "' + TOKEN.encode() + b'"}'
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(f"POST /admin/login HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
                     + b"Content-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n" + headers
                     + b"Connection: close\r\n\r\n" + body)
        answer = (await reader.read()).decode()
    finally:
        writer.close()
    assert answer.startswith("HTTP/1.1 200 "), answer[:200]
    return next(line for line in answer.split("\r\n") if line.startswith("Set-Cookie:"))


async def test_the_session_cookie_is_secure_when_the_browser_came_over_https(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a proxy ending TLS the node sees plain HTTP; the browser's https origin (or
    the proxy's ``X-Forwarded-Proto``) says the cookie must only travel over TLS."""
    async with one_node(tmp_path, monkeypatch,
                        http_advertise="https://q1.example.com") as (host, port):
        for headers in (b"Origin: https://q1.example.com\r\n", b"X-Forwarded-Proto: https\r\n",
                        b"Forwarded: for=10.0.0.1;proto=https\r\n"):
            cookie = await login_cookie(host, port, headers)
            attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")}
            assert {"httponly", "samesite", "path", "secure"} <= attributes, cookie
            assert "SameSite=Strict" in cookie and "Path=/;" in cookie + ";"
        plain = await login_cookie(host, port, f"Origin: http://{host}:{port}\r\n".encode())
        assert "secure" not in plain.lower() and "HttpOnly" in plain  # direct, over HTTP


async def test_a_reader_that_does_not_take_its_answers_is_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers wait in the node's memory for their reader: a connection whose reader
    does not take them is closed once it has waited HTTP_IDLE_TIMEOUT in all."""
    monkeypatch.setattr(service_http, "HTTP_IDLE_TIMEOUT", 0.5)
    async with (one_node(tmp_path, monkeypatch) as (host, port),
                said("whose reader took its answers for more than 0.5 s") as closed):
        loop = asyncio.get_running_loop()
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.setblocking(False)
            await loop.sock_connect(sock, (host, port))
            asked = 400  # pipelined, never read: megabytes of status pages
            await loop.sock_sendall(sock, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * asked)
            async with asyncio.timeout(20):
                await closed.wait()
            got = 0
            with contextlib.suppress(ConnectionError):
                while chunk := await loop.sock_recv(sock, 65536):
                    got += len(chunk)
        assert got < asked * len(Monitor.page())
        assert await status_of(host, port) == b"HTTP/1.1 200 OK"


@contextlib.asynccontextmanager
async def said(text: str) -> AsyncIterator[asyncio.Event]:
    """An event set once :mod:`.http_gate` logs a line holding ``text``."""
    event = asyncio.Event()
    handler = _Said(text, event)
    logger = logging.getLogger(http_gate.__name__)
    logger.addHandler(handler)
    try:
        yield event
    finally:
        logger.removeHandler(handler)


class _Said(logging.Handler):
    """Sets ``event`` once a line holding ``text`` is logged."""

    def __init__(self, text: str, event: asyncio.Event) -> None:
        super().__init__(logging.WARNING)
        self.text, self.event = text, event

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


async def test_a_request_head_holds_a_bounded_number_of_header_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection half-way through its headers holds at most HTTP_MAX_HEADERS lines of
    8 KiB (aiohttp alone allows 128: 256 such connections held 508 MiB)."""
    async with one_node(tmp_path, monkeypatch) as (host, port):
        for lines, code in ((service_http.HTTP_MAX_HEADERS - 1, b"200"),
                            (service_http.HTTP_MAX_HEADERS + 1, b"400")):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"GET /vitals.json HTTP/1.1\r\nHost: x\r\n"
                         + b"".join(b"X-%d: v\r\n" % n for n in range(lines - 2))
                         + b"Connection: close\r\n\r\n")
            assert (await reader.readline()).split()[1] == code
            writer.close()


async def test_malformed_requests_are_logged_in_one_line_at_a_bounded_rate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with one_node(tmp_path, monkeypatch) as (host, port):
        caplog.clear()
        bad = [b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 10000 + b"\r\n\r\n",
               b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X: a\r\n" * 500 + b"\r\n",
               b"GET /status.json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
               b"GET /status.json HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
               b"Content-Length: 10\r\nConnection: close\r\n\r\n0123456789"]
        for request in bad * 8:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(request)
            await reader.read()  # answered (400, or 200 for a body nobody reads), then closed
            writer.close()
        assert await status_of(host, port) == b"HTTP/1.1 200 OK"
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert 1 <= len(lines) <= 11, [r.getMessage()[:100] for r in lines]
    assert not [r for r in lines if r.exc_info or r.levelno >= logging.ERROR]
    assert "refused a malformed HTTP request from 127.0.0.1" in lines[0].getMessage()


def _node_at(root: Path, http: str) -> NodeService:
    """Node 1 of ``one_node``'s configuration, serving HTTP at ``http``."""
    return NodeService(parse_config({"id": 1, "data_dir": "d1", "http": http,
                                     "durability": "none", "secret_env": "LAZILY_HTTP_SECRET",
                                     "peers": {"1": f"unix:{root}/n1.sock"}}, base=root),
                       out=io.StringIO(), handle_signals=False)


async def test_an_http_port_in_use_stops_the_start_before_the_node_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZILY_HTTP_SECRET", "http-secret")
    taken = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = taken.sockets[0].getsockname()[1]
    try:
        node = _node_at(tmp_path, f"127.0.0.1:{port}")
        with pytest.raises(service_http.ConfigError, match=f"cannot serve HTTP on `http` = "
                           f"127.0.0.1:{port}: .*choose a free port"):
            await node.run()
    finally:
        taken.close()
    assert node.node is None  # never made, so never linked to its peers or elected
    assert not (tmp_path / "n1.sock").exists() and not (tmp_path / "d1" / "journal").exists()


async def test_a_running_nodes_twin_is_told_of_the_lock_not_of_the_http_port(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with one_node(tmp_path, monkeypatch) as (host, port):
        twin = _node_at(tmp_path, f"{host}:{port}")
        with pytest.raises(service_http.ConfigError, match="in use by another running node"):
            await twin.run()
        assert await status_of(host, port) == b"HTTP/1.1 200 OK"  # the running one serves


async def test_a_page_announce_failing_so_again_and_again_is_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """A stalled disk or a lost quorum fails the announce every second: one line until
    another failure comes."""
    from types import SimpleNamespace

    from lazily_queue.raft.errors import NoQuorum, StorageUnavailable
    from lazily_queue.service import announce_page

    stalled = StorageUnavailable("node 1 cannot write its journal: No space left on device")
    failures: list[Exception] = [stalled, stalled, stalled, NoQuorum("no quorum"), stalled]
    pages: dict[str, str] = {}

    async def call(_op: int, args: list[str], timeout: float) -> None:
        if failures:
            raise failures.pop(0)
        pages[args[0]] = args[1]

    node = SimpleNamespace(node_id="1", op_timeout=1.0, running=True,
                           view=SimpleNamespace(member_pages=pages),
                           driver=SimpleNamespace(call=call))
    with caplog.at_level(logging.INFO, logger="lazily_queue.service"):
        await announce_page(node, "http://127.0.0.1:8101", retry=0.001)  # type: ignore[arg-type]
    assert pages == {"1": "http://127.0.0.1:8101"}
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert [line.split(" failed (")[1].split(")")[0] for line in said] == [
        str(stalled), "no quorum", str(stalled)], said


class _Transport(asyncio.Transport):
    """A transport holding ``buffered`` bytes its reader has not taken."""

    def __init__(self) -> None:
        super().__init__()
        self.buffered = 0
        self.aborted = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("203.0.113.7", 1) if name == "peername" else default

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def abort(self) -> None:
        self.aborted = True


async def test_a_reader_taking_each_answer_slowly_is_not_cut_for_their_sum() -> None:
    """The stall limit counts the waits since the reader last took every answer: a
    request arriving with nothing left unread starts the count again, so a status page
    polling on one kept-alive connection is not closed after enough slow answers, while
    a reader that leaves answers unread still is."""
    loop = asyncio.get_running_loop()
    connections = http_gate.Connections(AdmissionGate(8, 8), stall_limit=0.2)

    def answered_slowly(transport: _Transport, gated: asyncio.Protocol) -> asyncio.Future[None]:
        gated.pause_writing()
        transport.buffered = 100_000
        done: asyncio.Future[None] = loop.create_future()

        def taken() -> None:
            transport.buffered = 0
            gated.resume_writing()
            done.set_result(None)

        loop.call_later(0.15, taken)
        return done

    polled, polled_gated = _Transport(), http_gate._Gated(asyncio.Protocol(), connections)
    polled_gated.connection_made(polled)
    unread, unread_gated = _Transport(), http_gate._Gated(asyncio.Protocol(), connections)
    unread_gated.connection_made(unread)
    for _ in range(3):
        polled_gated.data_received(b"GET /status.json HTTP/1.1\r\n\r\n")
        unread_gated.data_received(b"GET /status.json HTTP/1.1\r\n\r\n")
        unread.buffered = 1  # part of an answer never taken
        await answered_slowly(polled, polled_gated)
        await asyncio.sleep(0)
        unread_gated.pause_writing()
        await asyncio.sleep(0.15)
        unread_gated.resume_writing()
    assert not polled.aborted
    assert unread.aborted
