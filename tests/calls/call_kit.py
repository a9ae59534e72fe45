"""Wiring for end-to-end call tests: a real gateway on loopback and an emulated Twilio caller."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from voicegate.audio.wav import read_wav
from voicegate.callers.driver import drive
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import TwilioCaller
from voicegate.clock.virtual import virtual_loop
from voicegate.engine.llm.port import LLMFactory
from voicegate.engine.llm.script import load_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.gateway.dialogue import DialoguePlane, ThreadedEngine
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.limits import Limits
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.options import BrowserOptions, GatewayOptions, TwilioOptions
from voicegate.gateway.session import CallServices, SessionRunner, SessionSettings
from voicegate.speech.fakes import ScriptedSpeechToText, ToneTextToSpeech
from voicegate.speech.ports import TextToSpeech
from voicegate.turns.tracker import TurnFactory

ROOT = Path(__file__).resolve().parents[2]
AUDIO = ROOT / "fixtures" / "audio"
SLOW_BANK = ROOT / "fixtures" / "projects" / "slow_bank"
#: The call tests drive callers at twice real time, within these limits.
FAST_REPLAY_LIMITS = Limits(media_max_speed=4.0)


def recording(relative: str) -> Any:
    """Samples of a fixture recording (8 kHz for Twilio callers)."""
    return read_wav(AUDIO / relative).samples


def transcript_of(relative: str) -> str:
    """The label beside a fixture (fixtures/audio/transcripts.tsv); noise has none."""
    for line in (AUDIO / "transcripts.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        path, text, _ = line.split("\t")
        if path == relative:
            return text
    if "Noise" in relative:
        return ""
    raise KeyError(relative)


def cue(relative: str, **placement: int) -> Cue:
    """A fixture recording placed in the call, labelled with its transcript."""
    label = transcript_of(relative)
    return Cue(recording(relative), label=relative, transcript=label, **placement)  # type: ignore[arg-type]


@dataclass
class CallWorld:
    """Everything a call test looks at afterwards."""

    project: Path
    runner: SessionRunner
    engine: ProjectEngine
    store: SqliteMemoryStore
    url: str
    gateway: Gateway
    unix_path: str | None = None  # on virtual time the gateway listens on a Unix socket

    async def call(self, caller: TwilioCaller, *, speed: float, max_ms: int) -> int | None:
        """Drive ``caller`` through one call to this gateway; the close code."""
        return await drive(self.url, caller, speed=speed, max_ms=max_ms, unix_path=self.unix_path)

    def tool_record(self) -> list[dict[str, Any]]:
        """What the project's tool wrote about itself."""
        path = self.project / "tool_record.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@asynccontextmanager
async def gateway_for(
    tmp_path: Path,
    transcripts: Sequence[str],
    *,
    project: Path = SLOW_BANK,
    conversation: str = "conversation.yml",
    settings: SessionSettings | None = None,
    tts: TextToSpeech | None = None,
    media: MediaFactory | None = None,
    turns: TurnFactory | None = None,
    limits: Limits = FAST_REPLAY_LIMITS,
    options: GatewayOptions | None = None,
    llm: LLMFactory | None = None,
) -> AsyncIterator[CallWorld]:
    """A real gateway on a free loopback port running ``project`` with a scripted model
    (or the model ``llm`` makes).

    On a virtual-time loop (clock/virtual.py) the engine and its tools run inline on it and
    the gateway listens on a Unix socket, as virtual-time replays run (docs/replay.md).
    """
    copy = tmp_path / "project"
    shutil.copytree(project, copy)
    script = load_script(copy / conversation)
    store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    virtual = virtual_loop() is not None
    # Tools on their own loop thread, as `voicegate serve` runs them (issue 12).
    tool_loops = None if virtual else ToolLoops()
    engine = ProjectEngine(
        load_project(copy),
        llm or (lambda call_id: ScriptedLLM(script)),
        store,
        tool_loops=tool_loops,
    )
    # The engine on its own dialogue plane, as `voicegate serve` runs it (issue 12).
    plane = None if virtual else DialoguePlane()
    if plane is not None:
        plane.start()
    services = CallServices(
        engine=engine if plane is None else ThreadedEngine(engine, plane),
        stt=ScriptedSpeechToText(transcripts),
        tts=tts or ToneTextToSpeech(16000, ms_per_char=40),
        media=media or MediaFactory(),
        turns=turns or TurnFactory(),
    )
    runner = SessionRunner(services, replace(settings or SessionSettings(), limits=limits))
    options = options or GatewayOptions(
        port=0, twilio=TwilioOptions(parameters={}), browser=BrowserOptions()
    )
    options = replace(options, limits=limits)
    with tempfile.TemporaryDirectory(prefix="vg-") as folder:  # short: a socket path's limit
        unix_path = str(Path(folder) / "gateway.sock") if virtual else None
        async with Gateway(runner, options, unix_path=unix_path) as gateway:
            base = "http://localhost" if unix_path else gateway.base_url
            url = "ws" + base.removeprefix("http") + "/twilio"
            yield CallWorld(copy, runner, engine, store, url, gateway, unix_path)
    if plane is not None:
        plane.stop()
    if tool_loops is not None:
        tool_loops.close()
    store.close()


async def settled(world: CallWorld) -> None:
    """Wait (boundedly) until every call has finished on the gateway and kept its timeline.

    A caller sees its socket close before the gateway has closed the call's engine session
    (on the dialogue plane) and kept its timeline.
    """
    for _ in range(3000):
        if not world.gateway.calls.active:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("calls still running 30 s after their callers hung up")


def script_of(*cues: Cue, tail_ms: int = 8000) -> CallerScript:
    """A Twilio caller's script (8 kHz) that stays on the line ``tail_ms`` after its last cue."""
    return CallerScript(cues, 8000, tail_ms=tail_ms)
