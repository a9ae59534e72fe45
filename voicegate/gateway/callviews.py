"""``/calls``: recent and live calls, and one call's timeline as it grows (issue 18).

==================================  ======================================================
``GET /calls``                      the list page (HTML), or JSON with ``?format=json``
``GET /calls/{id}``                 one call's live timeline page (the browser page's view)
``GET /calls/{id}/records``         its records from byte ``offset`` on, as JSON
==================================  ======================================================

Everything is read from the call logs (gateway/calllog.py), so any worker of ``voicegate
serve --workers N`` shows the calls of all of them, for every provider. The page polls
``records`` with the offset it reached until the log says ``call_closed``.

Call content is personal data (transcripts), so every route is rate-limited per address like
the rest of the ingress, and authenticated: with a token
(``server.calls_token_env``) the request needs ``Authorization: Bearer <token>``, or HTTP
Basic with the token as password (what a browser asks for, RFC 7617); without one, only
clients on this machine are served, and never through a proxy. Ids that could not name a
gateway call (``..``, slashes, NUL, anything beyond ``[A-Za-z0-9_-]``) get 404 before any
file is touched.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import ipaddress
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from voicegate.gateway.auth import bearer_valid
from voicegate.gateway.calllog import (
    CLOSED,
    OPENED,
    SUFFIX,
    CallLogOptions,
    process_alive,
    safe_call_id,
    whole_records,
)

#: Bytes of records one ``records`` answer carries at most (the page asks again).
READ_CHUNK = 256 * 1024
#: How much of a log's head is read to find who the call was (the first records).
HEAD_BYTES = 8 * 1024
#: How much of a log's tail is read to find its ``call_closed`` record.
TAIL_BYTES = 4 * 1024
#: Calls listed at most, newest first.
LISTED = 200
REALM = 'Basic realm="voicegate calls", charset="UTF-8"'


def calls_access(
    request: web.Request, token: str | None, behind_proxy: bool
) -> web.Response | None:
    """401/403 unless the request may read call content; None when it may."""
    if token is None:
        if not behind_proxy and _loopback(request.remote):
            return None
        text = "/calls is served to this machine only; set server.calls_token_env\n"
        return web.Response(status=403, text=text)
    authorization = request.headers.get("Authorization")
    if bearer_valid(authorization, token) or _basic_valid(authorization, token):
        return None
    return web.Response(status=401, text="/calls wants the calls token\n", headers={
        "WWW-Authenticate": REALM,
    })  # fmt: skip


def _loopback(remote: str | None) -> bool:
    try:
        return remote is not None and ipaddress.ip_address(remote).is_loopback
    except ValueError:
        return False


def _basic_valid(authorization: str | None, token: str) -> bool:
    """HTTP Basic credentials whose password is ``token`` (any user name)."""
    if authorization is None or not authorization.isascii():
        return False
    scheme, _, encoded = authorization.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    _, _, password = decoded.partition(b":")
    return hmac.compare_digest(password, token.encode("utf-8"))


def summaries(options: CallLogOptions) -> list[dict[str, Any]]:
    """The newest calls' summaries (blocking: run in a thread)."""
    try:
        files = [(p.stat().st_mtime, p) for p in options.directory.glob("*" + SUFFIX)]
    except OSError:
        return []
    files.sort(reverse=True)
    found = (summary(path) for _, path in files[:LISTED])
    return [item for item in found if item is not None]


def summary(path: Path) -> dict[str, Any] | None:
    """Who a call was and how it ended, from its log's first and last records."""
    try:
        with path.open("rb") as file:
            head = file.read(HEAD_BYTES)
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TAIL_BYTES))
            tail = file.read(TAIL_BYTES)
    except OSError:
        return None
    head_records = whole_records(head)
    opened = next((r for r in head_records if r.get("event") == OPENED), None)
    if opened is None:
        return None
    started = next((r for r in head_records if r.get("event") == "call_started"), {})
    closed = next((r for r in reversed(whole_records(tail)) if r.get("event") == CLOSED), None)
    return {
        "call_id": path.stem,
        "dialect": opened.get("dialect"),
        "provider_call_id": started.get("call_id") or (closed or {}).get("provider_call_id"),
        "started_at": opened.get("started_at"),
        "state": _state(opened, closed),
        "ended_at": None if closed is None else closed.get("ended_at"),
        "close_code": None if closed is None else closed.get("code"),
        "close_reason": None if closed is None else closed.get("reason"),
        "bytes": size,
    }


def _state(opened: dict[str, Any], closed: dict[str, Any] | None) -> str:
    """live, ended, or lost (no ``call_closed`` and its worker is gone)."""
    if closed is not None:
        return "ended"
    pid = opened.get("pid")
    return "live" if isinstance(pid, int) and process_alive(pid) else "lost"


def read_records(path: Path, offset: int) -> dict[str, Any] | None:
    """Whole records from byte ``offset`` on, and the offset to ask for next (blocking)."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            data = file.read(READ_CHUNK)
    except FileNotFoundError:
        return None
    whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits for next time
    records = whole_records(whole)
    ended = any(r.get("event") == CLOSED for r in records)
    return {"records": records, "offset": offset + len(whole), "ended": ended}


class CallViews:
    """The ``/calls`` handlers over one directory of call logs."""

    def __init__(
        self,
        options: CallLogOptions,
        token: str | None,
        behind_proxy: bool,
        static: Path,
        too_many: Callable[[web.Request], web.Response | None] = lambda request: None,
    ) -> None:
        """``too_many``: the ingress's per-address rate limit (429), as for ``/metrics``."""
        self._too_many = too_many
        self._options = options
        self._token = token
        self._behind_proxy = behind_proxy
        self._static = static

    def add_routes(self, app: web.Application) -> None:
        """Register ``/calls``, ``/calls/{id}`` and ``/calls/{id}/records``."""
        app.router.add_get("/calls", self.list_calls)
        app.router.add_get("/calls/{call_id}", self.call_page)
        app.router.add_get("/calls/{call_id}/records", self.records)

    def _refusal(self, request: web.Request) -> web.Response | None:
        too_many = self._too_many(request)
        if too_many is not None:
            return too_many
        return calls_access(request, self._token, self._behind_proxy)

    async def list_calls(self, request: web.Request) -> web.StreamResponse:
        """The list page, or the newest calls as JSON (``?format=json``)."""
        if (refusal := self._refusal(request)) is not None:
            return refusal
        if request.query.get("format") != "json":
            return self._page()
        calls = await asyncio.to_thread(summaries, self._options)
        return web.json_response({"calls": calls})

    async def call_page(self, request: web.Request) -> web.StreamResponse:
        """One call's timeline page (its records come from ``records``)."""
        if (refusal := self._refusal(request)) is not None:
            return refusal
        self._path(request)  # 404 for an id that names no call
        return self._page()

    async def records(self, request: web.Request) -> web.Response:
        """``{"records": [...], "offset": next, "ended": bool}`` from ``?offset=`` on."""
        if (refusal := self._refusal(request)) is not None:
            return refusal
        path = self._path(request)
        offset_text = request.query.get("offset", "0")
        if not offset_text.isdigit() or len(offset_text) > 12:
            raise web.HTTPBadRequest(text="offset must be a byte count\n")
        answer = await asyncio.to_thread(read_records, path, int(offset_text))
        if answer is None:
            raise web.HTTPNotFound(text="no such call\n")
        return web.json_response(answer, headers={"Cache-Control": "no-store"})

    def _path(self, request: web.Request) -> Path:
        call_id = request.match_info["call_id"]
        path = self._options.path(call_id) if safe_call_id(call_id) else None
        if path is None or not path.is_file():
            raise web.HTTPNotFound(text="no such call\n")
        return path

    def _page(self) -> web.FileResponse:
        headers = {
            "Content-Type": "text/html; charset=utf-8",
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'self'; connect-src 'self'",
        }
        return web.FileResponse(self._static / "calls.html", headers=headers)
