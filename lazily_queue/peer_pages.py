"""PeerPages: the other members' vitals, read from their status pages.

Each member announces where it serves its status page (a replicated address, see
:mod:`.replicated.admin`); every ``interval`` seconds :class:`PeerPages` reads
``/vitals.json`` from each other member with a known page, so one page shows every
member's version, uptime, fsync latency and free disk. With the cluster secret each
read carries a fresh nonce and the answer must prove it comes from a member
(:mod:`.vitals_proof`); an answer without a valid proof is refused like one that does
not come. A member that does not answer keeps its last answer, marked with the error
and its age.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import ssl
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .background import Background
from .vitals_proof import NONCE_HEADER, PROOF_HEADER, new_nonce, proven

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

#: Largest vitals answer read from a member (bytes).
MAX_ANSWER = 256 * 1024
#: The most characters of a page's status line an error quotes (every member's status
#: repeats the error).
QUOTED = 100


async def fetch_page(url: str, *, timeout: float, headers: dict[str, str] | None = None,
                     ssl_context: ssl.SSLContext | None = None
                     ) -> tuple[dict[str, str], bytes]:
    """``GET url`` (http or https) with ``headers``: the answer's headers (names in lower
    case) and body; raises ``OSError`` / ``TimeoutError`` / ``ValueError`` naming what went
    wrong (an answer but 200, or over :data:`MAX_ANSWER` bytes)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    context = None
    if parts.scheme == "https":
        context = ssl_context or ssl.create_default_context()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(parts.hostname, port, ssl=context)
        try:
            host = parts.netloc.rpartition("@")[2]
            writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json"
                         f"\r\n{extra}Connection: close\r\n\r\n".encode())
            await writer.drain()
            raw = await reader.read(MAX_ANSWER + 1)
            while len(raw) <= MAX_ANSWER:
                more = await reader.read(MAX_ANSWER + 1 - len(raw))
                if not more:
                    break
                raw += more
        finally:
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()
    if len(raw) > MAX_ANSWER:
        raise ValueError(f"{url} answered more than {MAX_ANSWER} bytes")
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    fields = status_line.split()
    if len(fields) < 2 or fields[1] != "200":
        raise ValueError(f"{url} answered {status_line[:QUOTED]!r}")
    answer_headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        answer_headers[name.strip().lower()] = value.strip()
    return answer_headers, body


def decode_json(url: str, body: bytes) -> Any:
    """``body`` as strict JSON; ``ValueError`` naming ``url`` when it is not (nested
    too deeply included)."""
    try:
        return json.loads(body, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise ValueError(f"{url} answered JSON nested too deeply") from None


def _not_a_number(name: str) -> Any:
    raise ValueError(f"NaN and infinities are not JSON ({name})")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"a JSON number out of range ({text[:20]}...)")
    return value


def _number(value: Any, *, nullable: bool = False) -> bool:
    return type(value) in (int, float) or (nullable and value is None)


def shape_problem(vitals: dict[str, Any]) -> str | None:
    """Which field of ``vitals`` that a status or the status page reads has another
    shape than :class:`~lazily_queue.vitals.Vitals` gives it (``None``: none has)."""
    disk, fsync, journal = vitals.get("disk"), vitals.get("fsync"), vitals.get("journal")
    fields = {
        "version": type(vitals.get("version")) is str,
        "uptime_s": _number(vitals.get("uptime_s")),
        "disk": isinstance(disk, dict) and all(
            _number(disk.get(k), nullable=True) for k in ("free_bytes", "total_bytes")),
        "fsync": isinstance(fsync, dict) and type(fsync.get("count")) is int and all(
            _number(fsync.get(k), nullable=True) for k in ("p50_ms", "p99_ms")),
        "journal": journal is None or (isinstance(journal, dict) and type(
            journal.get("writable")) is bool and all(
            type(journal.get(k)) in (str, type(None)) for k in ("error", "snapshot_error"))),
    }
    return next((name for name, good in fields.items() if not good), None)


class PeerPages(Background):
    """Reads the other members' vitals (see the module docstring)."""

    def __init__(self, node: Node, *, interval: float = 2.0, timeout: float = 1.5,
                 key: bytes | None = None) -> None:
        """``key`` proves the members' vitals (default: ``node``'s
        :attr:`~lazily_queue.node.Node.vitals_key`; ``None``: read without a proof)."""
        self.node = node
        self.key = key if key is not None or node is None else node.vitals_key
        self.interval = interval
        self.timeout = timeout
        self.answers: dict[str, dict[str, Any]] = {}

    def start(self) -> None:
        self._start_task(self._run, "lazily-peer-pages")


    async def _run(self) -> None:
        while True:
            if self.node.running:
                try:
                    await self.poll()
                except Exception:  # one bad answer must not end the reading for good
                    log.exception("node %s: reading the members' vitals failed",
                                  self.node.node_id)
            await asyncio.sleep(self.interval)

    def pages(self) -> dict[str, str]:
        """Every member's announced status page address (this node's included)."""
        if not self.node.running:
            return {}
        members = set(self.node.driver.replica.engine.members)
        return {m: url for m, url in self.node.view.member_pages.items() if m in members}

    async def poll(self) -> None:
        """Read every other member's vitals once (concurrently)."""
        others = {m: url for m, url in self.pages().items() if m != self.node.node_id}
        for gone in [m for m in self.answers if m not in others]:
            del self.answers[gone]
        await asyncio.gather(*(self._read(m, url) for m, url in others.items()))

    async def _read(self, member: str, url: str) -> None:
        entry = self.answers.setdefault(member, {"url": url, "vitals": None, "at": None})
        entry["url"] = url
        nonce = new_nonce()
        try:
            headers, body = await fetch_page(
                url.rstrip("/") + "/vitals.json", timeout=self.timeout,
                headers=None if self.key is None else {NONCE_HEADER: nonce})
            if self.key is not None and not proven(self.key, bytes.fromhex(nonce), body,
                                                   headers.get(PROOF_HEADER.lower())):
                entry["error"] = (
                    f"{url} answered vitals not proven to come from a member of this cluster "
                    "(not shown: another process may hold the member's page address, or the "
                    "member has another cluster secret or an older version)")
                entry["proof"] = "refused"
                return
            vitals = decode_json(url, body)
        except (OSError, TimeoutError, ValueError, ssl.SSLError) as exc:
            entry.update(error=str(exc) or type(exc).__name__, proof=None)
            return
        entry["proof"] = None
        if not isinstance(vitals, dict) or str(vitals.get("node")) != member:
            entry["error"] = f"{url} is not the page of node {member}"
        elif (field := shape_problem(vitals)) is not None:
            entry["error"] = f"{url} answered vitals whose {field!r} is not as a member gives it"
        else:
            entry.update(vitals=vitals, at=time.time(), error=None,
                         proof="none" if self.key is None else "proven")
