"""CPU cost per 20 ms frame of each inbound audio stage, as medians of several runs.

Stages (design §2): Twilio message parse + base64 + μ-law decode; resampling 8 -> 16 kHz;
webrtcvad; Silero; and the combined detector the gateway runs by default. Input is the real
Twilio message sequence in fixtures/wire/twilio (a caller saying "check my balance").
CPU time (``time.process_time_ns``) is used rather than wall time, and each figure is the
median over ``--runs`` passes, because these machines are shared and noisy.

    python bench/audio_path.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from voicegate.audio.g711 import ulaw_bytes_to_samples
from voicegate.audio.pcm import Samples
from voicegate.audio.resample import StreamResampler
from voicegate.codecs import AudioReceived, TwilioCodec
from voicegate.vad.combined import CombinedScorer
from voicegate.vad.settings import VadSettings
from voicegate.vad.silero import SileroScorer
from voicegate.vad.webrtc import WebrtcScorer

ROOT = Path(__file__).resolve().parent.parent
CALL = ROOT / "fixtures" / "wire" / "twilio" / "festival_balance.twilio.jsonl"
REPEAT = 10


Pass = Callable[[], int]


def per_frame_us(prepare: Callable[[], Pass], runs: int) -> dict[str, float]:
    """Median CPU and wall microseconds per frame over ``runs`` passes (setup not timed)."""
    cpu, wall = [], []
    for _ in range(runs):
        run = prepare()
        cpu_start, wall_start = time.process_time_ns(), time.perf_counter_ns()
        frames = run()
        cpu.append((time.process_time_ns() - cpu_start) / 1000 / frames)
        wall.append((time.perf_counter_ns() - wall_start) / 1000 / frames)
    return {
        "cpu_median_us": round(statistics.median(cpu), 2),
        "wall_median_us": round(statistics.median(wall), 2),
        "cpu_min_us": round(min(cpu), 2),
        "cpu_max_us": round(max(cpu), 2),
        "frames": frames,
    }


def parse_and_decode(messages: Sequence[str]) -> Pass:
    """Codec parse (JSON + base64) and μ-law decode of every message of the call."""
    codec = TwilioCodec()

    def run() -> int:
        frames = 0
        for message in messages:
            for event in codec.receive(message):
                if isinstance(event, AudioReceived):
                    ulaw_bytes_to_samples(event.payload)
                    frames += 1
        return frames

    return run


def frames_of(messages: Sequence[str]) -> list[Samples]:
    """The call's 8 kHz frames, decoded once."""
    codec = TwilioCodec()
    events = [e for m in messages for e in codec.receive(m)]
    return [ulaw_bytes_to_samples(e.payload) for e in events if isinstance(e, AudioReceived)]


def resample(frames8k: Sequence[Samples]) -> Pass:
    """Streaming 8 -> 16 kHz resampling, one 20 ms frame at a time."""
    resampler = StreamResampler(8000, 16000)

    def run() -> int:
        for frame in frames8k:
            resampler.push(frame)
        return len(frames8k)

    return run


def score(scorer: Callable[[Samples], object], frames: Sequence[Samples]) -> Pass:
    """One scorer over every frame (built by the caller, outside the timing)."""

    def run() -> int:
        for frame in frames:
            scorer(frame)
        return len(frames)

    return run


def upsampled(frames8k: Sequence[Samples]) -> list[Samples]:
    """The same call at 16 kHz, cut back into 20 ms frames."""
    resampler = StreamResampler(8000, 16000)
    return [resampler.push(frame) for frame in frames8k][1:]


def main() -> None:
    """Print one JSON object with every stage's cost."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    call = CALL.read_text(encoding="utf-8").splitlines()
    # The call ten times over (one start, one stop) so each pass times ~13 s of audio.
    media = [m for m in call if '"media"' in m]
    messages = [call[0], call[1], *(media * REPEAT)]
    frames8k = frames_of(messages)
    frames16k = [f for f in upsampled(frames8k) if len(f) == 320]
    stages = {
        "twilio_parse_base64_ulaw_decode": per_frame_us(lambda: parse_and_decode(messages), runs),
        "resample_8k_to_16k": per_frame_us(lambda: resample(frames8k), runs),
        "webrtcvad_16k": per_frame_us(
            lambda: score(WebrtcScorer(16000).is_speech, frames16k), runs
        ),
        "silero_16k": per_frame_us(lambda: score(SileroScorer(16000).probability, frames16k), runs),
        "combined_detector_16k": per_frame_us(
            lambda: score(CombinedScorer(16000, VadSettings()).evidence, frames16k), runs
        ),
    }
    report = {
        "benchmark": "audio_path",
        "unit": "microseconds per 20 ms frame, CPU and wall (median of runs)",
        "runs": runs,
        "input": str(CALL.relative_to(ROOT)),
        "frame_budget_us": 20_000,
        "stages": stages,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
