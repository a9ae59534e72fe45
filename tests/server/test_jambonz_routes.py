"""Jambonz routes: the calling webhook's listen verb, its actionHook, Basic auth, subprotocol."""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.errors import ConfigError
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import JambonzOptions

BODY = {"call_sid": "b6a1", "from": "15083084809", "to": "15083728299", "direction": "inbound"}
FIRST = {"sampleRate": 16000, "mixType": "mono", "callSid": "b6a1", "tenant": "acme"}
AUDIO = [Subprotocol("audio.jambonz.org")]


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def post(gateway: Gateway, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(gateway.base_url + path, json=BODY, headers=headers) as reply,
    ):
        text = await reply.text()
        return reply.status, json.loads(text) if reply.status == 200 else text


async def test_the_webhook_answers_a_bidirectional_streaming_listen() -> None:
    jambonz = JambonzOptions(parameters={"tenant": "acme"}, webhook_fields=("from",))
    async with running_gateway(ScriptedRunner(), jambonz=jambonz) as gateway:
        status, verbs = await post(gateway, "/jambonz/call", {})
        assert (await post(gateway, "/jambonz/action", {})) == (200, [{"verb": "hangup"}])
    assert status == 200
    assert verbs == [
        {
            "verb": "listen",
            "url": f"ws://127.0.0.1:{gateway.port}/jambonz",
            "actionHook": f"http://127.0.0.1:{gateway.port}/jambonz/action",
            "sampleRate": 8000,
            "mixType": "mono",
            "passDtmf": True,
            "bidirectionalAudio": {"enabled": True, "streaming": True, "sampleRate": 8000},
            "metadata": {"tenant": "acme", "from": "15083084809"},
        }
    ]


async def test_credentials_guard_the_webhooks_and_the_socket_and_ride_as_ws_auth() -> None:
    jambonz = JambonzOptions(username="bot", password="s3cret", sample_rate=16000)
    async with running_gateway(ScriptedRunner(), jambonz=jambonz) as gateway:
        assert (await post(gateway, "/jambonz/call", {}))[0] == 401
        assert (await post(gateway, "/jambonz/action", {}))[0] == 401
        good = {"Authorization": basic("bot", "s3cret")}
        status, verbs = await post(gateway, "/jambonz/call", good)
        assert status == 200
        assert verbs[0]["wsAuth"] == {"username": "bot", "password": "s3cret"}
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, "/jambonz"), subprotocols=AUDIO, open_timeout=10):
                pass
        assert refused.value.response.status_code == 401
        stream = ws_url(gateway, "/jambonz").replace("ws://", "ws://bot:s3cret@")
        async with connect(stream, subprotocols=AUDIO, open_timeout=10) as client:
            assert client.subprotocol == "audio.jambonz.org"
            assert await receive_json(client) == {"dialect": "jambonz"}
            await client.send(json.dumps(FIRST))
            assert await receive_json(client) == {"event": "CallStarted"}
            started = await receive_json(client)
            assert started["call_id"] == "b6a1"
            assert started["metadata"]["tenant"] == "acme"


async def test_disabled_jambonz_has_no_routes() -> None:
    async with running_gateway(ScriptedRunner(), jambonz=None) as gateway:
        assert (await post(gateway, "/jambonz/call", {}))[0] == 404


def test_jambonz_options_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="sample_rate must be one of"):
        JambonzOptions(sample_rate=11025)
    with pytest.raises(ConfigError, match="go together"):
        JambonzOptions(password="x")
