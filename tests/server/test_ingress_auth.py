"""Issue 15 #9 and #10 over real sockets: who may open a call, and how often.

Twilio's signature on the /twilio upgrade and on JSON webhooks, the browser's Origin and API
key, and the per-address limits; each refused attempt beside a healthy call.
"""

from __future__ import annotations

import hashlib
import json

import aiohttp
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.server.server_kit import (
    ScriptedRunner,
    call,
    close_of,
    receive_json,
    running_gateway,
    twilio_start,
    ws_url,
)
from tests.server.test_routes import post_voice, stream_of
from voicegate.gateway.auth import STREAM_TOKEN_PARAMETER
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.limits import Limits
from voicegate.gateway.options import BrowserOptions, TwilioOptions
from voicegate.gateway.twiml import twilio_signature

TOKEN = "s3cret"
PUBLIC = "https://voice.example.com"


async def refused_status(url: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status an upgrade to ``url`` is refused with."""
    try:
        async with connect(url, additional_headers=headers or {}, open_timeout=10):
            pass
    except InvalidStatus as refused:
        return refused.response.status_code
    raise AssertionError(f"{url} was not refused")


async def healthy_twilio_call(gateway: Gateway, headers: dict[str, str]) -> None:
    """A signed call that starts and hangs up normally."""
    async with connect(ws_url(gateway, "/twilio"), additional_headers=headers) as client:
        assert await receive_json(client) == {"dialect": "twilio"}
        await client.send(twilio_start("CA-HEALTHY"))
        assert await receive_json(client) == {"event": "CallStarted"}
        await client.send("hangup")
        assert await close_of(client) == (1000, "bye")


async def test_the_twilio_upgrade_needs_twilios_signature_of_its_url() -> None:
    twilio = TwilioOptions(auth_token=TOKEN)
    signed = twilio_signature(TOKEN, "wss://voice.example.com/twilio", {})
    async with running_gateway(ScriptedRunner(), twilio=twilio, public_url=PUBLIC) as gateway:
        url = ws_url(gateway, "/twilio")
        assert await refused_status(url) == 403
        assert await refused_status(url, {"X-Twilio-Signature": "AAAA"}) == 403
        other = twilio_signature(TOKEN, "wss://voice.example.com/other", {})
        assert await refused_status(url, {"X-Twilio-Signature": other}) == 403
        await healthy_twilio_call(gateway, {"X-Twilio-Signature": signed})


async def test_a_json_webhook_is_checked_by_its_body_hash() -> None:
    twilio = TwilioOptions(auth_token=TOKEN)
    body = json.dumps({"CallSid": "CA7"}).encode()
    path = f"/twilio/voice?bodySHA256={hashlib.sha256(body).hexdigest()}"
    signed = twilio_signature(TOKEN, PUBLIC + path, {})
    async with running_gateway(ScriptedRunner(), twilio=twilio, public_url=PUBLIC) as gateway:

        async def post(data: bytes, signature: str) -> int:
            headers = {"X-Twilio-Signature": signature, "Content-Type": "application/json"}
            async with (
                aiohttp.ClientSession() as session,
                session.post(gateway.base_url + path, data=data, headers=headers) as reply,
            ):
                return reply.status

        assert await post(body, signed) == 200
        assert await post(body + b" ", signed) == 403  # the body does not match its hash
        assert await post(body, "AAAA") == 403


async def test_the_webhook_binds_each_stream_to_its_call_with_a_token() -> None:
    twilio = TwilioOptions(stream_secret="another secret")
    async with running_gateway(ScriptedRunner(), twilio=twilio) as gateway:
        status, _, twiml = await post_voice(gateway, {"CallSid": "CA7"})
        assert status == 200
        parameters = dict(stream_of(twiml)[1])
        token = parameters[STREAM_TOKEN_PARAMETER]
        async with call(gateway, "/twilio") as client:
            await receive_json(client)
            await client.send(twilio_start("CA7", {STREAM_TOKEN_PARAMETER: token}))
            assert await receive_json(client) == {"event": "CallStarted"}
            assert (await receive_json(client))["call_id"] == "CA7"
            await client.send("hangup")
            assert await close_of(client) == (1000, "bye")
        async with call(gateway, "/twilio") as thief:
            await receive_json(thief)
            # The same token presented for another call is worthless.
            await thief.send(twilio_start("CA8", {STREAM_TOKEN_PARAMETER: token}))
            assert await receive_json(thief) == {"event": "CallStarted"}
            assert await close_of(thief) == (1008, "invalid stream token for this call")


async def test_a_browser_page_from_a_foreign_origin_is_refused() -> None:
    browser = BrowserOptions(allowed_origins=("https://app.example.com",))
    async with running_gateway(ScriptedRunner(), browser=browser) as gateway:
        url = ws_url(gateway, "/browser")
        assert await refused_status(url, {"Origin": "https://evil.example.net"}) == 403
        own = f"http://127.0.0.1:{gateway.port}"
        for origin in (own, "https://app.example.com"):
            async with connect(url, additional_headers={"Origin": origin}) as client:
                assert await receive_json(client) == {"dialect": "browser"}


async def test_a_browser_client_needs_the_api_key_or_the_gateways_page() -> None:
    browser = BrowserOptions(api_key="k3y")
    async with running_gateway(ScriptedRunner(), browser=browser) as gateway:
        url = ws_url(gateway, "/browser")
        assert await refused_status(url) == 403
        assert await refused_status(url, {"Authorization": "Bearer wrong"}) == 403
        async with connect(url, additional_headers={"Authorization": "Bearer k3y"}) as client:
            assert await receive_json(client) == {"dialect": "browser"}
        # The page gets a cookie; an upgrade carrying it is the page's own.
        # unsafe=True: aiohttp's client jar, unlike browsers, ignores cookies of IP hosts.
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            async with session.get(gateway.base_url + "/") as page:
                assert page.status == 200
            async with session.ws_connect(url) as socket:
                assert json.loads(await socket.receive_str()) == {"dialect": "browser"}


async def test_requests_beyond_the_rate_of_one_address_get_429() -> None:
    limits = Limits(requests_per_ip_per_s=0.001, requests_per_ip_burst=3)
    async with running_gateway(ScriptedRunner(), limits=limits) as gateway:
        statuses = [(await post_voice(gateway, {"CallSid": f"CA{n}"}))[0] for n in range(5)]
        assert statuses == [200, 200, 200, 429, 429]
        assert await refused_status(ws_url(gateway, "/twilio")) == 429


async def test_sockets_beyond_the_limit_of_one_address_get_429() -> None:
    limits = Limits(sockets_per_ip=1)
    async with (
        running_gateway(ScriptedRunner(), limits=limits) as gateway,
        call(gateway, "/twilio") as first,
    ):
        await receive_json(first)
        assert await refused_status(ws_url(gateway, "/twilio")) == 429
        await first.send(twilio_start("CA1"))
        assert await receive_json(first) == {"event": "CallStarted"}
        await receive_json(first)
        await first.send("hangup")
        assert await close_of(first) == (1000, "bye")
