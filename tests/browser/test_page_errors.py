"""What the page tells its user when the call cannot happen or breaks, in real Chromium."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
from websockets.asyncio.client import connect

from tests.browser.browser_kit import (
    browser_gateway,
    click_call_button,
    page_on,
    require_chromium,
    stats,
)
from tests.browser.cdp import Page
from tests.browser.mic_files import RATE
from voicegate.audio.wav import write_wav
from voicegate.gateway.lifecycle import Gateway

IN_CALL = "window.voicegate.stats.state === 'in-call'"
IDLE = "window.voicegate.stats.state === 'idle'"


def quiet_microphone(tmp_path: Path) -> Path:
    """A second of silence (the fake device stays silent after a ``%noloop`` file ends)."""
    path = tmp_path / "silence.wav"
    write_wav(path, np.zeros(RATE, dtype=np.int16), RATE)
    return path


async def shown_error(page: Page) -> str:
    """The page's error line, which must be visible when it says something."""
    text = await page.wait_for("window.voicegate.stats.error")
    assert await page.evaluate("!document.querySelector('#error').hidden")
    assert isinstance(text, str)
    return text


async def test_a_denied_microphone_is_explained_and_no_call_is_made(tmp_path: Path) -> None:
    require_chromium()
    async with browser_gateway(tmp_path, []) as world:
        microphone = quiet_microphone(tmp_path)
        async with page_on(world, tmp_path, microphone, allow_microphone=False) as page:
            await click_call_button(page)
            error = await shown_error(page)
            await page.wait_for(IDLE)
            button = await page.evaluate("document.querySelector('#call').textContent")
    assert error.startswith("Microphone access was denied.")
    assert button == "Start call"
    assert world.stt.calls == []  # the gateway never saw a call


async def test_a_full_gateway_is_explained_and_a_later_call_gets_through(
    tmp_path: Path,
) -> None:
    require_chromium()
    async with browser_gateway(tmp_path, [], capacity=1) as world:
        microphone = quiet_microphone(tmp_path)
        async with page_on(world, tmp_path, microphone) as page:
            socket_url = "ws" + world.gateway.base_url.removeprefix("http") + "/browser"
            async with connect(socket_url) as other_caller:  # takes the only place
                await other_caller.send(json.dumps({"type": "start", "sampleRate": 16000}))
                await other_caller.recv()  # started
                await click_call_button(page)
                error = await shown_error(page)
                await page.wait_for(IDLE)
                refused = await stats(page)
            # The place is free again: pressing Start call once more connects.
            await page.wait_for("window.voicegate.stats.state === 'idle'")
            await click_call_button(page)
            await page.wait_for(IN_CALL)
            admitted = await stats(page)
            await click_call_button(page)
            await page.wait_for(IDLE)
    assert error == (
        "The gateway cannot take a call right now: at capacity (1 calls). Try again in a moment."
    )
    assert refused["calls"] == 0
    assert (admitted["calls"], admitted["error"]) == (1, "")


async def test_a_lost_connection_is_shown_and_the_page_reconnects(tmp_path: Path) -> None:
    require_chromium()
    async with browser_gateway(tmp_path, []) as world:
        microphone = quiet_microphone(tmp_path)
        async with page_on(world, tmp_path, microphone) as page:
            await click_call_button(page)
            await page.wait_for(IN_CALL)
            first_call = await page.evaluate("document.querySelector('#call-id').textContent")
            # The gateway goes away mid-call (closing calls with 1001), then comes back.
            port = world.gateway.port
            await world.gateway.drain(0)
            await world.gateway.close()
            await page.wait_for("window.voicegate.stats.state === 'reconnecting'")
            error = await shown_error(page)
            options = dataclasses.replace(world.gateway.options, port=port)
            async with Gateway(world.runner, options):
                await page.wait_for(IN_CALL)
                second_call = await page.evaluate("document.querySelector('#call-id').textContent")
                after = await stats(page)
                await click_call_button(page)
                await page.wait_for(IDLE)
    assert error.startswith(
        "Connection to the gateway lost (code 1001: the gateway is shutting down). "
        "Reconnecting in 1 s (attempt 1 of 5)"
    )
    assert second_call != first_call
    assert (after["calls"], after["reconnects"], after["error"]) == (2, 1, "")
    assert "call_started" in {record["event"] for record in world.timeline(second_call)}
