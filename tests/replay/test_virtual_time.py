"""Replays on virtual time (issue 19): the same timeline at every speed, run after run.

The loop's clock jumps to the next timer only when nothing can run; off-loop work stops it
and is charged a modelled latency (voicegate/clock/virtual.py, docs/replay.md).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import shutil
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.replay.replay_kit import AUDIO, CALLS
from tests.server.test_workers import serving, write_config
from voicegate.audio.wav import read_wav
from voicegate.callers.scenario import load_scenario
from voicegate.callers.script import CallerScript, Cue
from voicegate.cli.main import main
from voicegate.cli.replaying import (
    ScenarioRun,
    new_caller,
    parse_latency,
    replay_remote,
    run_scenario,
)
from voicegate.clock.virtual import (
    LatencyModel,
    VirtualTimeLoop,
    charged,
    offloaded,
    real_time,
    run_virtual,
)
from voicegate.errors import ConfigError

SLOW_BANK = CALLS.parent / "projects" / "slow_bank"
POOL = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="test-virtual")


def test_time_jumps_to_the_next_timer_when_nothing_can_run() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeLoop)
        await asyncio.sleep(3600)
        async with asyncio.timeout(5):
            await asyncio.sleep(1.25)
        return loop.time()

    assert run_virtual(main()) == 3601.25


def test_in_real_time_a_process_gets_its_grace_period_on_the_wall_clock() -> None:
    """A child that exits 0.3 s after it starts outlives a 2 s timeout at full speed (the
    timeout is virtual), and is seen to exit within it in ``real_time()`` (MCP shutdown)."""

    async def exits_within_timeout(paced: bool) -> bool:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import time; time.sleep(0.3)"
        )
        exited = asyncio.ensure_future(child.wait())
        if paced:
            with real_time():
                done, _ = await asyncio.wait({exited}, timeout=2)
        else:
            done, _ = await asyncio.wait({exited}, timeout=2)
        await exited
        return bool(done)

    assert run_virtual(exits_within_timeout(paced=True)) is True
    assert run_virtual(exits_within_timeout(paced=False)) is False


def test_a_thread_job_stops_time_and_lands_its_modelled_latency_later() -> None:
    release = threading.Event()
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            await asyncio.sleep(0.02)
            ticks.append(asyncio.get_running_loop().time())

    async def main() -> tuple[str, float, int]:
        async with asyncio.TaskGroup() as tasks:
            ticking = tasks.create_task(ticker())
            await asyncio.sleep(0.01)
            job = POOL.submit(lambda: (release.wait(5), "decoded")[1])
            # The job waits for another thread: the ticker must not run meanwhile.
            threading.Timer(0.05, release.set).start()
            ticks_while_held = len(ticks)
            result = await offloaded(job, "whisper")
            ticking.cancel()
        return result, asyncio.get_running_loop().time(), ticks_while_held

    result, landed, before = run_virtual(main(), latency=LatencyModel({"whisper": 360}))
    assert (result, before) == ("decoded", 0)
    assert landed == pytest.approx(0.37)  # started at 10 ms, charged 360 ms
    assert len(ticks) == 18  # 20 ms ticks up to 370 ms: time only ran in media


def test_a_polled_future_is_done_at_its_modelled_time() -> None:
    async def main() -> list[tuple[float, bool]]:
        loop = asyncio.get_running_loop()
        score = charged(POOL.submit(lambda: 0.9), "smart-turn")
        seen = []
        for _ in range(6):
            await asyncio.sleep(0.02)
            seen.append((round(loop.time(), 3), score.done()))
        assert score.result() == 0.9
        return seen

    seen = run_virtual(main(), latency=LatencyModel({"smart-turn": 80}))
    assert [done for _, done in seen] == [False, False, False, True, True, True]


def test_latency_overrides_name_known_components() -> None:
    assert parse_latency(["whisper=500"]).charge_s("whisper") == 0.5
    assert parse_latency([]).charge_s("tone") == 0
    with pytest.raises(ConfigError, match="COMPONENT=MS"):
        parse_latency(["warp=1"])


def timeline(run: ScenarioRun) -> list[str]:
    """The gateway's records as JSON lines, without the call id (fresh every run)."""
    return [
        json.dumps({k: v for k, v in r.items() if k != "call_id"}, sort_keys=True)
        for r in run.records
    ]


def test_a_tool_awaiting_1_5_s_is_barged_in_at_the_same_media_time_at_every_speed(
    tmp_path: Path,
) -> None:
    # slow_bank's tool awaits its backend for 1.5 s; "please try again" comes at 2.5 s. The
    # call is cut at 3.5 s of media so the run at real speed stays short.
    scenario = replace(load_scenario(CALLS / "bargein_while_thinking.yml"), max_ms=3500)
    runs = {
        speed: run_scenario(scenario, speed=speed, workdir=tmp_path / str(speed), virtual=True)
        for speed in (1.0, 3.0, math.inf)
    }
    again = run_scenario(scenario, speed=math.inf, workdir=tmp_path / "again", virtual=True)
    fast = runs[math.inf]
    for run in (*runs.values(), again):
        assert timeline(run) == timeline(fast)
    events = [r["event"] for r in fast.records]
    assert "interruption" in events
    assert "tool_cancelled" in events
    started = next(r for r in fast.records if r["event"] == "tool_started")
    cancelled = next(r for r in fast.records if r["event"] == "tool_cancelled")
    assert cancelled["t_ms"] - started["t_ms"] < 1500  # cut while it awaited its backend


def test_every_caller_gets_a_fresh_call_id() -> None:
    script = CallerScript([], 8000)
    telephones = ("twilio", "telnyx", "plivo", "vonage", "exotel", "jambonz", "freeswitch")
    for provider in (*telephones, "genesys"):
        first, second = (new_caller(provider, script).call_id for _ in range(2))
        assert first != second
    assert new_caller("twilio", script).call_id.startswith("CA")


async def test_five_replays_at_once_against_one_serve_all_end_normally(tmp_path: Path) -> None:
    config = write_config(tmp_path, capacity=10)
    project = shutil.copytree(SLOW_BANK, tmp_path / "project")  # its tool writes a record
    lighter = (  # a project without MCP servers and no end-of-turn model: a quicker start
        f"engine:\n  project_dir: {project}\n  llm: scripted:{project / 'conversation.yml'}\n"
        "turns:\n  end_of_turn:\n    model: none\nlimits:\n  media_max_speed: 4.0\n"
    )
    config.write_text(config.read_text("utf-8") + lighter, "utf-8")
    speech = read_wav(AUDIO / "synth" / "festival" / "balance_8k.wav").samples

    async def one_replay(url: str) -> Any:
        script = CallerScript([Cue(speech, at_ms=200, label="balance")], 8000)
        caller = new_caller("twilio", script, quiet_ms=500)
        return await replay_remote(url, caller, script, speed=4.0, max_ms=20_000)

    async with (
        serving("--config", str(config), "--workers", "1") as server,
        asyncio.TaskGroup() as tasks,
    ):
        replays = [tasks.create_task(one_replay(server.stream_url)) for _ in range(5)]
    results = [replay.result() for replay in replays]
    assert len({result.caller.call_id for result in results}) == 5
    for result in results:
        assert result.close_code == 1000, result.records[-1]
        assert result.caller.bot_started_ms, "every call was answered"


def test_max_speed_needs_virtual_time(capsys: pytest.CaptureFixture[str]) -> None:
    wav = str(AUDIO / "synth" / "festival" / "balance_8k.wav")
    assert main(["replay", wav, "--speed", "max", "--wall-clock"]) == 1
    assert "--speed max needs virtual time" in capsys.readouterr().err
    assert main(["replay", wav, "--speed", "max", "--url", "ws://127.0.0.1:1"]) == 1
    assert main(["replay", wav, "--latency-ms", "whisper=fast"]) == 1
    assert "COMPONENT=MS" in capsys.readouterr().err
