"""Vonage routes: the answer webhook (signed JWT, NCCO) and the websocket key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.errors import ConfigError
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import VonageOptions
from voicegate.gateway.vonage_ncco import jwt_problem, stream_key

SECRET = "signature-secret"
QUERY = {"uuid": "aaaa-1111", "conversation_uuid": "CON-2", "from": "447700900000", "to": "4420"}


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwt(claims: dict[str, Any], secret: str = SECRET, alg: str = "HS256") -> str:
    """A token as Vonage signs webhooks: HS256 over header.claims with the signature secret."""
    head = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    mac = hmac.new(secret.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(mac)}"


async def get_answer(gateway: Gateway, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    url = gateway.base_url + "/vonage/answer"
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, params=QUERY, headers=headers or {}) as reply,
    ):
        body = await reply.json() if reply.status == 200 else await reply.text()
        return reply.status, body


def test_jwt_checks() -> None:
    now = time.time()
    good = "Bearer " + jwt({"iat": int(now), "exp": int(now) + 300, "api_key": "k"})
    assert jwt_problem(SECRET, good, now_s=now) is None
    assert "expired" in str(jwt_problem(SECRET, good, now_s=now + 301))
    assert "does not match" in str(jwt_problem("other", good, now_s=now))
    assert "not HS256" in str(jwt_problem(SECRET, "Bearer " + jwt({}, alg="none"), now_s=now))
    assert "no Bearer" in str(jwt_problem(SECRET, "Basic abc", now_s=now))
    assert "malformed" in str(jwt_problem(SECRET, "Bearer a.b.c", now_s=now))


async def test_answer_connects_a_websocket_with_headers_from_the_call() -> None:
    vonage = VonageOptions(parameters={"tenant": "acme"}, content_type="audio/l16;rate=8000")
    async with running_gateway(ScriptedRunner(), vonage=vonage) as gateway:
        status, ncco = await get_answer(gateway)
        url = gateway.base_url + "/vonage/answer"
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json=QUERY) as reply,
        ):
            posted = await reply.json()
    assert status == 200
    assert ncco == posted
    assert ncco == [
        {
            "action": "connect",
            "endpoint": [
                {
                    "type": "websocket",
                    "uri": f"ws://127.0.0.1:{gateway.port}/vonage",
                    "content-type": "audio/l16;rate=8000",
                    "headers": {
                        "tenant": "acme",
                        "uuid": "aaaa-1111",
                        "from": "447700900000",
                        "to": "4420",
                    },
                }
            ],
        }
    ]


async def test_a_signed_answer_carries_a_key_the_socket_must_present() -> None:
    vonage = VonageOptions(signature_secret=SECRET)
    async with running_gateway(ScriptedRunner(), vonage=vonage) as gateway:
        assert (await get_answer(gateway))[0] == 403
        forged = {"Authorization": "Bearer " + jwt({"iat": int(time.time())}, secret="guess")}
        assert (await get_answer(gateway, forged))[0] == 403
        signed = {"Authorization": "Bearer " + jwt({"iat": int(time.time())})}
        status, ncco = await get_answer(gateway, signed)
        assert status == 200
        uri = ncco[0]["endpoint"][0]["uri"]
        assert uri == ws_url(gateway, "/vonage") + "?key=" + stream_key(SECRET)
        assert SECRET not in uri
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, "/vonage?key=guess"), open_timeout=10):
                pass
        assert refused.value.response.status_code == 403
        async with connect(uri, open_timeout=10) as client:
            assert await receive_json(client) == {"dialect": "vonage"}


async def test_vonage_route_hands_the_runner_a_vonage_codec() -> None:
    async with (
        running_gateway(ScriptedRunner()) as gateway,
        connect(ws_url(gateway, "/vonage"), open_timeout=10) as client,
    ):
        assert await receive_json(client) == {"dialect": "vonage"}
        first = {"event": "websocket:connected", "content-type": "audio/l16;rate=16000"}
        await client.send(json.dumps({**first, "uuid": "aaaa-1111", "tenant": "acme"}))
        assert await receive_json(client) == {"event": "CallStarted"}
        report = await receive_json(client)
    assert report == {"call_id": "aaaa-1111", "metadata": {"uuid": "aaaa-1111", "tenant": "acme"}}


async def test_disabled_vonage_has_no_routes() -> None:
    async with running_gateway(ScriptedRunner(), vonage=None) as gateway:
        assert (await get_answer(gateway))[0] == 404


def test_vonage_options_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="vonage content_type must be one of"):
        VonageOptions(content_type="audio/l16;rate=24000")
