"""N concurrent Twilio callers at real-time pace against one gateway, on loopback.

The gateway runs in a child process (the demo project, scripted model and STT, tone TTS from
fixtures/config/deterministic.yml, the default combined VAD) so its CPU time and event-loop
lag are measured apart from the callers.
Each caller streams 20 ms μ-law frames at real time, says "check my balance" once, hears the
bot's answer (marks echoed as played) and hangs up. For each N the script prints:

- ``cpu_per_call_pct``: gateway CPU time / (N x call seconds), as % of one core;
- ``loop_lag_ms``: p50/p99/max of the gateway event loop's lateness, sampled every 10 ms;
- ``late_frames_pct``: caller ticks sent more than one frame (20 ms) behind schedule;
- ``unprocessed_ms``: per call, media the caller sent minus media the gateway processed by
  the time the call ended (p50/max), i.e. frames late or dropped inside the gateway;
- ``calls_ok``: calls that ended with close code 1000.

Bounded: each level runs one ~8 s call per caller, starts staggered over 2 s.

    python bench/calls.py [--levels 50,200,500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CALL_MS = 8000
STAGGER_S = 2.0


def percentile(values: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# --- the gateway child process -----------------------------------------------------------------


async def serve_child(data_dir: Path) -> None:
    """Run a gateway; answer `start`/`stop` lines on stdin with measurements on stdout."""
    from voicegate.cli import wiring
    from voicegate.cli.serve_command import read_settings
    from voicegate.gateway.lifecycle import Gateway

    settings = read_settings(ROOT / "fixtures" / "config" / "deterministic.yml")
    settings = replace(settings, store=replace(settings.store, data_dir=data_dir))
    runner = wiring.build_runner(settings)
    options = replace(settings.gateway_options(), port=0, capacity=2000)
    lags: list[float] = []
    async with Gateway(runner, options) as gateway, asyncio.TaskGroup() as tasks:
        print(json.dumps({"port": gateway.port}), flush=True)
        monitor = tasks.create_task(_watch_loop(lags))
        await _answer_commands(runner, lags)
        monitor.cancel()


async def _watch_loop(lags: list[float]) -> None:
    while True:
        before = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append((time.perf_counter() - before - 0.01) * 1000)


async def _answer_commands(runner: Any, lags: list[float]) -> None:
    loop = asyncio.get_running_loop()
    cpu_start = 0.0
    while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
        if line == "start":
            lags.clear()
            cpu_start = _cpu_seconds()
        elif line.startswith("stop "):
            call_ids = json.loads(line.removeprefix("stop "))
            processed = {cid: _processed_ms(runner, cid) for cid in call_ids}
            report = {"cpu_s": _cpu_seconds() - cpu_start, "lags": lags, "processed": processed}
            print(json.dumps(report), flush=True)


def _processed_ms(runner: Any, call_id: str) -> int:
    timeline = runner.timeline(call_id)
    return int(timeline.records[-1]["t_ms"]) if timeline and timeline.records else 0


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- the callers (this process) ----------------------------------------------------------------


async def one_call(url: str, index: int, late: list[int]) -> tuple[str, int, int | None]:
    """One caller at real-time pace; (call id, media ms sent, close code)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from voicegate.audio.wav import read_wav
    from voicegate.callers.script import CallerScript, Cue
    from voicegate.callers.twilio import TwilioCaller

    audio = read_wav(ROOT / "fixtures/audio/synth/festival/balance_8k.wav").samples
    call_sid = f"CA{index:032d}"
    script = CallerScript([Cue(audio, at_ms=400)], 8000, tail_ms=CALL_MS)
    caller = TwilioCaller(script, call_sid=call_sid, stream_sid=f"MZ{index:032d}")
    async with connect(url) as socket:
        for message in caller.opening():
            await socket.send(message)

        async def listen() -> None:
            try:
                async for message in socket:
                    for answer in caller.receive(message):
                        await socket.send(answer)
            except ConnectionClosed:
                pass

        async with asyncio.TaskGroup() as tasks:
            listener = tasks.create_task(listen())
            started = time.monotonic()
            while caller.now_ms < CALL_MS and not listener.done():
                behind = (time.monotonic() - started) * 1000 - caller.now_ms
                late.append(1 if behind > 20 else 0)
                for message in caller.tick():
                    await socket.send(message)
                await asyncio.sleep(max(0.0, started + caller.now_ms / 1000 - time.monotonic()))
            await socket.send(caller.closing())
            await socket.close()
        return call_sid, caller.now_ms, socket.close_code


async def run_level(url: str, calls: int) -> tuple[list[tuple[str, int, int | None]], list[int]]:
    """Start ``calls`` callers staggered over a few seconds and wait for them all."""
    late: list[int] = []

    async def staggered(index: int) -> tuple[str, int, int | None]:
        await asyncio.sleep(STAGGER_S * index / calls)
        return await one_call(url, index, late)

    results = await asyncio.gather(*(staggered(i) for i in range(calls)), return_exceptions=True)
    return [r for r in results if isinstance(r, tuple)], late


async def measure(levels: list[int]) -> dict[str, Any]:
    """Run every level against one gateway child; the JSON report."""
    with tempfile.TemporaryDirectory() as data_dir:
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--child", data_dir,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=ROOT,
        )  # fmt: skip
        assert child.stdin is not None
        assert child.stdout is not None
        port = json.loads(await child.stdout.readline())["port"]
        url = f"ws://127.0.0.1:{port}/twilio"
        report = {}
        for calls in levels:
            child.stdin.write(b"start\n")
            wall = time.monotonic()
            results, late = await run_level(url, calls)
            wall = time.monotonic() - wall
            ids = [call_id for call_id, _, _ in results]
            child.stdin.write(f"stop {json.dumps(ids)}\n".encode())
            stats = json.loads(await child.stdout.readline())
            report[str(calls)] = summarise(calls, results, late, stats, wall)
        child.stdin.close()
        await child.wait()
    return report


def summarise(
    calls: int,
    results: list[tuple[str, int, int | None]],
    late: list[int],
    stats: dict[str, Any],
    wall_s: float,
) -> dict[str, Any]:
    """One level's figures."""
    unprocessed = [sent - stats["processed"].get(cid, 0) for cid, sent, _ in results]
    lags = stats["lags"]
    return {
        "calls_started": calls,
        "calls_ok": sum(1 for _, _, code in results if code == 1000),
        "wall_s": round(wall_s, 1),
        "cpu_per_call_pct": round(100 * stats["cpu_s"] / (calls * CALL_MS / 1000), 2),
        "loop_lag_ms": {
            "p50": round(percentile(lags, 0.5), 2),
            "p99": round(percentile(lags, 0.99), 2),
            "max": round(max(lags, default=0.0), 2),
        },
        "late_frames_pct": round(100 * statistics.fmean(late), 2) if late else 0.0,
        "unprocessed_ms": {
            "p50": percentile([float(u) for u in unprocessed], 0.5),
            "max": max(unprocessed, default=0),
        },
    }


def main() -> None:
    """Print the JSON report (or run as the gateway child)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="50,200,500")
    parser.add_argument("--child", metavar="DATA_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        asyncio.run(serve_child(Path(args.child)))
        return
    levels = [int(n) for n in args.levels.split(",")]
    report = {
        "benchmark": "calls",
        "call_ms": CALL_MS,
        "levels": asyncio.run(measure(levels)),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
