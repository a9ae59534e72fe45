"""Exotel routes: the Voicebot applet's dynamic URL and HTTP Basic on the stream."""

from __future__ import annotations

import base64
import json
from urllib.parse import parse_qsl, urlsplit

import aiohttp
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import ScriptedRunner, receive_json, running_gateway, ws_url
from voicegate.errors import ConfigError
from voicegate.gateway.auth import basic_valid
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.options import ExotelOptions

QUERY = {"CallSid": "c0ffee", "CallFrom": "09876543210", "CallTo": "08047491899"}
START = {
    "event": "start",
    "stream_sid": "MZ1",
    "start": {"stream_sid": "MZ1", "call_sid": "c0ffee", "custom_parameters": {"tenant": "acme"}},
}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def get_url(gateway: Gateway, headers: dict[str, str]) -> tuple[int, str]:
    url = gateway.base_url + "/exotel/url"
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, params=QUERY, headers=headers) as reply,
    ):
        return reply.status, await reply.text()


def test_basic_credentials_are_checked_exactly() -> None:
    assert basic_valid(basic("bot", "s3cret"), "bot", "s3cret")
    assert not basic_valid(basic("bot", "guess"), "bot", "s3cret")
    assert not basic_valid(basic("other", "s3cret"), "bot", "s3cret")
    assert not basic_valid("Basic !!!", "bot", "s3cret")
    assert not basic_valid("Bearer s3cret", "bot", "s3cret")
    assert not basic_valid(None, "bot", "s3cret")
    assert not basic_valid("Basic " + base64.b64encode(b"bots3cret").decode(), "bot", "s3cret")


async def test_dynamic_url_names_the_rate_and_up_to_three_custom_parameters() -> None:
    exotel = ExotelOptions(parameters={"tenant": "acme"}, sample_rate=16000)
    async with running_gateway(ScriptedRunner(), exotel=exotel) as gateway:
        status, body = await get_url(gateway, {})
    assert status == 200
    url = urlsplit(json.loads(body)["url"])
    assert (url.scheme, url.netloc, url.path) == ("ws", f"127.0.0.1:{gateway.port}", "/exotel")
    assert parse_qsl(url.query) == [
        ("sample-rate", "16000"),
        ("tenant", "acme"),
        ("CallFrom", "09876543210"),
        ("CallTo", "08047491899"),
    ]


async def test_credentials_guard_the_url_and_the_stream_and_ride_in_the_url() -> None:
    exotel = ExotelOptions(username="bot", password="s3 cret")
    async with running_gateway(ScriptedRunner(), exotel=exotel) as gateway:
        assert (await get_url(gateway, {}))[0] == 401
        assert (await get_url(gateway, {"Authorization": basic("bot", "no")}))[0] == 401
        status, body = await get_url(gateway, {"Authorization": basic("bot", "s3 cret")})
        assert status == 200
        stream = json.loads(body)["url"]
        assert urlsplit(stream).netloc == f"bot:s3%20cret@127.0.0.1:{gateway.port}"
        with pytest.raises(InvalidStatus) as refused:
            async with connect(ws_url(gateway, "/exotel"), open_timeout=10):
                pass
        assert refused.value.response.status_code == 401
        # The websockets client sends the URL's user-info as Basic credentials, as Exotel does.
        async with connect(stream, open_timeout=10) as client:
            assert await receive_json(client) == {"dialect": "exotel"}
            await client.send(json.dumps(START))
            assert await receive_json(client) == {"event": "CallStarted"}
            assert await receive_json(client) == {
                "call_id": "c0ffee",
                "metadata": {"tenant": "acme"},
            }


async def test_disabled_exotel_has_no_routes() -> None:
    async with running_gateway(ScriptedRunner(), exotel=None) as gateway:
        assert (await get_url(gateway, {}))[0] == 404


def test_exotel_options_are_checked_up_front() -> None:
    with pytest.raises(ConfigError, match="sample_rate must be one of"):
        ExotelOptions(sample_rate=44100)
    with pytest.raises(ConfigError, match="at most 3 custom parameters"):
        ExotelOptions(parameters={"a": "1", "b": "2"}, webhook_fields=("CallFrom", "CallTo"))
    with pytest.raises(ConfigError, match="go together"):
        ExotelOptions(username="bot")
