"""The FreeSWITCH route: mod_audio_fork's subprotocol, HTTP Basic on the upgrade, its codec."""

from __future__ import annotations

import json

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.errors import ConfigError
from voicegate.gateway.options import FreeSwitchOptions

METADATA = {"uuid": "7f4de4bc-4a5c", "from": "1000", "sampleRate": 16000, "tenant": "acme"}
AUDIO = [Subprotocol("audio.drachtio.org")]


async def test_credentials_guard_the_upgrade_and_the_fork_speaks_audio_drachtio_org() -> None:
    # mod_audio_fork sends the channel's MOD_AUDIO_BASIC_AUTH_USERNAME/PASSWORD as HTTP
    # Basic on the upgrade (lws_glue.cpp fork_data_init, audio_pipe.cpp).
    freeswitch = FreeSwitchOptions(username="fs", password="s3cret")
    async with running_gateway(ScriptedRunner(), freeswitch=freeswitch) as gateway:
        for wrong in ("", "fs:nope@"):
            url = ws_url(gateway, "/freeswitch").replace("ws://", f"ws://{wrong}")
            with pytest.raises(InvalidStatus) as refused:
                async with connect(url, subprotocols=AUDIO, open_timeout=10):
                    pass
            assert refused.value.response.status_code == 401
        stream = ws_url(gateway, "/freeswitch").replace("ws://", "ws://fs:s3cret@")
        async with connect(stream, subprotocols=AUDIO, open_timeout=10) as client:
            assert client.subprotocol == "audio.drachtio.org"
            assert await receive_json(client) == {"dialect": "freeswitch"}
            await client.send(json.dumps(METADATA))
            assert await receive_json(client) == {"event": "CallStarted"}
            started = await receive_json(client)
    assert started["call_id"] == "7f4de4bc-4a5c"
    assert started["metadata"]["tenant"] == "acme"


async def test_disabled_freeswitch_has_no_route() -> None:
    async with (
        running_gateway(ScriptedRunner(), freeswitch=None) as gateway,
        aiohttp.ClientSession() as session,
        session.get(gateway.base_url + "/freeswitch") as reply,
    ):
        assert reply.status == 404


def test_freeswitch_options_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="sample_rate must be one of"):
        FreeSwitchOptions(sample_rate=24000)
    with pytest.raises(ConfigError, match="chunk_ms"):
        FreeSwitchOptions(chunk_ms=0)
    with pytest.raises(ConfigError, match="go together"):
        FreeSwitchOptions(password="x")
