"""``--channel``: which channel of a WAV file is the one voice a command reads.

``replay``, ``transcribe`` and ``vad`` share it, so each parses it the same way and passes the
choice down to :func:`voicegate.audio.wav.read_wav`, the one place that selects channels.
"""

from __future__ import annotations

import argparse

from voicegate.audio.wav import parse_channel


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
