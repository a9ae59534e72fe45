"""The chunks of a RIFF/WAVE file: its ``fmt `` fields and where its audio lies.

Reads what WAV writers in the field produce, not only what the standard library's ``wave``
accepts (docs/replay.md, "What it streams"):

- chunks before or after ``data`` (``LIST``/``INFO``, ``fact``, ``bext``, ``JUNK``) are
  skipped, each with its pad byte when its size is odd (RIFF: chunks start on even offsets);
- a ``data`` size of 0 or 0xFFFFFFFF is what a writer streaming to a pipe leaves when it
  cannot seek back to fill it in (ffmpeg, sox, many recorders): the audio then runs to the
  end of the file, as it does when a size is larger than the file: a recording cut short,
  whose missing bytes :attr:`WaveChunks.missing` counts, unless the size is 2 GiB or more
  (arecord writing to a pipe declares 2 GiB: a placeholder too); an RF64 file's real size
  is in its ds64 chunk;
- a writer that left out the pad byte after an odd-sized chunk is followed to the next chunk;
- a WAVE form holds one ``data`` chunk (RIFF's ``<wave-data>``; Microsoft's "Multimedia
  Programming Interface and Data Specifications 1.0"): audio in further ``data`` chunks is
  not read, as other readers do not read it, but counted (:attr:`WaveChunks.unread`) so the
  reader can say so.

It reads chunk headers from a seekable stream and never the audio itself, so a long recording
is decoded block by block (:mod:`voicegate.audio.wav`) instead of held twice in memory.
"""

from __future__ import annotations

import os
import string
import struct
from dataclasses import dataclass, replace
from typing import BinaryIO

from voicegate.errors import AudioFormatError

#: The data sizes a streaming writer leaves in place of the real one.
STREAMING_SIZES = frozenset({0, 0xFFFFFFFF})
#: A data size this large that the file does not hold is such a placeholder too, not a file
#: cut short: arecord writing to a pipe declares its 2 GiB WAV limit, others 0x7FFFFFFF.
PLACEHOLDER_MIN = 0x7FFFFFFF

#: RIFF, and RF64/BW64 (EBU Tech 3306, ITU-R BS.2088): the 64-bit forms that recorders
#: (and ffmpeg's ``-rf64 auto``) write. Their 32-bit data size is 0xFFFFFFFF and the real
#: one is in a ``ds64`` chunk (chunks may follow the audio, e.g. a BWF recorder's ``iXML``);
#: without one (or with 0 there, a streaming writer's) the audio is read to the end.
_MAGICS = frozenset({b"RIFF", b"RF64", b"BW64"})

#: WAVE_FORMAT_EXTENSIBLE: the real format tag is the first two bytes of the sub-format GUID.
EXTENSIBLE = 0xFFFE

#: The sample rates a WAV file may declare: telephony's lowest to high-resolution recorders'.
MIN_RATE, MAX_RATE = 1000, 768000

_CHUNK_HEADER = struct.Struct("<4sI")
#: More than any ``fmt `` chunk holds (40 bytes for WAVE_FORMAT_EXTENSIBLE): a damaged size
#: must not make the parser read a whole file into memory.
_MAX_FMT_BYTES = 1024
_ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + " _")
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
    byte_rate: int = 0  # the header's bytes per second: block_align x rate when consistent


@dataclass(frozen=True, slots=True)
class WaveChunks:
    """A WAVE file's format and where its audio lies in the file (whole or partial frames)."""

    format: WaveFormat
    data_offset: int
    data_size: int  # the bytes of audio the file holds
    missing: int = 0  # the bytes the data chunk declares beyond the end of the file
    unread: int = 0  # the bytes of audio in ``data`` chunks after the first (not read)


def parse_wave(stream: BinaryIO) -> WaveChunks:
    """Find the ``fmt `` and ``data`` chunks of a RIFF/WAVE file open for binary reading."""
    file_size = stream.seek(0, os.SEEK_END)
    stream.seek(0)
    head = stream.read(12)
    if len(head) < 12 and b"RIFF".startswith(head[:4]):
        raise AudioFormatError("empty or cut short")
    if head[:4] not in _MAGICS or head[8:12] != b"WAVE":
        raise AudioFormatError(_not_wave(head))
    fmt: WaveFormat | None = None
    data64 = 0  # an RF64 file's real data size, from its ds64 chunk (0: none given)
    offset, chunk_id, start = 12, b"", 12
    while offset + _CHUNK_HEADER.size <= file_size:
        chunk_id, size = _CHUNK_HEADER.unpack(_read_at(stream, offset, _CHUNK_HEADER.size))
        start = offset + _CHUNK_HEADER.size
        if chunk_id == b"fmt ":
            fmt = _parse_fmt(stream.read(min(size, _MAX_FMT_BYTES)))
        elif chunk_id == b"ds64":
            data64 = _ds64_data_size(stream.read(min(size, _MAX_FMT_BYTES)))
        elif chunk_id == b"data":
            if fmt is None:
                raise AudioFormatError("the data chunk comes before any fmt chunk")
            # RF64 (EBU Tech 3306): a 32-bit size of 0xFFFFFFFF defers to the ds64 chunk's.
            real = data64 if size == 0xFFFFFFFF and data64 else size
            chunks = _data_chunk(fmt, start, real, file_size)
            after = _later_data(stream, chunks.data_offset + chunks.data_size, real, file_size)
            return replace(chunks, unread=after)
        offset = _next_chunk(stream, start + size, size)
    raise AudioFormatError(_no_data(fmt, chunk_id, offset - start, file_size - start))


def _later_data(stream: BinaryIO, end: int, size: int, file_size: int) -> int:
    """The bytes of audio in ``data`` chunks after the one of ``size`` bytes ending at ``end``."""
    total = 0
    offset = _next_chunk(stream, end, size)
    while offset + _CHUNK_HEADER.size <= file_size:
        chunk_id, size = _CHUNK_HEADER.unpack(_read_at(stream, offset, _CHUNK_HEADER.size))
        start = offset + _CHUNK_HEADER.size
        if chunk_id == b"data":
            total += min(size, file_size - start)
        offset = _next_chunk(stream, start + size, size)
    return total


def _ds64_data_size(body: bytes) -> int:
    """The data size in a ``ds64`` chunk (riff size, data size, sample count: 64 bits each)."""
    return int(struct.unpack_from("<Q", body, 8)[0]) if len(body) >= 16 else 0


def _data_chunk(fmt: WaveFormat, start: int, size: int, file_size: int) -> WaveChunks:
    """The audio of a ``data`` chunk of ``size`` bytes at ``start``, as much as the file holds."""
    if size in STREAMING_SIZES or (size >= PLACEHOLDER_MIN and start + size > file_size):
        return WaveChunks(fmt, start, file_size - start)
    present = min(size, file_size - start)
    return WaveChunks(fmt, start, present, missing=size - present)


def _no_data(fmt: WaveFormat | None, last_id: bytes, last_size: int, left: int) -> str:
    """Why no audio was found: no ``fmt ``, or no ``data`` (after a chunk cut off, maybe)."""
    if fmt is None:
        return "no fmt chunk"
    if last_size > left:  # the last chunk said it runs on past the end of the file
        name = last_id.decode("latin-1")
        return (
            f"no data chunk: a {name!r} chunk runs past the end of the file (a damaged size, "
            "or a file cut short)"
        )
    return "no data chunk"


#: How the containers people mistake for WAV start, and their names (each format's magic).
_OTHER_MAGICS = (
    (b"ID3", "an MP3 file"),
    (b"\xff\xfb", "an MP3 file"),
    (b"\xff\xf3", "an MP3 file"),
    (b"fLaC", "a FLAC file"),
    (b"OggS", "an Ogg file (Vorbis or Opus)"),
    (b"FORM", "an AIFF file"),
    (b".snd", "a Sun/NeXT .au file"),
    (b"RIFX", "a big-endian RIFX file"),
    (b"#!AMR", "an AMR file"),
    (b"\x1aE\xdf\xa3", "a WebM/Matroska file"),
)


def _not_wave(head: bytes) -> str:
    """Why ``head`` does not start a WAV file, naming what it is when its magic says."""
    if head[4:8] == b"ftyp":
        return "an MP4/M4A file, not a RIFF/WAVE file; convert it, e.g. with `ffmpeg -i IN OUT.wav`"
    for magic, name in _OTHER_MAGICS:
        if head.startswith(magic):
            return f"{name}, not a RIFF/WAVE file; convert it, e.g. with `ffmpeg -i IN OUT.wav`"
    return "not a RIFF/WAVE file"


def _read_at(stream: BinaryIO, offset: int, count: int) -> bytes:
    stream.seek(offset)
    return stream.read(count)


def _next_chunk(stream: BinaryIO, end: int, size: int) -> int:
    """Where the chunk after one ending at ``end`` starts: past its pad byte when it is odd.

    Some writers leave the pad byte out (RIFF requires it); when the byte after the chunk
    starts a chunk id and the byte after the pad does not, that is such a file.
    """
    if not size & 1:
        return end
    if not _looks_like_id(_read_at(stream, end + 1, 4)) and _looks_like_id(
        _read_at(stream, end, 4)
    ):
        return end
    return end + 1


def _looks_like_id(text: bytes) -> bool:
    """Four letters, digits, spaces or underscores, as chunk ids are (``LIST``, ``_PMX``)."""
    return len(text) == 4 and all(chr(byte) in _ID_CHARACTERS for byte in text)


def _parse_fmt(body: bytes) -> WaveFormat:
    if len(body) < _FMT.size:
        raise AudioFormatError(f"fmt chunk of {len(body)} bytes, too short")
    tag, channels, rate, byte_rate, block_align, bits = _FMT.unpack_from(body)
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
    return WaveFormat(tag, channels, rate, block_align, bits, byte_rate)
