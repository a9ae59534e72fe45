"""`voicegate vad FILE.wav [--json] [--channel C]`: the speech segments of a WAV file.

The file's channels are mixed to mono, or ``--channel`` names the one to analyse. Raw G.711,
signed linear and Twilio JSONL recordings are read as ``replay`` reads them (by suffix).

8 and 16 kHz files are analysed at their own rate; 24 and 48 kHz files are first converted
to 16 kHz with the streaming resampler (its latency trimmed, so times stay file-relative), and
any other rate (e.g. 44.1 kHz) with soxr, as ``transcribe`` does.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from voicegate.audio.pcm import Samples
from voicegate.audio.resample import StreamResampler
from voicegate.audio.wav import WavAudio
from voicegate.cli.channel_option import add_channel_option, read_input
from voicegate.cli.transcribe_command import convert
from voicegate.vad import ScorerKind, Segment, VadSettings, detect_segments
from voicegate.vad.settings import SUPPORTED_RATES

#: Rates the command converts to 16 kHz before detection (voicegate.audio.resample).
RESAMPLED_RATES = frozenset({24000, 48000})
WIDEBAND_RATE = 16000


def add_parser(subparsers: Any) -> None:
    """Register the ``vad`` sub-command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "vad",
        help="print the speech segments of a WAV file",
        description="Detect speech in a WAV file, mixed to mono or one --channel (8 or 16 kHz "
        "natively; 24 or 48 kHz resampled to 16 kHz) and print its segments in ms from the "
        "start of the file.",
    )
    parser.add_argument(
        "file",
        type=Path,
        metavar="FILE.wav",
        help="a WAV file (PCM, float or G.711, any channels), or what replay takes besides: "
        "raw .ulaw/.alaw/.sln and Twilio .jsonl recordings",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print exactly {"segments": [{"start_ms": ..., "end_ms": ...}, ...]}',
    )
    parser.add_argument(
        "--scorer",
        choices=[kind.value for kind in ScorerKind],
        default=ScorerKind.COMBINED.value,
        help="frame scorer (default: combined, webrtcvad gate + Silero confirmation)",
    )
    parser.add_argument(
        "--aggressiveness",
        type=int,
        choices=range(4),
        default=VadSettings().webrtc_aggressiveness,
        metavar="0-3",
        help="webrtcvad aggressiveness (default: %(default)s)",
    )
    add_channel_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Detect and print the segments of ``args.file``."""
    settings = VadSettings(
        scorer=ScorerKind(args.scorer), webrtc_aggressiveness=args.aggressiveness
    )
    audio = read_input(args.file, args.channel, "vad")
    samples, rate = _at_a_vad_rate(audio)
    segments = detect_segments(samples, rate, settings)
    if args.json:
        print(json.dumps({"segments": [_as_json(segment) for segment in segments]}))
    else:
        _print_table(args.file, audio, rate, settings, segments)
    return 0


def _at_a_vad_rate(audio: WavAudio) -> tuple[Samples, int]:
    """The file's samples at a rate the VAD takes: its own, or else 16 kHz."""
    if audio.sample_rate in SUPPORTED_RATES:
        return audio.samples, audio.sample_rate
    if audio.sample_rate not in RESAMPLED_RATES:  # e.g. 44.1 kHz, as transcribe and replay take
        return convert(audio.samples, audio.sample_rate, WIDEBAND_RATE), WIDEBAND_RATE
    resampler = StreamResampler(audio.sample_rate, WIDEBAND_RATE)
    # A second at a time: its float scratch stays small however long the file (the output
    # does not depend on how the input is split; voicegate.audio.resample).
    step = audio.sample_rate
    pieces = [
        resampler.push(audio.samples[at : at + step]) for at in range(0, len(audio.samples), step)
    ]
    converted = np.concatenate([*pieces, resampler.flush()])
    # The stream starts with the resampler's latency as silence: drop it so that segment
    # times stay relative to the start of the file.
    return converted[resampler.delay_samples :], WIDEBAND_RATE


def _as_json(segment: Segment) -> dict[str, int]:
    return {"start_ms": segment.start_ms, "end_ms": segment.end_ms}


def _print_table(
    path: Path, audio: WavAudio, rate: int, settings: VadSettings, segments: list[Segment]
) -> None:
    resampled = f" (resampled to {rate} Hz)" if rate != audio.sample_rate else ""
    print(
        f"{path}: {audio.sample_rate} Hz{resampled}, {audio.duration_ms} ms, "
        f"scorer {settings.scorer.value}, {len(segments)} speech segment(s)"
    )
    for number, segment in enumerate(segments, start=1):
        length = segment.end_ms - segment.start_ms
        print(f"{number:3d}  {segment.start_ms:7d} ms -> {segment.end_ms:7d} ms  ({length} ms)")
