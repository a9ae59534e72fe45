"""CPU of starting and ending a call, in process, with the engine on its dialogue thread.

Issue 12: at 300 calls ``bench/calls.py`` measured 13.6 ms of gateway CPU per call-second over
the whole level but 5.2 ms in the steady state; the difference is what a call costs once, at
its start and its end. This bench isolates that cost.

The gateway is built as ``voicegate serve`` builds a worker (``cli.wiring.open_runner``: the
engine on a ``DialoguePlane`` thread, tools on tool loops, the SQLite memory and call-state
stores, metrics) from fixtures/config/deterministic.yml, and driven by bench/media_cost.py's
in-process Twilio fake. ``--calls`` calls run at once, in lock step, three ways:

* ``short``: start, ``--short-frames`` frames of silence, hang up;
* ``long``: start, ``--long-frames`` frames of silence, hang up;
* ``spoken``: as ``long``, with the caller saying one thing at 400 ms (the bot answers).

CPU of all threads is ``process_time``; ``loop`` is the media loop's thread alone. The per-frame
cost of a silent call is (long - short) / (long frames - short frames); a call's fixed cost,
**start + end**, is ``short`` less its frames at that rate; ``first_turn`` is ``spoken`` less
``long`` (the caller's one turn: VAD, STT, the engine's turn, TTS and playout). Medians over
``--runs`` (the machine is shared, so CPU time rather than wall time). JSON on stdout.

    python bench/call_start.py [--calls 50] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import itertools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
from media_cost import CONFIG, ROOT, FakeTwilio, Hooks, OpenGate

from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.wav import read_wav
from voicegate.cli.wiring import open_runner
from voicegate.codecs import TwilioCodec
from voicegate.config.loader import load_settings
from voicegate.config.settings import Settings
from voicegate.gateway.metrics import GatewayMetrics
from voicegate.gateway.session import SessionRunner

SPEECH = ROOT / "fixtures" / "audio" / "human" / "asterisk" / "agent-pass.wav"
SPEECH_AT_MS = 400
FRAME_BYTES = 160


def payloads(frames: int, spoken: bool) -> list[str]:
    """Base64 μ-law frames of a caller: silence, or one utterance at 400 ms."""
    samples = np.zeros(frames * FRAME_BYTES, dtype=np.int16)
    if spoken:
        speech = read_wav(SPEECH).samples
        start = SPEECH_AT_MS * 8
        samples[start : start + len(speech)] = speech[: len(samples) - start]
    ulaw = samples_to_ulaw_bytes(samples)
    return [
        base64.b64encode(ulaw[i : i + FRAME_BYTES]).decode("ascii")
        for i in range(0, len(ulaw), FRAME_BYTES)
    ]


async def calls_at_once(
    runner: SessionRunner, frames: list[str], count: int, ids: Iterator[int]
) -> tuple[int, int]:
    """(process, loop-thread) CPU ns of ``count`` calls run at once to their end."""
    hooks = Hooks()
    fakes = [FakeTwilio(next(ids), frames, hooks) for _ in range(count)]
    gc.collect()
    cpu0, loop0 = time.process_time_ns(), time.thread_time_ns()
    async with asyncio.TaskGroup() as group:
        for fake in fakes:
            group.create_task(runner(fake, TwilioCodec(), OpenGate(fake._index)))
    return time.process_time_ns() - cpu0, time.thread_time_ns() - loop0


async def measure(settings: Settings, args: argparse.Namespace) -> list[dict[str, float]]:
    """Every run's per-call figures (ms)."""
    kinds = {
        "short": payloads(args.short_frames, False),
        "long": payloads(args.long_frames, False),
        "spoken": payloads(args.long_frames, True),
    }
    ids = itertools.count()
    runs: list[dict[str, float]] = []
    async with open_runner(settings, metrics=GatewayMetrics()) as runner:
        await calls_at_once(runner, kinds["spoken"], 2, ids)  # warm-up
        for _ in range(args.runs):
            cost = {
                kind: await calls_at_once(runner, frames, args.calls, ids)
                for kind, frames in kinds.items()
            }
            runs.append(per_call(cost, args))
    return runs


def per_call(cost: dict[str, tuple[int, int]], args: argparse.Namespace) -> dict[str, float]:
    """One run's figures per call, in ms."""
    extra = args.long_frames - args.short_frames
    report: dict[str, float] = {}
    for index, clock in enumerate(("cpu", "loop")):
        short, long, spoken = (cost[kind][index] / args.calls / 1e6 for kind in cost)
        per_frame = (long - short) / extra
        report[f"{clock}_start_end_ms"] = short - per_frame * args.short_frames
        report[f"{clock}_per_call_second_ms"] = per_frame * 50
        report[f"{clock}_first_turn_ms"] = spoken - long
    return report


def main() -> None:
    """Print one JSON object: CPU ms per call start + end, per call-second and first turn."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--short-frames", type=int, default=10)
    parser.add_argument("--long-frames", type=int, default=260)
    args = parser.parse_args()
    os.chdir(ROOT)  # the config's paths (project, caller lines) are relative to the repository
    settings = load_settings(CONFIG)
    with tempfile.TemporaryDirectory() as data:
        unpaced = replace(settings.limits, media_max_speed=1e6, media_burst_ms=10**9)
        settings = replace(
            settings, store=replace(settings.store, data_dir=Path(data)), limits=unpaced
        )
        runs = asyncio.run(measure(settings, args))
    report = {
        "benchmark": "call_start",
        "config": str(CONFIG.relative_to(ROOT)),
        "calls": args.calls,
        "runs": args.runs,
        **{key: round(statistics.median(r[key] for r in runs), 2) for key in runs[0]},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
