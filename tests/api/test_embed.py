"""The public Python API (docs/api.md): mounting into an existing aiohttp application, plain
``reply`` functions behind the turn seam, ``voicegate init`` and the lazy package."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import wave
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import aiohttp
import numpy as np
import pytest
from aiohttp import web

import voicegate
from voicegate.audio.wav import read_wav
from voicegate.cli.demo import DEMO_PROJECT, demo_root
from voicegate.cli.init_command import init_project
from voicegate.cli.main import build_parser, main
from voicegate.cli.serve_command import ServePlan, build_runner
from voicegate.engine.seam import CallInfo, Say, Transcript, TurnEnded

ROOT = Path(__file__).resolve().parents[2]
WAV = ROOT / "fixtures" / "audio" / "synth" / "festival" / "balance_8k.wav"
SID = "CA00000000000000000000000000000042"


def fast(settings: voicegate.Settings, tmp_path: Path) -> voicegate.Settings:
    said = tmp_path / "said.txt"
    said.write_text("check my balance\n", encoding="utf-8")
    return replace(
        settings,
        speech=replace(settings.speech, stt=f"scripted:{said}", tts="tone"),
        store=replace(settings.store, data_dir=tmp_path / "data"),
        limits=replace(settings.limits, media_max_speed=4.0),
    )


async def test_mounted_routes_serve_a_call_beside_the_apps_own(tmp_path: Path) -> None:
    async def reply(text: str, call: voicegate.Conversation) -> str:
        return f"You said {text}."

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="my own route")

    app = web.Application()
    app.router.add_get("/hello", hello)
    settings = fast(voicegate.load_settings(), tmp_path)
    gateway = voicegate.mount(app, settings, engine=reply)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/hello") as own:
                assert await own.text() == "my own route"
            async with session.get(f"http://127.0.0.1:{port}/readyz") as ready:
                assert ready.status == 200
        url = f"ws://127.0.0.1:{port}/twilio"
        assert await voicegate.call_twilio(url, WAV, speed=3.0) == 1000
        timeline = await voicegate.call_timeline(gateway, SID)
    finally:
        await runner.cleanup()
    assert [r["text"] for r in timeline if r["event"] == "say"] == ["You said check my balance."]
    assert gateway.calls.admission.value == "draining"  # the app's cleanup drained it


async def test_call_twilio_plays_one_channel_of_a_dual_channel_recording(tmp_path: Path) -> None:
    # A dual-channel call recording: the old agent's side (channel 1) is silent here, the
    # caller's side (channel 2) asks for the balance. Only channel 2 is speech to the bot.
    caller_side = read_wav(WAV).samples
    stereo = np.stack([np.zeros_like(caller_side), caller_side], axis=1)
    recording = tmp_path / "dual.wav"
    with wave.open(str(recording), "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(stereo.astype("<i2").tobytes())

    async def reply(text: str, call: voicegate.Conversation) -> str:
        return f"You said {text}."

    app = web.Application()
    gateway = voicegate.mount(app, fast(voicegate.load_settings(), tmp_path), engine=reply)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"ws://127.0.0.1:{runner.addresses[0][1]}/twilio"
    said: dict[int, list[str]] = {}
    try:
        for channel in (1, 2):
            sid = f"CA{channel:032d}"
            code = await voicegate.call_twilio(
                url, recording, speed=3.0, call_sid=sid, channel=channel
            )
            assert code == 1000
            timeline = await voicegate.call_timeline(gateway, sid)
            said[channel] = [r["text"] for r in timeline if r["event"] == "say"]
    finally:
        await runner.cleanup()
    assert said == {1: [], 2: ["You said check my balance."]}


async def test_a_reply_function_is_cancelled_at_its_await_and_failures_end_the_turn() -> None:
    reached: list[str] = []
    waiting = asyncio.Event()

    async def reply(text: str, call: voicegate.Conversation) -> AsyncIterator[str]:
        if text == "fail":
            raise RuntimeError("backend down")
        yield "First."
        try:
            waiting.set()
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            reached.append("cancelled at the await")
            raise
        yield "Never said."

    engine = voicegate.FunctionEngine(reply)
    await engine.open(CallInfo("c1", metadata={"tenant": "acme"}))
    stream = engine.turn("c1", Transcript("hello"))
    seen = []

    async def iterate() -> None:
        async with stream:
            async for event in stream:
                seen.append(event)

    task = asyncio.create_task(iterate())
    await waiting.wait()  # the reply is suspended at its await, "First." delivered
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [Say("t1", "First.", "model")]
    assert reached == ["cancelled at the await"]
    assert stream.undelivered() == (TurnEnded("t1", "cancelled"),)
    await engine.heard("c1", "t1", "First.", interrupted=True)
    failed = [event async for event in engine.turn("c1", Transcript("fail"))]
    assert failed == [TurnEnded("t2", "error", "RuntimeError: backend down")]
    conversation = engine.conversation("c1")
    assert conversation is not None
    assert conversation.metadata == {"tenant": "acme"}
    assert conversation.history == [("caller", "hello"), ("bot", "First."), ("caller", "fail")]


def test_as_engine_refuses_what_is_neither() -> None:
    with pytest.raises(voicegate.ConfigError, match="reply function or a DialogueEngine"):
        voicegate.as_engine(42)  # type: ignore[arg-type]


def test_init_writes_a_starter_project_that_validates(tmp_path: Path) -> None:
    target = tmp_path / "mybank"
    assert main(["init", str(target)]) == 0
    assert (target / "config" / "voicegate.yml").is_file()
    assert not list(target.rglob("__pycache__"))
    assert main(["validate", str(target / "config" / "agent")]) == 0
    with pytest.raises(voicegate.ConfigError, match="not an empty directory"):
        init_project(target)


def test_importing_voicegate_loads_nothing_heavy() -> None:
    code = "import sys, voicegate; print(sorted(m for m in sys.modules if m.startswith('voice')))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "['voicegate']"


def test_serve_outside_a_project_runs_the_packaged_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser("serve").parse_args(["serve"])
    settings = ServePlan.from_args(args, build_runner).settings()
    assert settings.engine.project_dir == demo_root() / "agent"
    assert settings.engine.llm == f"scripted:{demo_root() / 'agent' / 'conversation.yml'}"
    assert (settings.engine.project_dir / "agent.yml").is_file()
    # A settings file of the user's is taken as written: no demo in place of their project.
    mine = tmp_path / "voicegate.yml"
    mine.write_text("server:\n  port: 0\n", encoding="utf-8")
    args = build_parser("serve").parse_args(["serve", "--config", str(mine)])
    assert ServePlan.from_args(args, build_runner).settings().engine.project_dir == DEMO_PROJECT
    assert voicegate.load_settings(mine).engine.project_dir == DEMO_PROJECT
