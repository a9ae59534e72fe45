"""Hang-up and transfer requests, checked by a local HTTP server standing in for each API."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from voicegate.errors import ConfigError, RemoteProtocolError
from voicegate.gateway import call_control as cc

Seen = list[dict[str, Any]]


@asynccontextmanager
async def fake_api(status: int = 200) -> AsyncIterator[tuple[str, Seen]]:
    """A loopback server recording every request (method, path, headers, JSON body)."""
    seen: Seen = []

    async def record(request: web.Request) -> web.Response:
        body = await request.text()
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "authorization": request.headers.get("Authorization"),
                "body": json.loads(body) if body else None,
            }
        )
        return web.json_response({"detail": "nope"} if status >= 400 else {}, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def send_all(requests: list[cc.RestRequest]) -> None:
    async with aiohttp.ClientSession() as session:
        for request in requests:
            await cc.perform(session, request, timeout_s=5)


async def test_telnyx_call_control_hangup_and_transfer() -> None:
    async with fake_api() as (api, seen):
        await send_all(
            [
                cc.telnyx_hangup("KEY1", "v3:abc/def", api=api),
                cc.telnyx_transfer("KEY1", "v3:abc", "+18005550100", api=api),
            ]
        )
    assert seen == [
        {
            "method": "POST",
            "path": "/calls/v3:abc/def/actions/hangup",
            "authorization": "Bearer KEY1",
            "body": {},
        },
        {
            "method": "POST",
            "path": "/calls/v3:abc/actions/transfer",
            "authorization": "Bearer KEY1",
            "body": {"to": "+18005550100"},
        },
    ]


async def test_plivo_hangup_and_transfer() -> None:
    basic = "Basic " + base64.b64encode(b"MA123:tok").decode()
    async with fake_api() as (api, seen):
        await send_all(
            [
                cc.plivo_hangup("MA123", "tok", "uuid-1", api=api),
                cc.plivo_transfer("MA123", "tok", "uuid-1", "https://x.example/dial", api=api),
            ]
        )
    assert [(r["method"], r["path"], r["authorization"]) for r in seen] == [
        ("DELETE", "/Account/MA123/Call/uuid-1/", basic),
        ("POST", "/Account/MA123/Call/uuid-1/", basic),
    ]
    assert seen[0]["body"] is None
    assert seen[1]["body"] == {
        "legs": "aleg",
        "aleg_url": "https://x.example/dial",
        "aleg_method": "POST",
    }


async def test_vonage_hangup_and_transfer_with_an_application_jwt() -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    jwt = cc.vonage_application_jwt("app-1", pem, now_s=1_700_000_000)
    async with fake_api() as (api, seen):
        await send_all(
            [
                cc.vonage_hangup(jwt, "uuid-9", api=api),
                cc.vonage_transfer(jwt, "uuid-9", "447700900000", api=api),
            ]
        )
    assert [(r["method"], r["path"]) for r in seen] == [
        ("PUT", "/calls/uuid-9"),
        ("PUT", "/calls/uuid-9"),
    ]
    assert seen[0]["body"] == {"action": "hangup"}
    assert seen[1]["body"] == {
        "action": "transfer",
        "destination": {
            "type": "ncco",
            "ncco": [
                {"action": "connect", "endpoint": [{"type": "phone", "number": "447700900000"}]}
            ],
        },
    }
    # The bearer token is an RS256 JWT the application's public key verifies.
    token = seen[0]["authorization"].removeprefix("Bearer ")
    head, body, signature = token.split(".")
    pad = lambda part: part + "=" * (-len(part) % 4)  # noqa: E731
    private.public_key().verify(
        base64.urlsafe_b64decode(pad(signature)),
        f"{head}.{body}".encode(),
        padding.PKCS1v15(),
        hashes.SHA256(),
    )
    claims = json.loads(base64.urlsafe_b64decode(pad(body)))
    assert claims["application_id"] == "app-1"
    assert claims["exp"] - claims["iat"] == cc.VONAGE_JWT_LIFETIME_S
    with pytest.raises(ConfigError, match="not a PEM private key"):
        cc.vonage_application_jwt("app-1", b"junk", now_s=0)


async def test_a_refused_request_says_what_the_provider_answered() -> None:
    async with fake_api(status=422) as (api, _):
        with pytest.raises(RemoteProtocolError, match="answered 422"):
            await send_all([cc.telnyx_hangup("KEY1", "v3:gone", api=api)])
