"""A soak: N concurrent Twilio callers looping short calls against one gateway; RSS growth.

Issue 15 ("Benches"): the gateway runs in a child process on the deterministic config
(fixtures/config/deterministic.yml); each caller places one ~6 s real-time call after another
(a new CallSid each), says "check my balance", echoes marks and hangs up. Every ``--sample-s``
the child reports its RSS and the calls it has finished. After ``--warmup-min`` the script fits
a line through the samples and prints, as JSON:

- ``rss_mb``: first, after warm-up, and last;
- ``mb_per_call`` and ``mb_per_minute``: the slopes after warm-up (the target is flat: ~0);
- ``calls_ok`` / ``calls_failed``: calls that ended with 1000, and the rest.

    python bench/soak.py [--calls 50] [--minutes 10] [--warmup-min 1] [--sample-s 15]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CALL_MS = 6000
PAGE_MB = 4096 / 2**20


def rss_mb() -> float:
    """This process's resident set size (Linux /proc)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * PAGE_MB


async def serve_child(data_dir: Path) -> None:
    """Run a gateway; answer each `sample` line on stdin with its RSS."""
    from voicegate.cli import wiring
    from voicegate.cli.serve_command import read_settings
    from voicegate.gateway.lifecycle import Gateway

    settings = read_settings(ROOT / "fixtures" / "config" / "deterministic.yml")
    settings = replace(settings, store=replace(settings.store, data_dir=data_dir))
    runner = wiring.build_runner(settings)
    options = replace(settings.gateway_options(), port=0, capacity=2000)
    async with Gateway(runner, options) as gateway:
        print(json.dumps({"port": gateway.port}), flush=True)
        loop = asyncio.get_running_loop()
        while line := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
            if line == "sample":
                print(json.dumps({"rss_mb": rss_mb()}), flush=True)


async def one_call(url: str, call_sid: str) -> int | None:
    """One real-time caller; its close code."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from voicegate.audio.wav import read_wav
    from voicegate.callers.script import CallerScript, Cue
    from voicegate.callers.twilio import TwilioCaller

    audio = read_wav(ROOT / "fixtures/audio/synth/festival/balance_8k.wav").samples
    script = CallerScript([Cue(audio, at_ms=400)], 8000, tail_ms=CALL_MS)
    caller = TwilioCaller(script, call_sid=call_sid, stream_sid="MZ" + call_sid[2:])
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
                for message in caller.tick():
                    await socket.send(message)
                await asyncio.sleep(max(0.0, started + caller.now_ms / 1000 - time.monotonic()))
            await socket.send(caller.closing())
            await socket.close()
        return socket.close_code


async def caller_loop(url: str, index: int, until: float, codes: list[int | None]) -> None:
    """Place calls one after another until ``until`` (monotonic seconds)."""
    number = 0
    while time.monotonic() < until:
        number += 1
        try:
            codes.append(await one_call(url, f"CA{index:016d}{number:016d}"))
        except OSError:
            codes.append(None)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x (0 with fewer than two points)."""
    if len(points) < 2:
        return 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0


async def soak(calls: int, minutes: float, warmup_min: float, sample_s: float) -> dict[str, Any]:
    """Run the soak; the JSON report."""
    with tempfile.TemporaryDirectory() as data_dir:
        child = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--child", data_dir,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=ROOT,
        )  # fmt: skip
        assert child.stdin is not None
        assert child.stdout is not None
        url = f"ws://127.0.0.1:{json.loads(await child.stdout.readline())['port']}/twilio"
        began = time.monotonic()
        until = began + minutes * 60
        codes: list[int | None] = []
        samples: list[tuple[float, int, float]] = []  # minutes, calls done, rss
        async with asyncio.TaskGroup() as tasks:
            for index in range(calls):
                tasks.create_task(caller_loop(url, index, until, codes))
            while time.monotonic() < until:
                await asyncio.sleep(sample_s)
                child.stdin.write(b"sample\n")
                rss = json.loads(await child.stdout.readline())["rss_mb"]
                samples.append(((time.monotonic() - began) / 60, len(codes), rss))
        child.stdin.close()
        await child.wait()
    warm = [s for s in samples if s[0] >= warmup_min] or samples
    return {
        "calls": calls,
        "minutes": minutes,
        "calls_ok": sum(1 for code in codes if code == 1000),
        "calls_failed": sum(1 for code in codes if code != 1000),
        "rss_mb": {
            "first": round(samples[0][2], 1) if samples else None,
            "after_warmup": round(warm[0][2], 1) if warm else None,
            "last": round(samples[-1][2], 1) if samples else None,
        },
        "mb_per_call": round(slope([(done, rss) for _, done, rss in warm]), 4),
        "mb_per_minute": round(slope([(m, rss) for m, _, rss in warm]), 3),
    }


def main() -> int:
    """Parse arguments, run the soak (or the gateway child), print the report."""
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        asyncio.run(serve_child(Path(sys.argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--warmup-min", type=float, default=1.0)
    parser.add_argument("--sample-s", type=float, default=15.0)
    args = parser.parse_args()
    report = asyncio.run(soak(args.calls, args.minutes, args.warmup_min, args.sample_s))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
