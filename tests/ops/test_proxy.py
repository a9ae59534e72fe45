"""Behind a trusted proxy (``server.trusted_proxy``), TwiML follows X-Forwarded-Proto/Host."""

from __future__ import annotations

import aiohttp
import pytest

from tests.server.server_kit import ScriptedRunner, running_gateway
from voicegate.gateway.twiml import forwarded_origin

FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "abc.ngrok.app"}


async def stream_url(trusted: bool, headers: dict[str, str]) -> str:
    async with (
        running_gateway(ScriptedRunner(), trusted_proxy=trusted) as gateway,
        aiohttp.ClientSession() as session,
        session.post(gateway.base_url + "/twilio/voice", data={}, headers=headers) as reply,
    ):
        twiml = await reply.text()
    return twiml.split('url="')[1].split('"')[0]


async def test_a_trusted_proxy_makes_the_stream_wss_on_its_host() -> None:
    assert await stream_url(True, FORWARDED) == "wss://abc.ngrok.app/twilio"


async def test_forwarded_headers_are_ignored_unless_the_proxy_is_trusted() -> None:
    assert (await stream_url(False, FORWARDED)).startswith("ws://127.0.0.1:")


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"X-Forwarded-Proto": "https, http"}, ("https", "h:1")),
        ({"X-Forwarded-Host": "a.example, b"}, ("http", "a.example")),
        ({"X-Forwarded-Host": "[::1]:8443"}, ("http", "[::1]:8443")),
        ({"X-Forwarded-Proto": "gopher", "X-Forwarded-Host": "x/evil@y"}, ("http", "h:1")),
    ],
)
def test_forwarded_origin_takes_the_client_facing_value_and_refuses_junk(
    headers: dict[str, str], expected: tuple[str, str]
) -> None:
    assert forwarded_origin("http", "h:1", headers) == expected
