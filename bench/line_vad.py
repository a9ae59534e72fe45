"""The VAD alone on degraded phone lines: every labelled recording, no gateway, no clock.

The offline half of bench/line_conditions.py: each of the 37 labelled recordings
(fixtures/audio/onsets.tsv) after 600 ms of line silence and before 1 s of it, through a
condition of bench/line_effects.py and G.711 (μ-law, or A-law for ``alaw`` conditions), into
the shipped VAD with the gateway's pause length (``turns.end_of_turn.ask_after_ms``, 60 ms,
which replaces ``vad.stop_ms`` when a model is configured). Per condition: recordings whose
speech was never detected, ms from the labelled onset to detection (p50), pauses the VAD
found inside the labelled speech (each one asks the end-of-turn model), starts outside the
speech (false), and where the last segment ended against the labelled offset (p50).

Deterministic (seeded effects, no wall clock), a few seconds of CPU per condition.

    python bench/line_vad.py [--conditions clean,quiet_-45dBFS,...] [--preroll-ms 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from line_conditions import conditions
from line_effects import Condition, LinePath, speech_rms, talker
from turn_taking import Labelled, labelled_recordings, percentile

import voicegate
from voicegate.audio.g711 import (
    alaw_bytes_to_samples,
    samples_to_alaw_bytes,
    samples_to_ulaw_bytes,
    ulaw_bytes_to_samples,
)
from voicegate.audio.pcm import Samples
from voicegate.cli.serve_command import read_settings
from voicegate.vad import VadSettings
from voicegate.vad.detector import Detector, build_scorer
from voicegate.vad.machine import Phase, SpeechEnded, SpeechStarted

RATE = 8000
LEAD_MS, TAIL_MS = 600, 1000


def line_audio(rec: Labelled, condition: Condition) -> Samples:
    """The recording as the gateway receives it over ``condition``, with line silence around."""
    said = talker(rec.samples, condition, RATE)
    call = np.concatenate(
        [np.zeros(RATE * LEAD_MS // 1000), said, np.zeros(RATE * TAIL_MS // 1000)]
    )
    call = call.astype(np.int16)
    if condition.on_line:
        level = speech_rms(said, rec.onset_ms, rec.offset_ms, RATE)
        path = LinePath(condition, RATE, level, zlib.crc32(rec.name.encode()))
        call = np.concatenate([path.mix(call[i : i + 160]) for i in range(0, len(call) - 159, 160)])
    if condition.wire == "alaw":
        return alaw_bytes_to_samples(samples_to_alaw_bytes(call))
    return ulaw_bytes_to_samples(samples_to_ulaw_bytes(call))


def one(rec: Labelled, condition: Condition, vad: VadSettings) -> dict[str, Any]:
    """The VAD's events on one recording, against its labels."""
    audio = line_audio(rec, condition)
    detector = Detector(build_scorer(RATE, vad), vad)
    events = [e for i in range(0, len(audio) - 159, 160) for e in detector.push(audio[i : i + 160])]
    # Still speaking after the recording's second of line silence: the line's sound held the
    # segment open. Counted, and ended where the stream ends, so end_vs_label shows it (a
    # bare ends[-1] reported an earlier pause instead and hid comfort noise's 1 s hold).
    unended = detector.phase is Phase.SPEAKING
    events = [*events, *detector.finish()]
    onset, offset = LEAD_MS + rec.onset_ms, LEAD_MS + rec.offset_ms
    starts = [e for e in events if isinstance(e, SpeechStarted)]
    inside = [e for e in starts if onset - 300 <= e.onset_ms <= offset]
    ends = [e.end_ms for e in events if isinstance(e, SpeechEnded) and e.end_ms >= onset]
    return {
        "detected_ms": inside[0].detected_ms - onset if inside else None,
        "pauses_inside": sum(1 for end in ends if end < offset - 40),
        "false_starts": len(starts) - len(inside),
        "end_ms": ends[-1] - offset if ends else None,
        "unended": unended,
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One condition over every recording."""
    detected = [r["detected_ms"] for r in rows if r["detected_ms"] is not None]
    ends = [r["end_ms"] for r in rows if r["end_ms"] is not None]
    return {
        "recordings": len(rows),
        "missed": len(rows) - len(detected),
        "detected_ms_p50": percentile(detected, 0.5),
        "pauses_inside_speech": sum(r["pauses_inside"] for r in rows),
        "false_starts": sum(r["false_starts"] for r in rows),
        "end_vs_label_ms_p50": percentile(ends, 0.5),
        "end_vs_label_ms_p90": percentile(ends, 0.9),
        "unended": sum(r["unended"] for r in rows),
    }


def main() -> None:
    """Print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", default="", help="comma-separated names; empty: all")
    parser.add_argument(
        "--preroll-ms", type=int, default=0, help="vad.silero_preroll_ms; 0: shipped"
    )
    args = parser.parse_args()
    settings = read_settings(Path(voicegate.__file__).parent.parent / "config" / "voicegate.yml")
    vad = replace(settings.vad, stop_ms=settings.turns.end_of_turn.ask_after_ms)
    if args.preroll_ms:
        vad = replace(vad, silero_preroll_ms=args.preroll_ms)
    wanted = set(args.conditions.split(",")) if args.conditions else None
    recordings = labelled_recordings()
    out: dict[str, Any] = {"benchmark": "line_vad", "silero_preroll_ms": vad.silero_preroll_ms}
    for condition in conditions():
        if condition.wire == "slin16" or (wanted is not None and condition.name not in wanted):
            continue  # the 16 kHz wire is measured through the gateway only
        out[condition.name] = summary([one(rec, condition, vad) for rec in recordings])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
