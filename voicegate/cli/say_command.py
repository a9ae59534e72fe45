"""`voicegate say "text" -o FILE.wav [--rate N]`: the embedded synthesiser's audio, to a file.

A quick check for users and tests: the same espeak-ng engine ``speech.tts: espeak`` runs,
streamed chunk by chunk exactly as a call receives it, written as mono 16-bit PCM.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.audio.wav import write_wav
from voicegate.cli.engines import build_espeak
from voicegate.cli.paths import check_output_file
from voicegate.errors import ConfigError
from voicegate.speech.embedded.espeak_lib import Voice
from voicegate.speech.ports import TextToSpeech


def add_parser(subparsers: Any) -> None:
    """Register the ``say`` sub-command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "say",
        help="write the embedded synthesiser's audio for a text to a WAV file",
        description="Synthesise TEXT with espeak-ng and write it as a mono 16-bit WAV file.",
    )
    parser.add_argument("text", metavar="TEXT", help="what to say")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE.wav", help="WAV file to write"
    )
    parser.add_argument(
        "--rate", type=int, default=16000, metavar="N", help="sample rate in Hz (default 16000)"
    )
    parser.add_argument(
        "--voice", default=Voice().name, help="espeak-ng voice (default: %(default)s)"
    )
    parser.add_argument(
        "--wpm",
        type=int,
        default=Voice().words_per_minute,
        help="speaking rate in words per minute (default: %(default)s)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Synthesise ``args.text`` and write it to ``args.output``."""
    if not args.text.strip():
        raise ConfigError("nothing to say (TEXT is empty)")  # main() adds "voicegate say: "
    check_output_file(args.output, (".wav",))
    tts = build_espeak(args.voice, args.rate, args.wpm)
    samples = asyncio.run(speak(tts, args.text))
    write_wav(args.output, samples, tts.sample_rate)
    print(f"{args.output}: {len(samples) * 1000 // tts.sample_rate} ms at {tts.sample_rate} Hz")
    return 0


async def speak(tts: TextToSpeech, text: str) -> Samples:
    """All of ``text``'s audio, collected from the engine's stream."""
    chunks = [chunk async for chunk in tts.synthesize(text)]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)
