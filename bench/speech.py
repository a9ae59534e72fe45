"""Embedded speech: Whisper's speed, latency, memory and concurrency; espeak-ng's first chunk.

Figures (design §9: speed is measured here, never asserted in tests):

- ``stt.real_time_factor``: decode wall time / audio length, over every human recording
  (fixtures/audio/human, 16 kHz), one utterance at a time.
- ``stt.end_of_speech_to_final_ms``: from ``speech_ended`` to the final transcript, with the
  utterance pushed frame by frame at real speed and interims on (as in a call: an interim may
  still be decoding when the caller stops).
- ``stt.model_rss_mb``: resident memory added by loading the model and one decode.
- ``stt.concurrency``: N callers stop speaking at the same moment (N = 1, 2, 4, 8); the mean
  and worst end-of-speech -> final latency, and the largest N whose mean latency stays under
  twice the single-caller latency, for each decode-pool shape (workers x threads).
- ``stt.window``: the short encoder window against Whisper's 30 s one (speech.whisper_window_s),
  over every transcribed fixture (human and synthetic) on the phone path (8 kHz): word error
  rate (lower case, punctuation dropped; digits count as errors against spelled-out labels on
  both sides) and the median decode time, one core.
- ``tts.first_chunk_ms``: from ``synthesize()`` to the first audio chunk (16 kHz), and
  ``tts.real_time_factor``.

    python bench/speech.py [--paced 6]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.audio.resample import resample_all
from voicegate.audio.wav import read_wav
from voicegate.cli.engines import one_blas_thread
from voicegate.speech.embedded.espeak_lib import espeak_library
from voicegate.speech.embedded.espeak_tts import EspeakTextToSpeech
from voicegate.speech.embedded.whisper_model import WhisperOptions, WhisperRecognizer
from voicegate.speech.embedded.whisper_stt import StreamOptions, WhisperSpeechToText
from voicegate.speech.embedded.whisper_window import DEFAULT_WINDOW_S

ROOT = Path(__file__).resolve().parent.parent
HUMAN = ROOT / "fixtures" / "audio" / "human"
RATE = 16000
FRAME = RATE // 50  # 20 ms
PHRASES = [
    "Hello, this is Example Bank. Sure, let me look at your account.",
    "Your balance is 1250.75 dollars. Anything else?",
    "Thank you for calling Example Bank. Goodbye!",
]


def recordings() -> list[Samples]:
    """Every human speech recording at 16 kHz (8 kHz ones resampled)."""
    found = []
    for path in sorted(HUMAN.rglob("*.wav")):
        if "Noise_" in path.name or path.name.endswith("_8k.wav"):
            continue
        audio = read_wav(path)
        samples = audio.samples
        if audio.sample_rate != RATE:
            samples = resample_all(samples, audio.sample_rate, RATE)
        found.append(samples)
    return found


def rss_mb() -> float:
    """This process's resident memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def real_time_factor(recognizer: WhisperRecognizer, audio: list[Samples]) -> float:
    """Decode time over audio time, one utterance after another."""
    started = time.perf_counter()
    for samples in audio:
        recognizer.transcribe(samples, RATE)
    return (time.perf_counter() - started) / (sum(len(s) for s in audio) / RATE)


def labelled_phone_audio() -> list[tuple[str, Samples]]:
    """Every transcribed fixture as a phone carries it (8 kHz, back to 16 kHz), with its label."""
    table = ROOT / "fixtures" / "audio" / "transcripts.tsv"
    found = []
    with table.open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            audio = read_wav(ROOT / "fixtures" / "audio" / row["path"])
            phone = resample_all(audio.samples, audio.sample_rate, 8000)
            found.append((row["transcript"], resample_all(phone, 8000, RATE)))
    return found


def word_errors(label: str, heard: str) -> int:
    """Word-level edit distance after lower-casing and dropping punctuation."""
    want, got = (re.sub(r"[^a-z0-9' ]", " ", text.lower()).split() for text in (label, heard))
    row = list(range(len(got) + 1))
    for i, word in enumerate(want, start=1):
        previous, row[0] = row[:], i
        for j, other in enumerate(got, start=1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (word != other))
    return row[-1]


def window_figures() -> dict[str, Any]:
    """Word error rate and decode time of each encoder window (s) on the phone path."""
    audio = labelled_phone_audio()
    words = sum(len(label.split()) for label, _ in audio)
    figures = {}
    for window_s in (30.0, DEFAULT_WINDOW_S):
        recognizer = WhisperRecognizer(WhisperOptions(workers=1, window_s=window_s))
        recognizer.warm_up()
        errors, times = 0, []
        for label, samples in audio:
            started = time.perf_counter()
            heard = recognizer.transcribe(samples, RATE)
            times.append((time.perf_counter() - started) * 1000)
            errors += word_errors(label, heard)
        figures[f"{window_s:g}s"] = {
            "word_error_rate": round(errors / words, 3),
            "decode_ms_median": round(statistics.median(times)),
        }
    return {"utterances": len(audio), "words": words, "by_window": figures}


async def final_latency(stt: WhisperSpeechToText, samples: Samples, *, paced: bool) -> float:
    """Milliseconds from ``speech_ended`` to the final; frames pushed at real speed if paced."""
    stream = stt.open(RATE)
    results = stream.results()
    reader = asyncio.ensure_future(_until_final(results))
    stream.speech_started(0)
    for n, start in enumerate(range(0, len(samples) - FRAME + 1, FRAME), start=1):
        stream.push(samples[start : start + FRAME], n * 20)
        if paced:
            await asyncio.sleep(0.02)
    ended = time.perf_counter()
    stream.speech_ended(len(samples) * 1000 // RATE)
    await reader
    latency = (time.perf_counter() - ended) * 1000
    await stream.aclose()
    return latency


async def _until_final(results: Any) -> None:
    async for result in results:
        if result.final:
            return


async def concurrent_latencies(stt: WhisperSpeechToText, samples: Samples, n: int) -> list[float]:
    """N callers whose utterances end at the same moment (audio pushed unpaced)."""
    return list(await asyncio.gather(*(final_latency(stt, samples, paced=False) for _ in range(n))))


async def concurrency(options: WhisperOptions, samples: Samples) -> dict[str, Any]:
    """Latency at 1, 2, 4, 8 concurrent utterances for one decode-pool shape."""
    recognizer = WhisperRecognizer(options)
    recognizer.warm_up()
    stt = WhisperSpeechToText(recognizer, StreamOptions(interim_interval_ms=0))
    rows, base, sustained = [], 0.0, 0
    for n in (1, 2, 4, 8):
        runs = [await concurrent_latencies(stt, samples, n) for _ in range(3)]
        mean = statistics.median(statistics.mean(run) for run in runs)
        worst = max(max(run) for run in runs)
        base = base or mean
        if mean < 2 * base:
            sustained = n
        rows.append({"utterances": n, "mean_ms": round(mean), "worst_ms": round(worst)})
    stt.close()
    return {
        "workers": options.workers,
        "threads_per_worker": options.threads_per_worker,
        "by_count": rows,
        "before_latency_doubles": sustained,
    }


async def tts_figures() -> dict[str, Any]:
    """Time to the first chunk and real-time factor of espeak-ng at 16 kHz."""
    tts = EspeakTextToSpeech(espeak_library(), RATE)
    firsts, total_time, total_audio = [], 0.0, 0
    for _ in range(5):
        for phrase in PHRASES:
            started = time.perf_counter()
            chunks: list[Samples] = []
            async for chunk in tts.synthesize(phrase):
                if not chunks:
                    firsts.append((time.perf_counter() - started) * 1000)
                chunks.append(chunk)
            total_time += time.perf_counter() - started
            total_audio += sum(len(c) for c in chunks)
    return {
        "first_chunk_ms": {
            "median": round(statistics.median(firsts), 2),
            "max": round(max(firsts), 2),
        },
        "real_time_factor": round(total_time / (total_audio / RATE), 4),
    }


async def stt_figures(paced: int) -> dict[str, Any]:
    """Every STT figure."""
    audio = recordings()
    before = rss_mb()
    recognizer = WhisperRecognizer()
    recognizer.warm_up()
    model_mb = rss_mb() - before
    rtf = real_time_factor(recognizer, audio)
    stt = WhisperSpeechToText(recognizer)
    longest = sorted(audio, key=len)[-paced:]
    latencies = [await final_latency(stt, samples, paced=True) for samples in longest]
    stt.close()
    sample = max(audio, key=len)
    pools = [WhisperOptions(workers=1, threads_per_worker=2)]
    pools.append(WhisperOptions(workers=2, threads_per_worker=1))
    return {
        "model": str(recognizer.model_dir),
        "real_time_factor": round(rtf, 3),
        "end_of_speech_to_final_ms": {
            "median": round(statistics.median(latencies)),
            "max": round(max(latencies)),
            "utterances": len(latencies),
            "interim_interval_ms": StreamOptions().interim_interval_ms,
        },
        "model_rss_mb": round(model_mb, 1),
        "window": window_figures(),
        "concurrency": {
            "utterance_s": round(len(sample) / RATE, 2),
            "pools": [await concurrency(options, sample) for options in pools],
        },
    }


async def run(paced: int) -> dict[str, Any]:
    """The whole report."""
    return {"stt": await stt_figures(paced), "tts": await tts_figures()}


def main() -> None:
    """Print the report as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--paced", type=int, default=6, help="utterances pushed at real speed (default 6)"
    )
    args = parser.parse_args()
    with one_blas_thread():  # as the gateway runs its decodes (cli/wiring.py open_runner)
        print(json.dumps(asyncio.run(run(args.paced)), indent=2))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
