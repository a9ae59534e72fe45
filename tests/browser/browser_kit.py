"""Wiring for the browser tests: a real gateway on loopback serving the page, and Chromium."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.browser.cdp import CHROMIUM, Page, chromium
from tests.browser.mic_files import RATE, TONE_MS_PER_CHAR
from voicegate.audio.pcm import Samples
from voicegate.engine.llm.script import load_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.options import BrowserOptions, GatewayOptions
from voicegate.gateway.session import CallServices, SessionRunner, SessionSettings
from voicegate.speech.fakes import ScriptedSpeechToText, ToneTextToSpeech
from voicegate.speech.ports import SpeechToTextStream, TranscriptResult
from voicegate.types import MediaMs

ROOT = Path(__file__).resolve().parents[2]
SLOW_BANK = ROOT / "fixtures" / "projects" / "slow_bank"
ARTIFACTS = ROOT / ".artifacts"


def require_chromium() -> None:
    """Skip, saying why, when Debian's chromium is missing (``make chromium`` installs it)."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is missing and could not be installed: `make chromium` runs "
            "`apt-get install chromium` (as root, with network); see the Makefile"
        )


class _LevelStream:
    """A recogniser stream that also keeps the level of every frame the gateway heard."""

    def __init__(self, inner: SpeechToTextStream, levels: list[tuple[MediaMs, float]]) -> None:
        self._inner = inner
        self._levels = levels

    def push(self, frame: Samples, at_ms: MediaMs) -> None:
        rms = float(np.sqrt(np.mean(frame.astype(np.float64) ** 2))) if len(frame) else 0.0
        self._levels.append((at_ms, rms))
        self._inner.push(frame, at_ms)

    def speech_started(self, onset_ms: MediaMs) -> None:
        self._inner.speech_started(onset_ms)

    def speech_ended(self, at_ms: MediaMs) -> None:
        self._inner.speech_ended(at_ms)

    def speech_paused(self, at_ms: MediaMs) -> None:
        self._inner.speech_paused(at_ms)

    def results(self) -> AsyncIterator[TranscriptResult]:
        return self._inner.results()

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class LevelRecordingSTT:
    """The scripted recogniser, keeping per call what the microphone delivered (RMS by time)."""

    transcripts: Sequence[str]
    calls: list[list[tuple[MediaMs, float]]] = field(default_factory=list)

    def open(self, sample_rate: int) -> SpeechToTextStream:
        """One stream per call, each walking the script from the start."""
        levels: list[tuple[MediaMs, float]] = []
        self.calls.append(levels)
        return _LevelStream(ScriptedSpeechToText(self.transcripts).open(sample_rate), levels)


@dataclass
class BrowserWorld:
    """A gateway serving the page, and what a test reads afterwards."""

    gateway: Gateway
    runner: SessionRunner
    stt: LevelRecordingSTT

    @property
    def page_url(self) -> str:
        """The browser client's address."""
        return self.gateway.base_url + "/"

    def timeline(self, call_id: str) -> list[dict[str, Any]]:
        """The gateway's own record of a call."""
        timeline = self.runner.timeline(call_id)
        assert timeline is not None, f"no timeline for {call_id}"
        return list(timeline.records)


@asynccontextmanager
async def browser_gateway(
    tmp_path: Path,
    transcripts: Sequence[str],
    *,
    capacity: int = 100,
    settings: SessionSettings | None = None,
) -> AsyncIterator[BrowserWorld]:
    """The slow_bank project behind a real gateway on loopback, browser route on."""
    project = tmp_path / "project"
    shutil.copytree(SLOW_BANK, project)
    script = load_script(project / "conversation.yml")
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    engine = ProjectEngine(load_project(project), lambda call_id: ScriptedLLM(script), store)
    stt = LevelRecordingSTT(transcripts)
    services = CallServices(
        engine=engine,
        stt=stt,
        tts=ToneTextToSpeech(RATE, ms_per_char=TONE_MS_PER_CHAR),
        media=MediaFactory(),
    )
    runner = SessionRunner(services, settings or SessionSettings())
    options = GatewayOptions(port=0, capacity=capacity, twilio=None, browser=BrowserOptions())
    try:
        async with Gateway(runner, options) as gateway:
            yield BrowserWorld(gateway, runner, stt)
    finally:
        store.close()


@asynccontextmanager
async def page_on(
    world: BrowserWorld,
    workdir: Path,
    microphone: Path,
    *,
    allow_microphone: bool = True,
    query: str = "",
) -> AsyncIterator[Page]:
    """Chromium with ``microphone`` as its fake microphone, showing the page (``?query``)."""
    async with chromium(workdir, microphone, allow_microphone=allow_microphone) as page:
        await page.navigate(world.page_url + query)
        yield page


async def click_call_button(page: Page) -> None:
    """Press Start call / Hang up, as a user would."""
    await page.evaluate("document.querySelector('#call').click()")


async def stats(page: Page) -> dict[str, Any]:
    """The page's playback numbers and state (``window.voicegate.stats``)."""
    value = await page.evaluate("window.voicegate.stats")
    assert isinstance(value, dict)
    return value
