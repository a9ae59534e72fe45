"""Hang-up and transfer requests, checked by a local HTTP server standing in for each API.

The server records method, path, Authorization and body (JSON or form); each test compares
the whole record, so a wrong verb, path, credential or body fails.
"""

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

from voicegate.codecs import CallStarted
from voicegate.errors import ConfigError, RemoteProtocolError
from voicegate.gateway import call_control as cc
from voicegate.gateway.call_ending import (
    CallControlCredentials,
    CallControlSettings,
    ProviderCallControl,
)
from voicegate.types import TELEPHONE_ULAW

Seen = list[dict[str, Any]]


@asynccontextmanager
async def fake_api(status: int = 200) -> AsyncIterator[tuple[str, Seen]]:
    """A loopback server recording every request (method, path, headers, JSON body)."""
    seen: Seen = []

    async def record(request: web.Request) -> web.Response:
        body = await request.text()
        form = request.content_type == "application/x-www-form-urlencoded"
        entry = {
            "method": request.method,
            "path": request.path,
            "authorization": request.headers.get("Authorization"),
            "body": json.loads(body) if body and not form else None,
        }
        if form:
            entry["form"] = dict(await request.post())
        seen.append(entry)
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


async def test_twilio_hangup_and_transfer_update_the_call_resource() -> None:
    basic = "Basic " + base64.b64encode(b"AC1:tok").decode()
    async with fake_api() as (api, seen):
        await send_all(
            [
                cc.twilio_hangup("AC1", "tok", "CA9", api=api),
                cc.twilio_transfer("AC1", "tok", "CA9", "+1555<0100>", api=api),
                cc.twilio_transfer("AC1", "tok", "CA9", "sip:desk@example.com", api=api),
            ]
        )
    path = "/Accounts/AC1/Calls/CA9.json"
    assert seen == [
        {**_form(path, basic), "form": {"Status": "completed"}},
        {**_form(path, basic), "form": {"Twiml": _dial("+1555&lt;0100&gt;")}},
        {**_form(path, basic), "form": {"Twiml": _dial("<Sip>sip:desk@example.com</Sip>")}},
    ]


def _form(path: str, authorization: str) -> dict[str, Any]:
    return {"method": "POST", "path": path, "authorization": authorization, "body": None}


def _dial(noun: str) -> str:
    return f"<Response><Dial>{noun}</Dial></Response>"


def _call(call_id: str, account_id: str | None = None) -> CallStarted:
    return CallStarted("stream", call_id, TELEPHONE_ULAW, account_id=account_id)


async def test_provider_call_control_picks_each_dialects_request() -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    async with fake_api() as (api, seen):
        settings = CallControlSettings(
            twilio_api=api,
            telnyx_api=api,
            plivo_api=api,
            plivo_transfer_url="https://gw.example/dial",
            vonage_api=api,
            vonage_application_id="app-1",
        )
        control = ProviderCallControl(
            settings,
            CallControlCredentials(
                twilio_auth_token="tok",
                telnyx_api_key="KEY",
                plivo_auth_id="MA1",
                plivo_auth_token="ptok",
                vonage_private_key=pem,
            ),
            now_s=lambda: 1_700_000_000.0,
        )
        assert await control.end("twilio", _call("CA1", "AC1"), "")
        assert await control.end("telnyx", _call("v3:c"), "+15550100")
        assert await control.end("plivo", _call("uuid-p"), "+15550100")
        assert await control.end("vonage", _call("uuid-v"), "")
        assert not await control.end("browser", _call("b"), "")
        # No credentials, or no account SID in the start message: the socket ends the call.
        bare = ProviderCallControl(settings, CallControlCredentials())
        assert not await bare.end("telnyx", _call("v3:c"), "")
        assert not await control.end("twilio", _call("CA1"), "")
    assert [(r["method"], r["path"]) for r in seen] == [
        ("POST", "/Accounts/AC1/Calls/CA1.json"),
        ("POST", "/calls/v3:c/actions/transfer"),
        ("POST", "/Account/MA1/Call/uuid-p/"),
        ("PUT", "/calls/uuid-v"),
    ]
    assert seen[1]["authorization"] == "Bearer KEY"
    assert seen[2]["body"]["aleg_url"] == "https://gw.example/dial?to=%2B15550100"
    assert seen[3]["body"] == {"action": "hangup"}
    assert seen[3]["authorization"].startswith("Bearer ey")


async def test_an_unreachable_api_is_a_remote_protocol_error() -> None:
    async with fake_api() as (api, _):
        pass  # the server is gone: nothing listens on that port any more
    control = ProviderCallControl(
        CallControlSettings(telnyx_api=api, timeout_s=2), CallControlCredentials(telnyx_api_key="K")
    )
    with pytest.raises(RemoteProtocolError, match="/actions/hangup"):
        await control.end("telnyx", _call("v3:c"), "")
