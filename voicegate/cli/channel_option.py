"""``--channel``: which channel of a WAV file is the one voice a command reads.

``replay``, ``transcribe`` and ``vad`` share it, so each parses it the same way and passes the
choice down to :func:`voicegate.audio.wav.read_wav`, the one place that selects channels.
``transcribe`` and ``vad`` read their file with :func:`read_input`, which refuses what
``replay`` refuses (no file, no audio) in the same words.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from voicegate.audio.wav import WavAudio, parse_channel, read_wav
from voicegate.callers.inputs import RAW_SUFFIXES, load_recording, require_audio
from voicegate.errors import ConfigError


def add_channel_option(parser: argparse.ArgumentParser) -> None:
    """Register ``--channel C`` (``args.channel``: a 1-based channel, or None for the mix)."""
    parser.add_argument(
        "--channel",
        type=_channel,
        default=None,
        metavar="C",
        help="the channel of a WAV file to read: mix (average them all, the default), 1, 2, "
        "... or left/right; e.g. the caller's side of a dual-channel call recording",
    )


def _channel(text: str) -> int | None:
    try:
        return parse_channel(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def read_input(path: Path, channel: int | None, command: str) -> WavAudio:
    """The recording a command analyses: a WAV file, or the raw G.711, signed linear and
    Twilio JSONL recordings ``replay`` takes (by suffix). Notes on it go to stderr."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    if path.suffix.lower() in RAW_SUFFIXES:
        recording = load_recording(path, channel, "analyse")
        audio, notes = WavAudio(recording.samples, recording.sample_rate), recording.notes
    else:  # any other name is read as WAV, whatever it is called (.wave, no suffix, ...)
        audio = read_wav(path, channel)
        notes = audio.notes()
        require_audio(path, audio.samples, audio.sample_rate, "analyse", notes)
    for note in notes:  # stderr: --json output on stdout stays machine-readable
        print(f"voicegate {command}: note: {path}: {note}", file=sys.stderr)
    return audio
