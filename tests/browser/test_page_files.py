"""The page's files as the gateway serves them, and the fake microphone files (no browser)."""

from __future__ import annotations

import re

import aiohttp
import numpy as np
import pytest

from tests.browser.mic_files import ECHO, MIC_FILE_SET, RATE, MicFile, bot_tone, build
from tests.server.server_kit import ScriptedRunner, running_gateway
from voicegate.audio.wav import read_wav
from voicegate.gateway.server import STATIC_DIR

PAGE_FILES = {
    "app.js": "text/javascript",
    "phone.js": "text/javascript",
    "connection.js": "text/javascript",
    "audio.js": "text/javascript",
    "timeline.js": "text/javascript",
    "capture-worklet.js": "text/javascript",
    "playback-worklet.js": "text/javascript",
    "style.css": "text/css",
    "calls.js": "text/javascript",
}


async def fetch(url: str) -> tuple[int, str, str, dict[str, str]]:
    async with aiohttp.ClientSession() as session, session.get(url) as reply:
        return reply.status, reply.content_type, await reply.text(), dict(reply.headers)


async def test_the_page_and_its_files_are_served_from_the_package() -> None:
    async with running_gateway(ScriptedRunner()) as gateway:
        status, kind, html, headers = await fetch(gateway.base_url + "/")
        served = {name: await fetch(f"{gateway.base_url}/static/{name}") for name in PAGE_FILES}
        missing = await fetch(gateway.base_url + "/static/nothing.js")
        outside = await fetch(gateway.base_url + "/static/..%2F..%2Fgateway%2Fstatic%2Fapp.js")
        python = await fetch(gateway.base_url + "/static/..%2Fserver.py")
    assert (status, kind) == (200, "text/html")
    # Only the gateway's own files and socket: no CDN, no inline scripts.
    assert headers["Content-Security-Policy"].startswith("default-src 'self'")
    assert '<script type="module" src="/static/app.js"></script>' in html
    assert '<link rel="stylesheet" href="/static/style.css" />' in html
    for name, expected_kind in PAGE_FILES.items():
        code, served_kind, text, _ = served[name]
        assert (code, served_kind) == (200, expected_kind), name
        assert text == (STATIC_DIR / name).read_text(encoding="utf-8")
    assert (missing[0], outside[0], python[0]) == (404, 404, 404)


async def test_the_page_is_off_with_the_browser_route() -> None:
    async with running_gateway(ScriptedRunner(), browser=None) as gateway:
        assert (await fetch(gateway.base_url + "/"))[0] == 404
        assert (await fetch(gateway.base_url + "/static/app.js"))[0] == 404


def test_every_page_module_is_listed_and_loads_nothing_from_elsewhere() -> None:
    on_disk = {path.name for path in STATIC_DIR.iterdir()} - {"index.html", "calls.html"}
    assert on_disk == set(PAGE_FILES)
    for name in on_disk:
        text = (STATIC_DIR / name).read_text(encoding="utf-8")
        assert not re.search(r"https?://", text), f"{name} refers to another site"
        imported = re.findall(r'from "\./([\w-]+\.js)"', text)
        assert set(imported) <= on_disk, name


@pytest.mark.parametrize("mic", MIC_FILE_SET, ids=lambda mic: mic.name)
def test_mic_files_are_built_from_the_recordings(mic: MicFile) -> None:
    # Regenerate with `.venv/bin/python -m tests.browser.mic_files` after changing a placement.
    committed = read_wav(mic.path)
    assert committed.sample_rate == RATE
    assert np.array_equal(committed.samples, build(mic))


def test_the_echo_file_carries_the_bots_tone_after_the_callers_words() -> None:
    samples = build(ECHO)
    assert ECHO.echo_at_ms is not None
    start = RATE * ECHO.echo_at_ms // 1000
    tone = bot_tone()
    assert np.array_equal(samples[start : start + len(tone)], tone)
    assert not samples[start - RATE // 2 : start].any()  # silence before the echo
