"""What the end-of-turn model (Smart Turn v3.2) costs: CPU per inference and per call-second.

Issue 14 / issue 12. Process CPU time (``time.process_time``: the bench runs nothing else, so
it is the work's own CPU including any helper threads, e.g. BLAS), not wall time, so other
work on the shared machine distorts it little; every figure is the median of ``--repeat``.

- ``per_inference_cpu_ms``: features (resample to 16 kHz, log-mel of the 8 s window) and the
  ONNX run, alone and per item in a batch of 2, 4 and 8 (batching was considered for
  inferences that wait together).
- ``per_call``: every labelled human recording (fixtures/audio/onsets.tsv, 37) as one caller
  turn (600 ms of silence, the recording, 1.5 s of silence) through the gateway's VAD at 8 kHz
  and a call's ``TurnTracker``, with the model run at once on each pause it is asked about.
  ``every_pause`` is the behaviour before (every pause scored); ``gated`` the shipped settings
  (no inference for speech shorter than ``min_speech_ms``). Reported: inferences per turn and
  model CPU in ms per call-second of media. The transcript rule (a hold word cancels an
  inference still waiting) needs a recogniser and is not counted here, so ``gated`` is an
  upper bound.
- ``cap_ms_per_worker_s``: the most the model may take from a worker process under load
  (``cpu_share``): beyond it pauses are shed to the silence timeout.
- ``under_load_one_worker``: pauses offered to one worker's model at 1, 3 and 6 per second
  (100 calls on 2 workers, each speaking every ~10 s, offer ~5) with the shipped bounds:
  how many were scored and shed, and the process CPU per second of wall time (the model
  dominates it). Before the bounds every offered pause was scored (6 x 85 = ~510 ms/s).

    python bench/smart_turn_cost.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from turn_taking import RATE, labelled_recordings

from voicegate.audio.pcm import Samples
from voicegate.audio.resample import resample_all
from voicegate.gateway.media import MediaFactory
from voicegate.turns.features import last_window, log_mel
from voicegate.turns.settings import EchoGateSettings, EndOfTurnSettings, TurnSettings
from voicegate.turns.smart_turn import SmartTurnModel, bundled_model_path
from voicegate.turns.tracker import TurnTracker
from voicegate.types import AudioEncoding, AudioFormat
from voicegate.vad.settings import VadSettings

WIRE = AudioFormat(AudioEncoding.PCMU, RATE)


def cpu_ms(work: Any, runs: int) -> float:
    """Median process CPU (ms) of ``work()`` over ``runs`` calls."""
    spent = []
    for _ in range(runs):
        started = time.process_time()
        work()
        spent.append((time.process_time() - started) * 1000)
    return statistics.median(spent)


def per_inference(model: SmartTurnModel, repeat: int) -> dict[str, Any]:
    """CPU of one inference, split into its parts, and per item in batches."""
    rng = np.random.default_rng(14)
    audio8 = (rng.standard_normal(RATE * 3) * 3000).astype(np.int16)
    audio16 = resample_all(audio8, RATE, 16000)
    window = last_window((audio16.astype(np.float32) / 32768.0).astype(np.float32))
    features = log_mel(window)[None, :, :]
    session = model._session  # the bench measures the run itself, batched or not
    out: dict[str, Any] = {
        "resample_8k_to_16k": cpu_ms(lambda: resample_all(audio8, RATE, 16000), repeat * 4),
        "log_mel": cpu_ms(lambda: log_mel(window), repeat * 4),
        "whole (3 s of 8 kHz audio)": cpu_ms(lambda: model.probability(audio8, RATE), repeat * 2),
    }
    for batch in (1, 2, 4, 8):
        stacked = np.repeat(features, batch, axis=0)
        run = cpu_ms(lambda: session.run(None, {"input_features": stacked}), repeat)  # noqa: B023
        out[f"onnx_per_item_batch_{batch}"] = run / batch
    return {k: round(v, 1) for k, v in out.items()}


class CountingModel:
    """Runs the real model at once on the caller's thread, counting inferences and CPU."""

    def __init__(self, model: SmartTurnModel) -> None:
        self._model = model
        self.inferences = 0
        self.cpu_s = 0.0

    def submit(self, samples: Samples, sample_rate: int) -> Future[float] | None:
        started = time.thread_time()
        future: Future[float] = Future()
        future.set_result(self._model.probability(samples, sample_rate))
        self.cpu_s += time.thread_time() - started
        self.inferences += 1
        return future


async def one_turn(samples: Samples, eot: EndOfTurnSettings, model: CountingModel) -> float:
    """Push one caller turn through the VAD and a tracker; its length in seconds."""
    vad = replace(VadSettings(), stop_ms=eot.ask_after_ms)
    media = MediaFactory(sample_rate=16000, vad=vad).open(WIRE, WIRE)
    settings = TurnSettings(eot, EchoGateSettings(enabled=False))
    tracker = TurnTracker(settings, model, sample_rate=media.sample_rate, wire=WIRE)
    call = np.concatenate(
        [np.zeros(RATE * 6 // 10, np.int16), samples, np.zeros(RATE * 3 // 2, np.int16)]
    )
    frame = RATE // 50
    now = 0
    for start in range(0, len(call) - frame + 1, frame):
        chunk = call[start : start + frame]
        now += 20
        tracker.push(chunk, now, await media.detect(chunk))
    return now / 1000


def per_call(model: SmartTurnModel) -> dict[str, Any]:
    """Inferences per caller turn and model CPU per call-second, before and after gating."""
    recordings = labelled_recordings()
    variants = {
        "every_pause": EndOfTurnSettings(min_speech_ms=0),
        "gated": EndOfTurnSettings(),
    }
    report = {}
    for name, eot in variants.items():
        counting = CountingModel(model)
        seconds = sum(asyncio.run(one_turn(rec.samples, eot, counting)) for rec in recordings)
        report[name] = {
            "turns": len(recordings),
            "call_seconds": round(seconds, 1),
            "inferences": counting.inferences,
            "inferences_per_turn": round(counting.inferences / len(recordings), 2),
            "model_cpu_ms_per_call_s": round(counting.cpu_s * 1000 / seconds, 1),
        }
    return report


def under_load(rates: tuple[float, ...], seconds: float) -> dict[str, Any]:
    """Pauses offered at ``rate`` per second to one worker's model (shipped bounds): how many
    are scored and shed, and the model's CPU per second of wall time."""
    defaults = EndOfTurnSettings()
    audio = (np.random.default_rng(7).standard_normal(RATE * 3) * 3000).astype(np.int16)
    report = {}
    for rate in rates:
        model = SmartTurnModel(
            bundled_model_path(),
            workers=defaults.workers,
            max_queue=defaults.max_queue,
            cpu_share=defaults.cpu_share,
        )
        futures: list[Future[float]] = []
        shed = offered = 0
        cpu_start, wall_start = time.process_time(), time.monotonic()
        while (elapsed := time.monotonic() - wall_start) < seconds:
            if offered < elapsed * rate:
                offered += 1
                future = model.submit(audio, RATE)
                shed += future is None
                futures.extend([] if future is None else [future])
            time.sleep(0.005)  # the bench's own pacing of the offered pauses
        for future in futures:
            future.result()
        cpu = time.process_time() - cpu_start
        wall = time.monotonic() - wall_start
        model.close()
        report[f"{rate:g}_pauses_per_s"] = {
            "offered": offered,
            "scored": len(futures),
            "shed": shed,
            "model_cpu_ms_per_s": round(cpu * 1000 / wall, 1),
        }
    return report


def main() -> None:
    """Print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--load-seconds", type=float, default=6.0)
    args = parser.parse_args()
    model = SmartTurnModel(bundled_model_path())
    try:
        defaults = EndOfTurnSettings()
        out = {
            "benchmark": "smart_turn_cost",
            "per_inference_cpu_ms": per_inference(model, args.repeat),
            "per_call": per_call(model),
            "cap_ms_per_worker_s": round(defaults.cpu_share * 1000),
            "under_load_one_worker": under_load((1.0, 3.0, 6.0), args.load_seconds),
            "settings": {
                "min_speech_ms": defaults.min_speech_ms,
                "max_queue": defaults.max_queue,
                "cpu_share": defaults.cpu_share,
                "workers": defaults.workers,
            },
        }
    finally:
        model.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
