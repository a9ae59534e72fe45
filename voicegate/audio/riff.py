"""The chunks of a RIFF/WAVE file: its ``fmt `` fields and where its audio lies.

Reads what WAV writers in the field produce, not only what the standard library's ``wave``
accepts (docs/replay.md, "What it streams"):

- chunks before or after ``data`` (``LIST``/``INFO``, ``fact``, ``bext``, ``JUNK``) are
  skipped, each with its pad byte when its size is odd (RIFF: chunks start on even offsets);
- a ``data`` size of 0 or 0xFFFFFFFF is what a writer streaming to a pipe leaves when it
  cannot seek back to fill it in (ffmpeg, sox, many recorders): the audio then runs to the
  end of the file, as it does when a size is larger than the file (a recording cut short).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from voicegate.errors import AudioFormatError

#: The data sizes a streaming writer leaves in place of the real one.
STREAMING_SIZES = frozenset({0, 0xFFFFFFFF})

#: RIFF, and RF64/BW64 (EBU Tech 3306, ITU-R BS.2088): the 64-bit forms that recorders
#: (and ffmpeg's ``-rf64 auto``) write. Their 32-bit data size is 0xFFFFFFFF and the real
#: one is in a ``ds64`` chunk; their writers put the audio last, so it is read to the end.
_MAGICS = frozenset({b"RIFF", b"RF64", b"BW64"})

#: WAVE_FORMAT_EXTENSIBLE: the real format tag is the first two bytes of the sub-format GUID.
EXTENSIBLE = 0xFFFE

#: The sample rates a WAV file may declare: telephony's lowest to high-resolution recorders'.
MIN_RATE, MAX_RATE = 1000, 768000

_CHUNK_HEADER = struct.Struct("<4sI")
_FMT = struct.Struct("<HHIIHH")
_EXTENSIBLE_FMT = struct.Struct("<HHIH")  # cbSize, valid bits, channel mask, sub-format tag


@dataclass(frozen=True, slots=True)
class WaveFormat:
    """The fields of a ``fmt `` chunk that decoding needs."""

    tag: int  # 1 PCM, 3 IEEE float, 6 A-law, 7 μ-law (the extensible sub-format resolved)
    channels: int
    sample_rate: int
    block_align: int
    bits: int


@dataclass(frozen=True, slots=True)
class WaveChunks:
    """A WAVE file's format and the bytes of its audio (whole or partial frames)."""

    format: WaveFormat
    data: bytes


def parse_wave(content: bytes) -> WaveChunks:
    """Find the ``fmt `` and ``data`` chunks of a RIFF/WAVE file's bytes."""
    if len(content) < 12 and b"RIFF".startswith(content[:4]):
        raise AudioFormatError("empty or cut short")
    if content[:4] not in _MAGICS or content[8:12] != b"WAVE":
        raise AudioFormatError("not a RIFF/WAVE file")
    fmt: WaveFormat | None = None
    offset = 12
    while offset + _CHUNK_HEADER.size <= len(content):
        chunk_id, size = _CHUNK_HEADER.unpack_from(content, offset)
        start = offset + _CHUNK_HEADER.size
        if chunk_id == b"fmt ":
            fmt = _parse_fmt(content[start : start + size])
        elif chunk_id == b"data":
            if fmt is None:
                raise AudioFormatError("the data chunk comes before any fmt chunk")
            end = len(content) if size in STREAMING_SIZES else start + size
            return WaveChunks(fmt, content[start:end])
        offset = start + size + (size & 1)
    raise AudioFormatError("no fmt chunk" if fmt is None else "no data chunk")


def _parse_fmt(body: bytes) -> WaveFormat:
    if len(body) < _FMT.size:
        raise AudioFormatError(f"fmt chunk of {len(body)} bytes, too short")
    tag, channels, rate, _, block_align, bits = _FMT.unpack_from(body)
    if tag == EXTENSIBLE:
        if len(body) < _FMT.size + _EXTENSIBLE_FMT.size:
            raise AudioFormatError("WAVE_FORMAT_EXTENSIBLE without its sub-format")
        tag = _EXTENSIBLE_FMT.unpack_from(body, _FMT.size)[3]
    if channels < 1 or block_align < 1:
        raise AudioFormatError(
            f"fmt chunk says {channels} channel(s) at {rate} Hz in {block_align}-byte frames"
        )
    if not MIN_RATE <= rate <= MAX_RATE:
        # A damaged header: at 1 Hz a second of audio would be resampled into hours of it.
        raise AudioFormatError(
            f"fmt chunk says {rate} Hz, outside {MIN_RATE}-{MAX_RATE} Hz (a damaged header?)"
        )
    return WaveFormat(tag, channels, rate, block_align, bits)
