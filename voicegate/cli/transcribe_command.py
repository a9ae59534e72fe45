"""`voicegate transcribe FILE.wav [--telephone] [--channel C]`: the recogniser's transcript.

A quick check for users and tests. The file (a WAV file at any rate, its channels mixed to
mono or the one ``--channel`` names) is converted to 16 kHz and decoded as one utterance by
the same Whisper model ``speech.stt: whisper`` runs; ``--telephone`` first takes it through
the path a phone call takes: 8 kHz, G.711 μ-law encoded and decoded, then back to 16 kHz.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from voicegate.audio.g711 import ulaw_decode, ulaw_encode
from voicegate.audio.pcm import Samples
from voicegate.audio.resample import SUPPORTED_RATES, resample_all
from voicegate.audio.wav import read_wav
from voicegate.cli.channel_option import add_channel_option
from voicegate.cli.engines import load_whisper
from voicegate.errors import ConfigError
from voicegate.speech.embedded.whisper_model import BUNDLED_MODEL, WHISPER_RATE

TELEPHONE_RATE = 8000


def add_parser(subparsers: Any) -> None:
    """Register the ``transcribe`` sub-command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "transcribe",
        help="print the embedded recogniser's transcript of a WAV file",
        description="Transcribe a WAV file (any rate, mixed to mono or one --channel) with the "
        "embedded Whisper model, as one utterance, and print the text.",
    )
    parser.add_argument(
        "file", type=Path, metavar="FILE.wav", help="a WAV file: PCM, float or G.711, any channels"
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
    """Transcribe ``args.file`` and print the text."""
    if not args.file.is_file():
        raise ConfigError(f"{args.file}: no such file")
    audio = read_wav(args.file, args.channel)
    samples, rate = audio.samples, audio.sample_rate
    if args.telephone:
        samples, rate = telephone_round_trip(samples, rate), TELEPHONE_RATE
    recognizer = load_whisper(args.model)
    print(recognizer.transcribe(convert(samples, rate, WHISPER_RATE), WHISPER_RATE))
    return 0


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
