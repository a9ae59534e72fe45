"""`voicegate transcribe FILE.wav [--telephone] [--channel C]`: the recogniser's transcript.

A quick check for users and tests. The file (a WAV file at any rate, its channels mixed to
mono or the one ``--channel`` names, or a raw or Twilio JSONL recording as ``replay`` reads
it) is converted to 16 kHz, and the speech the VAD finds in
it is decoded, one stretch at a time, by the same Whisper model ``speech.stt: whisper`` runs,
as a call's utterances are; ``--telephone`` first takes it through the path a phone call
takes: 8 kHz, G.711 μ-law encoded and decoded, then back to 16 kHz.

Only the speech is decoded because Whisper invents words for what holds none: it heard
"you" in ten seconds of silence, and put it before the words of a recording that starts with
30 s of silence. A file without speech prints an empty line, and says so on stderr.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from voicegate.audio.g711 import ulaw_decode, ulaw_encode
from voicegate.audio.pcm import Samples, samples_for_ms
from voicegate.audio.resample import SUPPORTED_RATES, resample_all
from voicegate.cli.channel_option import add_channel_option, read_input
from voicegate.cli.engines import load_whisper, one_blas_thread
from voicegate.speech.embedded.whisper_model import (
    BUNDLED_MODEL,
    WHISPER_RATE,
    WhisperRecognizer,
)
from voicegate.vad import VadSettings, detect_segments

TELEPHONE_RATE = 8000
#: Audio kept either side of a stretch of speech: the VAD's edges clip soft word ends.
SPEECH_PAD_MS = 300
#: Stretches closer than this are decoded together, so a sentence is not cut at its pauses
#: and fewer decodes run (each costs about one encoder window, however short the speech) ...
JOIN_GAP_MS = 2000
#: ... as long as the whole fits the recogniser's short window with its trailing silence
#: (speech/embedded/whisper_window.py: 10 s less 3 s), the cheap decode.
JOIN_MAX_MS = 7000


def add_parser(subparsers: Any) -> None:
    """Register the ``transcribe`` sub-command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "transcribe",
        help="print the embedded recogniser's transcript of a WAV file",
        description="Transcribe a WAV file (any rate, mixed to mono or one --channel) with the "
        "embedded Whisper model, one stretch of the speech the VAD finds at a time, as a "
        "call's utterances are, and print the text.",
    )
    parser.add_argument(
        "file",
        type=Path,
        metavar="FILE.wav",
        help="a WAV file (PCM, float or G.711, any channels), or what replay takes besides: "
        "raw .ulaw/.alaw/.sln and Twilio .jsonl recordings",
    )
    parser.add_argument(
        "--telephone",
        action="store_true",
        help="first take the audio through 8 kHz G.711 μ-law, as a phone call would",
    )
    add_channel_option(parser)
    parser.add_argument(
        "--model",
        default=BUNDLED_MODEL,
        metavar="MODEL",
        help="tiny.en (the bundled model, the default) or a CTranslate2 Whisper model directory",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Transcribe the speech in ``args.file`` and print the text."""
    audio = read_input(args.file, args.channel, "transcribe")
    samples, rate = audio.samples, audio.sample_rate
    if args.telephone:
        samples, rate = telephone_round_trip(samples, rate), TELEPHONE_RATE
    wide = convert(samples, rate, WHISPER_RATE)
    spans = speech_spans(wide, WHISPER_RATE)
    if not spans:
        print(f"voicegate transcribe: note: {args.file}: no speech found", file=sys.stderr)
        print()
        return 0
    print(decode_spans(load_whisper(args.model), wide, spans))
    return 0


def transcribe_recording(samples: Samples, sample_rate: int, model: str = BUNDLED_MODEL) -> str:
    """What the embedded recogniser makes of the speech in a recording ("": none found)."""
    wide = convert(samples, sample_rate, WHISPER_RATE)
    spans = speech_spans(wide, WHISPER_RATE)
    return decode_spans(load_whisper(model), wide, spans) if spans else ""


def decode_spans(recognizer: WhisperRecognizer, wide: Samples, spans: list[tuple[int, int]]) -> str:
    """The text of each span of 16 kHz ``wide``, joined: ``workers`` decodes at once, in order
    (numpy's BLAS on one thread meanwhile, as in the gateway: cli/engines.py)."""
    with one_blas_thread(), ThreadPoolExecutor(recognizer.workers) as pool:
        texts = pool.map(
            lambda span: recognizer.transcribe(wide[slice(*span)], WHISPER_RATE), spans
        )
        return " ".join(text for text in texts if text)


def speech_spans(samples: Samples, sample_rate: int) -> list[tuple[int, int]]:
    """The sample ranges of the speech the VAD finds, padded, and joined across short pauses."""
    pad, gap = samples_for_ms(sample_rate, SPEECH_PAD_MS), samples_for_ms(sample_rate, JOIN_GAP_MS)
    longest = samples_for_ms(sample_rate, JOIN_MAX_MS)
    spans: list[tuple[int, int]] = []
    for segment in detect_segments(samples, sample_rate, VadSettings()):
        start = max(0, samples_for_ms(sample_rate, segment.start_ms) - pad)
        end = min(len(samples), samples_for_ms(sample_rate, segment.end_ms) + pad)
        if spans and start - spans[-1][1] < gap and end - spans[-1][0] <= longest:
            start = spans.pop()[0]
        spans.append((start, end))
    return spans


def telephone_round_trip(samples: Samples, sample_rate: int) -> Samples:
    """``samples`` as a caller on a G.711 μ-law phone line is heard: 8 kHz, companded."""
    narrow = convert(samples, sample_rate, TELEPHONE_RATE)
    return ulaw_decode(ulaw_encode(narrow))


def convert(samples: Samples, in_rate: int, out_rate: int) -> Samples:
    """A whole signal at another rate: the audio layer's resampler for the gateway's rates,
    soxr's one-shot conversion for any other (e.g. a 44.1 kHz recording)."""
    if in_rate == out_rate:
        return samples
    if in_rate in SUPPORTED_RATES and out_rate in SUPPORTED_RATES:
        return resample_all(samples, in_rate, out_rate)
    converted = soxr.resample(samples, in_rate, out_rate)
    return np.asarray(converted, dtype=np.int16)
