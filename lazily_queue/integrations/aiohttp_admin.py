"""The admin API over aiohttp (used by ``lazily-queue node`` and :func:`.aiohttp.setup`).

Routes under ``{prefix}/admin/`` (JSON in, JSON out)::

    POST /admin/login                      {"token": ...}  -> {"csrf": ...} + session cookie
    POST /admin/logout
    GET  /admin/session                    -> {"authenticated": bool, "csrf": ...}
    GET  /admin/api/queues                 -> {"queues": [{kind, name, depth, ...}]}
    POST /admin/api/queues/{kind}/{name}/purge    {"dead_letters": false}
    POST /admin/api/queues/{kind}/{name}/delete
    POST /admin/api/queues/topic/{name}/subscribers/{subscriber}/delete
    GET  /admin/api/dlq/{name}?offset=&limit=
    POST /admin/api/dlq/{name}/redrive     {"item_ids": [...] | null}
    GET  /admin/api/members
    POST /admin/api/members                {"id": ..., "address": ...}
    POST /admin/api/members/{id}/remove
    POST /admin/api/leadership             {"to": id | null}

An object's ``{name}`` may instead be given as ``?name=``, and a ``{subscriber}`` as
``?subscriber=`` (the page does so, since a browser resolves the path segments ``.`` and
``..`` away).

Authentication and the cross-site checks are :class:`~lazily_queue.admin_auth.AdminAuth`.
Every refusal is ``{"error": {"code", "message", ...}}`` with its HTTP status.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from .. import admin
from ..admin import AdminError
from ..admin_auth import COOKIE, AdminAuth
from .aiohttp import NODE
from .aiohttp_log import request_fault

log = logging.getLogger(__name__)

AUTH = web.AppKey("lazily_queue.admin_auth", AdminAuth)
#: Largest admin request body (bytes).
MAX_BODY = 64 * 1024
#: Seconds a request body may take to arrive whole.
BODY_TIMEOUT = 10.0

Handler = Callable[[web.Request], Awaitable[Any]]


def add_admin_routes(app: web.Application, token: str | None, *, prefix: str = "",
                     origins: Iterable[str] = ()) -> None:
    """Serve the admin API (module docstring) with ``token`` as the admin credential
    (``None``: every route answers ``admin_disabled``, saying how to turn it on);
    ``origins`` are the node's public addresses (``http_advertise``), whose pages act as
    its own."""
    app[AUTH] = AdminAuth(token, origins=origins)
    base = prefix.rstrip("/") + "/admin"
    app.router.add_post(base + "/login", _login)
    app.router.add_post(base + "/logout", _logout)
    app.router.add_get(base + "/session", _session)
    api = base + "/api"
    routes: list[tuple[str, str, Handler]] = [
        ("GET", "/queues", _queues),
        ("POST", "/queues/{kind}/{name}/purge", _purge),
        ("POST", "/queues/{kind}/{name}/delete", _delete),
        ("POST", "/queues/{kind}/{name}/subscribers/{subscriber}/delete", _delete_subscriber),
        ("GET", "/dlq/{name}", _dlq),
        ("POST", "/dlq/{name}/redrive", _redrive),
        ("GET", "/members", _members),
        ("POST", "/members", _add_member),
        ("POST", "/members/{id}/remove", _remove_member),
        ("POST", "/leadership", _transfer),
    ]
    for method, path, handler in routes:
        app.router.add_route(method, api + path, _guarded(handler))
    app.router.add_route("*", api + "/{tail:.*}", _guarded(_no_route))


async def _no_route(request: web.Request) -> Any:
    allowed: set[str] = set()
    for resource in request.app.router.resources():  # the routes serving this path
        match, methods = await resource.resolve(request)
        if match is None:
            allowed |= methods
    if allowed:
        raise AdminError("method_not_allowed",
                         f"{request.path} is served to {' and '.join(sorted(allowed))} only, "
                         f"not {request.method}", 405, allow=sorted(allowed))
    raise AdminError("not_found", f"no admin API route {request.method} {request.path} "
                     "(lazily_queue.integrations.aiohttp_admin lists them)", 404)


def _origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def _over_tls(request: web.Request) -> bool:
    """Whether the browser reached the node over TLS: directly, or through a proxy ending
    TLS (an ``https`` origin, which passed the origin check, or the proxy's
    ``X-Forwarded-Proto`` / ``Forwarded: proto=https``). The session cookie is then
    ``Secure``."""
    if request.secure or request.headers.get("Origin", "").lower().startswith("https://"):
        return True
    first = request.headers.get("Forwarded", "").split(",")[0]  # the proxy nearest the client
    params = {k.strip().lower(): v.strip().strip('"').lower()
              for k, _, v in (p.partition("=") for p in first.split(";"))}
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return proto == "https" or params.get("proto") == "https"


def _error(exc: AdminError) -> web.Response:
    retry, allow = exc.extra.get("retry_after"), exc.extra.get("allow")
    headers = {} if retry is None else {"Retry-After": str(retry)}
    if allow is not None:
        headers["Allow"] = ", ".join(allow)
    return web.json_response(exc.document(), status=exc.status, headers=headers)


def _guarded(handler: Handler) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def run(request: web.Request) -> web.Response:
        try:
            request.app[AUTH].authorize(request.method, request.headers,
                                        request.cookies.get(COOKIE), _origin(request),
                                        request.remote)
            result = await handler(request)
        except AdminError as exc:
            return _error(exc)
        return web.json_response(result)

    return run


async def _body(request: web.Request) -> dict[str, Any]:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise AdminError("bad_request", f"the body is over {MAX_BODY} bytes", 413)
    raw = b""
    try:
        async with asyncio.timeout(BODY_TIMEOUT):
            while len(raw) <= MAX_BODY:  # read() returns what has arrived: read to the end
                chunk = await request.content.read(MAX_BODY + 1 - len(raw))
                if not chunk:
                    break
                raw += chunk
    except TimeoutError:
        raise AdminError("timeout", f"the body did not arrive within {BODY_TIMEOUT:g} s",
                         408) from None
    except RequestPayloadError as exc:  # a bad chunk, a Content-Encoding that does not decode
        why = request_fault(exc) or "it is malformed"
        raise AdminError("bad_request", f"the body cannot be read: {why}") from None
    if len(raw) > MAX_BODY:
        raise AdminError("bad_request", f"the body is over {MAX_BODY} bytes", 413)
    if not raw.strip():
        return {}
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
        raise AdminError("bad_request", "the body is not JSON") from None
    if not isinstance(doc, dict):
        raise AdminError("bad_request", "the body must be a JSON object")
    return doc


async def _login(request: web.Request) -> web.Response:
    auth = request.app[AUTH]
    try:
        auth.check_origin(request.headers, _origin(request))
        session = auth.login((await _body(request)).get("token"), request.remote)
    except AdminError as exc:
        return _error(exc)
    response = web.json_response({"csrf": session.csrf, "expires": session.expires})
    response.set_cookie(COOKIE, session.id, httponly=True, samesite="Strict",
                        secure=_over_tls(request), path="/", max_age=int(auth.session_ttl))
    return response


async def _logout(request: web.Request) -> web.Response:
    auth = request.app[AUTH]
    try:
        auth.authorize("POST", request.headers, request.cookies.get(COOKIE), _origin(request),
                       request.remote)
    except AdminError as exc:
        return _error(exc)
    auth.logout(request.cookies.get(COOKIE))
    response = web.json_response({"ok": True})
    response.del_cookie(COOKIE, path="/", secure=_over_tls(request), httponly=True,
                        samesite="Strict")
    return response


async def _session(request: web.Request) -> web.Response:
    auth = request.app[AUTH]
    try:
        auth.check_origin(request.headers, _origin(request))
    except AdminError as exc:
        return _error(exc)
    session = auth.session(request.cookies.get(COOKIE))
    return web.json_response({"enabled": auth.enabled, "authenticated": session is not None,
                              "csrf": None if session is None else session.csrf})


async def _queues(request: web.Request) -> dict[str, Any]:
    return {"queues": await admin.list_objects(request.app[NODE])}


async def _purge(request: web.Request) -> dict[str, Any]:
    _no_subscriber(request)
    body = await _body(request)
    kind, name = request.match_info["kind"], _name(request)
    dead_letters = body.get("dead_letters", False)
    if not isinstance(dead_letters, bool):
        raise AdminError("bad_request", "dead_letters must be true or false, not "
                         f"{json.dumps(dead_letters)[:40]}; nothing was purged")
    removed = await admin.purge(request.app[NODE], kind, name, dead_letters=dead_letters)
    log.warning("admin: purged %s %r (%d removed)", kind, name, removed)
    return {"removed": removed}


async def _delete(request: web.Request) -> dict[str, Any]:
    _no_subscriber(request)
    kind, name = request.match_info["kind"], _name(request)
    held = await admin.delete(request.app[NODE], kind, name)
    log.warning("admin: deleted %s %r (it held %d)", kind, name, held)
    return {"deleted": True, "held": held}


async def _delete_subscriber(request: web.Request) -> dict[str, Any]:
    kind, name = admin.check_kind(request.match_info["kind"]), _name(request)
    if kind != "topic":
        raise AdminError("bad_request", f"a {kind.replace('_', ' ')} has no subscribers; "
                         "only a topic's subscribers are deleted")
    subscriber = _segment(request, "subscriber")
    if not await admin.delete_subscriber(request.app[NODE], name, subscriber):
        raise AdminError("not_found", f"topic {name!r} has no subscriber {subscriber!r}; "
                         "nothing was deleted", 404)
    log.warning("admin: deleted subscriber %r of topic %r", subscriber, name)
    return {"deleted": True}


def _no_subscriber(request: web.Request) -> None:
    """Refuse a purge or delete of a whole object that names a subscriber: it was meant
    for ``.../topic/{name}/subscribers/{id}/delete``."""
    if "subscriber" in request.query:
        raise AdminError("bad_request", "?subscriber= names one subscriber: delete it with "
                         "POST .../queues/topic/{name}/subscribers/{id}/delete; nothing was "
                         "changed")


def _name(request: web.Request) -> str:
    """The object's name (see :func:`_segment`)."""
    return _segment(request, "name")


def _segment(request: web.Request, key: str) -> str:
    """The path's ``key`` segment, or ``?key=`` in place of a ``_`` segment (for names a
    URL path cannot carry, as a browser resolves ``.`` and ``..`` away). A query that
    would override another segment is refused: a request meant for another route
    (``.../topic/subscribers/delete?name=t&subscriber=s`` is the *topic's* delete route)
    must not act on the query's name."""
    segment = request.match_info[key]
    given = request.query.get(key)
    if given is None:
        return segment
    if segment != "_":
        raise AdminError("bad_request", f"?{key}= stands in for a `_` path segment, but this "
                         f"path names {segment[:60]!r}; put `_` there (or drop ?{key}=); "
                         "nothing was changed")
    return given


def _int_param(request: web.Request, key: str, default: int) -> int:
    raw = request.query.get(key)
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise AdminError("bad_request",
                         f"{key} must be an integer >= 0 of at most 18 digits, not {raw[:20]!r}")
    return int(raw)


async def _dlq(request: web.Request) -> dict[str, Any]:
    return await admin.dead_letters(
        request.app[NODE], _name(request),
        offset=_int_param(request, "offset", 0), limit=_int_param(request, "limit", 100))


async def _redrive(request: web.Request) -> dict[str, Any]:
    body = await _body(request)
    name = _name(request)
    moved = await admin.redrive(request.app[NODE], name, body.get("item_ids"))
    log.warning("admin: redrove %d dead letter(s) of %r", moved, name)
    return {"redriven": moved}


async def _members(request: web.Request) -> dict[str, Any]:
    return {"members": admin.members(request.app[NODE])}


async def _add_member(request: web.Request) -> dict[str, Any]:
    body = await _body(request)
    await admin.add_member(request.app[NODE], body.get("id"), body.get("address"),
                           force=_force(body))
    log.warning("admin: added member %s at %r", body.get("id"), body.get("address"))
    return {"added": str(body.get("id"))}


async def _remove_member(request: web.Request) -> dict[str, Any]:
    member = request.match_info["id"]
    await admin.remove_member(request.app[NODE], member, force=_force(await _body(request)))
    log.warning("admin: removed member %s", member)
    return {"removed": member}


def _force(body: dict[str, Any]) -> bool:
    """``"force": true`` of a membership change (anything else is a bad request)."""
    force = body.get("force", False)
    if type(force) is not bool:
        raise AdminError("bad_request", f"force must be true or false, not {force!r}")
    return force


async def _transfer(request: web.Request) -> dict[str, Any]:
    body = await _body(request)
    leader = await admin.transfer_leadership(request.app[NODE], body.get("to"))
    log.warning("admin: leadership moved to %s", leader)
    return {"leader": leader}
