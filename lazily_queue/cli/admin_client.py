"""The admin API from the command line: where the node is, the token, requests, errors.

``lazily-queue queue|dlq|members`` talk to a running node's HTTP admin API (see
:mod:`lazily_queue.integrations.aiohttp_admin`) with the admin token, read from an
environment variable (``--token-env``, default ``LAZILY_ADMIN_TOKEN``), a file
(``--token-file``) or the node's configuration (``--config``); never from the command
line. Every failure is one line on stderr and exit status 1 (2 for a usage problem).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import shown
from ..small_files import CredentialFileError, read_credential_text

DEFAULT_TOKEN_ENV = "LAZILY_ADMIN_TOKEN"


class CliError(Exception):
    """A one-line failure; ``code`` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Unreachable(CliError):
    """The node could not be connected to: nothing was asked of it."""

    def __init__(self, url: str, reason: object) -> None:
        super().__init__(f"cannot reach {url}: {reason}{reach_note(url, reason)}; is the node "
                         "running with `http` set to this address?")
        self.reason = reason


def reach_note(url: str, error: object) -> str:
    """What to add to ``error``, a failure to reach ``url``: that urllib went through a
    proxy the environment names for it, and that an https:// address reached a plain
    HTTP server (``""`` when neither)."""
    parts = urlsplit(url)
    note = ""
    if parts.scheme == "https" and "WRONG_VERSION_NUMBER" in str(error):
        plain = urlunsplit(parts._replace(scheme="http"))
        note = f" (it answers plain HTTP, not TLS: give {plain})"
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return note
    return (f"{note} (asked through the proxy {proxy} that {parts.scheme}_proxy names: add "
            f"{parts.hostname} to no_proxy to reach the node directly)")


def not_a_node(url: str, why: str, what: str) -> str:
    """The line for an answer of ``url`` that is not a node's ``what`` (``why``: how it
    is not), or no answer at all: the address may be the node's Raft ``listen`` one."""
    if why == http.client.RemoteDisconnected.__name__:
        return (f"{url} closed the connection without answering; give the node's `http` "
                "address, not its `listen` address (or, if it is the `http` one, the node may "
                "be stopping: ask again)")
    return (f"{url} is not a node's {what} ({why}); give the node's `http` address, not its "
            "`listen` address")


def check_name(name: str, what: str) -> None:
    """Refuse (usage, status 2) a name no queue, work queue or topic can have (empty, too
    long, control characters) before anything is asked: an empty one would be an empty
    segment of the request's path, which no route has."""
    from ..names import name_problem

    problem = name_problem(name, what)
    if problem is not None:
        raise CliError(problem, 2)


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _int_in(low: int, high: int | None, what: str) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high`` (``None``: no end)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value
    return parse


#: A position in a listing; how many rows a page lists.
position = _int_in(0, None, "a position (an integer >= 0)")
page_size = _int_in(1, 1000, "a page size (an integer in 1..1000)")


def refuse_port_zero(source: str, http: tuple[str, int] | None) -> None:
    """``http = "HOST:0"`` names no address to reach: the node picks its port at start."""
    if http is not None and http[1] == 0:
        raise CliError(f"{source}: `http` port 0 is chosen when the node starts; pass --url "
                       "with the address its `ready` line printed (http=...)", 2)


#: The status document's path, which a node's address given as its page's ends with.
STATUS_PAGE = "/status.json"


def node_url(url: str) -> str:
    """``url`` with ``http://`` when it has no scheme, and without :data:`STATUS_PAGE`
    when it ends with it (the address of the node's status document); a malformed one,
    or one with a query or fragment, raises :class:`CliError` (usage, status 2)."""
    if "://" not in url:
        url = "http://" + url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as exc:
        problem = str(exc)
    else:
        problem = ("not an http:// or https:// address"
                   if parts.scheme not in ("http", "https") or not parts.hostname
                   else "a node's address has no query (?) or fragment (#)"
                   if parts.query or parts.fragment or url.endswith(("?", "#")) else "")
    if problem:
        raise CliError(f"--url {shown(url)}: {problem}; give the node's `http` address, e.g. "
                       "http://127.0.0.1:8101", 2)
    path = parts.path.rstrip("/")
    if path.endswith(STATUS_PAGE):
        return urlunsplit(parts._replace(path=path.removesuffix(STATUS_PAGE)))
    return url


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """``--url`` / ``--config``, the token's source, ``--timeout`` and ``--json``."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the node's HTTP address, e.g. http://127.0.0.1:8101")
    where.add_argument("--config", metavar="FILE",
                       help="the node's TOML file (its `http` address and admin token)")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token-env", metavar="NAME",
                       help=f"environment variable holding the admin token (default "
                            f"{DEFAULT_TOKEN_ENV}, or the one --config names)")
    token.add_argument("--token-file", metavar="FILE", type=Path,
                       help="file holding the admin token")
    parser.add_argument("--timeout", type=seconds, default=30.0, help="seconds (default 30)")
    parser.add_argument("--json", action="store_true", help="print the JSON answer")


class AdminClient:
    """Requests to one node's admin API with the admin token."""

    def __init__(self, url: str, token: str, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> AdminClient:
        url, token = args.url, None
        if args.config is not None:
            from ..config import load_config
            from ..errors import InvalidConfiguration

            try:
                config = load_config(args.config)
                url = config.http_url
                if args.token_env is None and args.token_file is None:
                    token = config.admin_token(check_secret=False)
            except InvalidConfiguration as exc:
                raise CliError(str(exc), 2) from None
            if url is None:
                raise CliError(f"{args.config} has no `http` address; pass --url", 2)
            refuse_port_zero(args.config, config.http)
            if token is None and args.token_env is None and args.token_file is None:
                raise CliError(
                    f"{args.config} sets no admin_token_env or admin_token_file, so its node "
                    "serves no admin API; add one (a token of 16+ characters, not the secret) "
                    "and restart the node", 2)
        if token is None:
            token = _token(args.token_env, args.token_file)
        return cls(node_url(url), token, args.timeout)

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("POST", path, body or {})

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                *, follow_leader: int = 2) -> Any:
        """The JSON answer; an error answer raises :class:`CliError` with its code and
        message. ``not_leader`` is retried at the leader's page when it is known, up to
        ``follow_leader`` times (twice: a leader asked to remove itself hands leadership
        over and names the new leader)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + "/admin/api" + path, data=data, method=method,
            headers={"Authorization": f"Bearer {self.token}",
                     "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            error = _error_of(exc)
            if (error.get("code") == "not_leader" and follow_leader > 0
                    and error.get("leader_page")):
                leader = AdminClient(str(error["leader_page"]), self.token, self.timeout)
                print(f"(asking the leader, node {error.get('leader')} at {leader.url})",
                      file=sys.stderr)
                try:
                    return leader.request(method, path, body, follow_leader=follow_leader - 1)
                except Unreachable as down:
                    raise CliError(
                        f"node {error.get('leader')}, the leader {self.url} named, cannot be "
                        f"reached at {leader.url} ({down.reason}); nothing was asked of it: "
                        "it may have just stopped, so ask again once a leader is elected "
                        "(`lazily-queue status --require-leader` waits for one)") from None
            raise CliError(_describe(error, exc.code)) from None
        except urllib.error.URLError as exc:
            raise Unreachable(self.url, exc.reason) from None
        except TimeoutError:  # connected, then no answer in time (a busy or stuck node)
            raise CliError(
                f"{self.url} did not answer within {self.timeout:g} s (--timeout); "
                + ("nothing was asked to change" if method == "GET" else
                   "what was asked may still be done: check (`lazily-queue status`, "
                   "`members list`) before asking again")) from None
        except (http.client.HTTPException, ValueError) as exc:
            line = not_a_node(self.url, type(exc).__name__, "admin API")
            if method != "GET" and isinstance(exc, http.client.RemoteDisconnected):
                line = line.replace("ask again", "what was asked may still be done: check "
                                    "(`lazily-queue status`, `members list`) before asking "
                                    "again")
            raise CliError(line) from None
        except KeyboardInterrupt:
            if method == "GET":
                raise
            raise CliError(f"interrupted by Ctrl-C while waiting for {self.url}'s answer: "
                           "what was asked may still be done: check (`lazily-queue status`, "
                           "`members list`) before asking again", 130) from None
        except OSError as exc:
            raise CliError(f"{self.url}: {exc}") from None


def _token(env: str | None, file: Path | None) -> str:
    if file is not None:
        try:
            token = read_credential_text(file)
        except CredentialFileError as exc:
            raise CliError(f"cannot read the admin token from {file}: {exc}", 2) from None
        if not token:
            raise CliError(f"the admin token file {file} is empty", 2)
        return token
    name = env or DEFAULT_TOKEN_ENV
    token = os.environ.get(name, "")
    if not token:
        raise CliError(f"no admin token: set environment variable {name} (or pass "
                       "--token-env NAME, --token-file FILE or --config FILE)", 2)
    return token


def _error_of(exc: urllib.error.HTTPError) -> dict[str, Any]:
    try:
        doc = json.loads(exc.read() or b"{}")
    except ValueError:
        doc = {}
    error = doc.get("error") if isinstance(doc, dict) else None
    return error if isinstance(error, dict) else {"code": f"http_{exc.code}",
                                                  "message": exc.reason}


def _describe(error: dict[str, Any], status: int) -> str:
    code, message = error.get("code", f"http_{status}"), error.get("message", "")
    if status == 404 and code == f"http_{status}":
        return "this node serves no admin API (is it a `lazily-queue node` of this version?)"
    hint = ""
    if code == "unauthorized":
        hint = " (check the admin token: it is the node's admin_token_env/admin_token_file)"
    return f"{code}: {message}{hint}"


def run(handler: Any, args: argparse.Namespace) -> int:
    """Run ``handler(client, args)``; a :class:`CliError` becomes one line and its code,
    and so does an answer ``handler`` cannot read (a field missing or of another type)."""
    try:
        client = AdminClient.from_args(args)
        try:
            handler(client, args)
        except (LookupError, TypeError, AttributeError, ValueError) as exc:
            raise CliError(f"{client.url} answered what this version of lazily-queue does not "
                           f"read ({type(exc).__name__}: {exc}); is it a node of this version, "
                           "at its `http` address?") from None
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    return 0


def emit(args: argparse.Namespace, doc: Any, text: str | None = None) -> None:
    """Print ``doc`` as JSON with ``--json``, else ``text``."""
    if args.json or text is None:
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print(text)


def table(columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    """Plain aligned columns (``-`` for a missing value)."""
    cells = [list(columns)] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in cells)
