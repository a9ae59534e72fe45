"""The Asterisk route: websocket_client.conf's credentials as HTTP Basic, v(...) as metadata."""

from __future__ import annotations

import json

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.errors import ConfigError
from voicegate.gateway.options import AsteriskOptions

MEDIA_START = {
    "event": "MEDIA_START",
    "connection_id": "media_connection1",
    "channel": "WebSocket/media_connection1/0x5140001a0040",
    "channel_id": "1761245643.1",
    "format": "ulaw",
    "optimal_frame_size": 160,
    "ptime": 20,
    "channel_variables": {"CALLERID(num)": "15550100"},
}


async def test_the_client_credentials_guard_the_socket() -> None:
    asterisk = AsteriskOptions(username="asterisk", password="s3cret")
    async with running_gateway(ScriptedRunner(), asterisk=asterisk) as gateway:
        url = ws_url(gateway, "/asterisk") + "?tenant=acme"
        for bad in (url, url.replace("ws://", "ws://asterisk:wrong@")):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(bad, open_timeout=10):
                    pass
            assert refused.value.response.status_code == 401
        async with connect(url.replace("ws://", "ws://asterisk:s3cret@"), open_timeout=10) as peer:
            assert await receive_json(peer) == {"dialect": "asterisk"}
            await peer.send(json.dumps(MEDIA_START))
            assert await receive_json(peer) == {"event": "CallStarted"}
            started = await receive_json(peer)
    assert started["call_id"] == "1761245643.1"
    # The dial string's v(...) parameters and the channel variables become the metadata.
    assert started["metadata"]["tenant"] == "acme"
    assert started["metadata"]["CALLERID(num)"] == "15550100"


async def test_disabled_asterisk_has_no_route() -> None:
    async with (
        running_gateway(ScriptedRunner(), asterisk=None) as gateway,
        aiohttp.ClientSession() as session,
        session.get(gateway.base_url + "/asterisk") as reply,
    ):
        assert reply.status == 404


def test_asterisk_options_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="asterisk username and password go together"):
        AsteriskOptions(username="asterisk")
