"""WAV read/write. Writes mono 16-bit PCM; reads the WAV files recorders and tools produce.

:func:`read_wav` takes integer PCM of 8, 16, 24 or 32 bits, IEEE float of 32 or 64 bits and
G.711 A-law or μ-law (telephony recorders store calls so), plain or WAVE_FORMAT_EXTENSIBLE,
with any number of channels, and returns mono PCM16 at the file's own rate: the shape every
stage of voicegate takes. The channels are averaged, as ``sox -c 1`` and ``ffmpeg -ac 1`` do,
unless one is chosen (``channel=2``, ``sox remix 2``): a dual-channel call recording holds the
caller on one channel and the agent on the other, and only one of them is the caller's voice.
How the chunks are found (extra chunks, streaming sizes, a file cut short) is in
:mod:`voicegate.audio.riff`.

Integer PCM whose header declares fewer bits than its 4-byte containers hold (24 in 32) under
the plain PCM tag is ambiguous: WAVE_FORMAT_EXTENSIBLE puts the valid bits at the top of the
container (Microsoft, "WAVEFORMATEXTENSIBLE": wValidBitsPerSample), while ALSA's S24_LE, which
arecord writes so, puts them at the bottom, where reading them as 32-bit samples made the audio
48 dB too quiet. The samples themselves tell: unused low bits are all zero at the top, and the
unused top byte is a sign extension (or zero) at the bottom. The file is read as its samples
say, with a note when they sit at the bottom.

The audio is read and decoded a block at a time into the mono result, so reading takes the
result's memory and a few MB more, however long and wide the file: a 10-minute 48 kHz stereo
float recording (230 MB) is 58 MB of PCM16, where decoding it whole took 1.6 GB.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from voicegate.audio.g711 import alaw_bytes_to_samples, ulaw_bytes_to_samples
from voicegate.audio.pcm import Samples
from voicegate.audio.riff import WaveChunks, WaveFormat, parse_wave
from voicegate.errors import AudioFormatError

_PCM, _FLOAT, _ALAW, _ULAW = 1, 3, 6, 7

#: Bytes per sample (the container, not the valid bits) each format tag can be read at.
_WIDTHS = {_PCM: (1, 2, 3, 4), _FLOAT: (4, 8), _ALAW: (1,), _ULAW: (1,)}
_TAG_NAMES = {_PCM: "integer PCM", _FLOAT: "IEEE float", _ALAW: "A-law", _ULAW: "μ-law"}

_INT16_MAX, _INT16_MIN = 32767, -32768
_FULL_SCALE = 32768.0  # float 1.0 in int16 scale

#: Float samples this far beyond full scale (1.0) were written as 16-bit values: a tool that
#: saved int16 numbers as float (scipy's ``wavfile.write`` of an int-valued float array).
#: Scaled as float they would all clip to a square wave.
_INTEGER_SCALED_PEAK = 256.0
#: Beyond this (6 dB over full scale) enough clips that a listener should know.
_CLIPPED_PEAK = 2.0

#: Frames decoded per read: bounds the decoder's scratch memory (about 1 MB for stereo).
_BLOCK_FRAMES = 1 << 14

#: The names users give channels besides their 1-based numbers (``None``: the average of all).
_CHANNEL_NAMES: dict[str, int | None] = {"mix": None, "left": 1, "right": 2}


@dataclass(frozen=True, slots=True)
class WavAudio:
    """Mono PCM16 samples, their rate, and how many channels the file had."""

    samples: Samples
    sample_rate: int
    channels: int = 1  # the file's; ``samples`` is one of them or their average
    #: Audio the header promises that the file does not hold (a recording cut short), in ms.
    missing_ms: int = 0
    #: What else reading changed that a listener should know (float samples rescaled, ...).
    remarks: tuple[str, ...] = ()
    #: Whether the channels averaged into ``samples`` differ (False: one channel, or copies).
    channels_differ: bool = False

    @property
    def duration_ms(self) -> int:
        """Length in whole milliseconds."""
        return len(self.samples) * 1000 // self.sample_rate

    def notes(self) -> tuple[str, ...]:
        """What a listener should know about how the file was read (a file cut short, ...)."""
        if not self.missing_ms:
            return self.remarks
        return (
            f"the file is cut short: its header promises {self.missing_ms} ms more audio "
            f"than the {self.duration_ms} ms it holds",
            *self.remarks,
        )


def parse_channel(text: str) -> int | None:
    """A channel as users write it: ``mix`` (None), ``left``, ``right`` or 1, 2, ...."""
    name = text.strip().lower()
    if name in _CHANNEL_NAMES:
        return _CHANNEL_NAMES[name]
    if not name.isdecimal() or int(name) < 1:
        raise ValueError(f"{text!r} is not a channel: give mix, left, right or 1, 2, ...")
    return int(name)


def read_wav(path: str | Path, channel: int | None = None) -> WavAudio:
    """Read a WAV file as mono PCM16: one ``channel`` (1-based) or, when None, their average.

    A format it cannot decode, or a channel the file does not have, is an ``AudioFormatError``.
    """
    try:
        with Path(path).open("rb") as stream:
            return _read(path, stream, channel)
    except OSError as error:
        raise AudioFormatError(f"{path}: cannot read ({error.strerror})") from error


def _read(path: str | Path, stream: BinaryIO, channel: int | None) -> WavAudio:
    try:
        chunks = parse_wave(stream)
        width = _sample_width(chunks.format)
    except AudioFormatError as error:
        raise AudioFormatError(f"{path}: not a readable WAV file ({error})") from error
    fmt = chunks.format
    _check_channel(path, channel, fmt.channels)
    scan = _Scan(shift=_bottom_justified_shift(stream, chunks, width))
    samples = _read_samples(stream, chunks, width, channel, _FULL_SCALE, scan)
    if fmt.tag == _FLOAT and scan.peak > _INTEGER_SCALED_PEAK:
        samples = _read_samples(stream, chunks, width, channel, 1.0, _Scan())
    missing_ms = chunks.missing // (width * fmt.channels) * 1000 // fmt.sample_rate
    remarks = _remarks(chunks, width, scan)
    return WavAudio(
        samples, fmt.sample_rate, fmt.channels, missing_ms, remarks, scan.channels_differ
    )


def _remarks(chunks: WaveChunks, width: int, scan: _Scan) -> tuple[str, ...]:
    """What a listener should know about how the samples were read."""
    fmt = chunks.format
    remarks: list[str] = []
    if scan.shift:
        remarks.append(
            f"its {fmt.bits}-bit samples sit in the low bits of 32-bit containers (as ALSA's "
            "S24_LE): read so"
        )
    if chunks.unread:
        unread_ms = chunks.unread // (width * fmt.channels) * 1000 // fmt.sample_rate
        remarks.append(
            f"{unread_ms} ms of audio in a second data chunk is not read: a WAV file holds "
            "one (RIFF/WAVE), and only the first is played"
        )
    if fmt.tag == _FLOAT and scan.peak > _INTEGER_SCALED_PEAK:
        remarks.append(
            f"its float samples reach {scan.peak:.0f} where 1.0 is full scale: read as the "
            "16-bit values they were written as"
        )
    elif fmt.tag == _FLOAT and scan.peak > _CLIPPED_PEAK:
        remarks.append(f"its float samples reach {scan.peak:.1f} times full scale: clipped there")
    return tuple(remarks)


@dataclass(slots=True)
class _Scan:
    """What decoding notices in passing: the largest float sample (before scaling), and
    whether the channels it mixed differ at all (a dual-mono file's average is its channel)."""

    peak: float = 0.0
    channels_differ: bool = False
    shift: int = 0  # bits integer samples are moved up: valid bits at a container's bottom


def _bottom_justified_shift(stream: BinaryIO, chunks: WaveChunks, width: int) -> int:
    """How far up integer samples must move when their valid bits sit at the bottom of the
    4-byte containers the plain PCM tag gives them (see the module docstring); else 0."""
    fmt = chunks.format
    if fmt.tag != _PCM or width != 4 or not 16 < fmt.bits < 32:
        return 0
    stream.seek(chunks.data_offset)
    left = chunks.data_size // 4 * 4
    while left and (block := stream.read(min(left, _BLOCK_FRAMES * 4))):
        left -= len(block)
        values = np.frombuffer(block[: len(block) // 4 * 4], dtype="<i4")
        top = not (values & ((1 << (32 - fmt.bits)) - 1)).any()  # the low bits are padding
        sign = values >> (fmt.bits - 1)  # all 0 or all 1 when the top is a sign extension
        bottom = bool(((sign == 0) | (sign == -1)).all())
        bottom = bottom or not (values.view("<u4") >> fmt.bits).any()  # or zero
        if top != bottom:  # quiet or silent blocks fit both: the next one may tell
            return 32 - fmt.bits if bottom else 0
    return 0


def _read_samples(
    stream: BinaryIO,
    chunks: WaveChunks,
    width: int,
    channel: int | None,
    float_scale: float,
    scan: _Scan,
) -> Samples:
    """The data chunk's whole frames, decoded a block at a time into one mono array."""
    fmt = chunks.format
    frame = width * fmt.channels
    # A file cut mid-frame (a recorder killed while writing) keeps its whole frames.
    samples = np.empty(chunks.data_size // frame, dtype=np.int16)
    stream.seek(chunks.data_offset)
    for first in range(0, len(samples), _BLOCK_FRAMES):
        data = stream.read(min(_BLOCK_FRAMES, len(samples) - first) * frame)
        whole = data[: len(data) - len(data) % frame]
        columns = _decode(fmt.tag, width, whole, float_scale, scan.shift)
        columns = columns.reshape(-1, fmt.channels)
        if channel is not None:
            columns = columns[:, channel - 1 : channel]
        _notice(columns, fmt.tag, float_scale, scan)
        end = first + len(columns)
        samples[first:end] = _to_mono(columns)
        if end < min(first + _BLOCK_FRAMES, len(samples)):
            return samples[:end]  # the file shrank while it was read
    return samples


def _notice(
    columns: npt.NDArray[np.int16 | np.float64], tag: int, float_scale: float, scan: _Scan
) -> None:
    if tag == _FLOAT and columns.size:
        scan.peak = max(scan.peak, float(np.abs(columns).max()) / float_scale)
    if columns.shape[1] > 1 and not scan.channels_differ:
        scan.channels_differ = not (columns == columns[:, :1]).all()


def _check_channel(path: str | Path, channel: int | None, channels: int) -> None:
    if channel is not None and not 1 <= channel <= channels:
        numbers = "1" if channels == 1 else f"1 to {channels}"
        raise AudioFormatError(
            f"{path}: no channel {channel} in a file of {channels} channel(s): "
            f"choose {numbers}, or mix"
        )


def _sample_width(fmt: WaveFormat) -> int:
    """Bytes per sample of one channel, or why this format cannot be read."""
    widths = _WIDTHS.get(fmt.tag)
    if widths is None:
        raise AudioFormatError(
            f"WAV format tag 0x{fmt.tag:04x} is not supported (integer PCM, IEEE float, "
            "A-law or μ-law are); convert it, e.g. with `sox IN -b 16 OUT.wav`"
        )
    width, spare = divmod(fmt.block_align, fmt.channels)
    by_bits = -(-fmt.bits // 8)  # the bytes the header's bits per sample take
    checked = fmt.tag in (_PCM, _FLOAT) and by_bits in widths  # G.711 is a byte a sample
    if checked and by_bits != width and fmt.byte_rate == fmt.sample_rate * fmt.channels * by_bits:
        # Two of the header's three sizes agree: a writer that got block_align wrong (often
        # by leaving the channels out of it). Python's wave module reads such files so too.
        return by_bits
    if spare or width not in widths:
        bits = ", ".join(str(8 * w) for w in widths)
        raise AudioFormatError(
            f"{_TAG_NAMES[fmt.tag]} of {fmt.bits} bits in {fmt.block_align}-byte frames of "
            f"{fmt.channels} channel(s) is not supported ({bits}-bit samples are)"
        )
    if checked and by_bits > width:
        raise AudioFormatError(
            f"the fmt chunk contradicts itself: {fmt.bits}-bit samples do not fit its "
            f"{fmt.block_align}-byte frames of {fmt.channels} channel(s) (a damaged header?)"
        )
    return width


def _decode(
    tag: int, width: int, data: bytes, float_scale: float, shift: int = 0
) -> npt.NDArray[np.int16 | np.float64]:
    """Samples in int16 scale: int16 where that is exact, float64 where it is not (float
    samples times ``float_scale``; 32-bit integers moved up ``shift`` bits first)."""
    if tag == _ULAW:
        return ulaw_bytes_to_samples(data)
    if tag == _ALAW:
        return alaw_bytes_to_samples(data)
    if tag == _FLOAT:
        floats = np.frombuffer(data, dtype="<f4" if width == 4 else "<f8")
        return np.nan_to_num(floats.astype(np.float64)) * float_scale
    if width == 1:  # 8-bit WAV is unsigned, centred on 128
        return ((np.frombuffer(data, dtype=np.uint8).astype(np.int16) - 128) << 8).astype(np.int16)
    if width == 2:
        return np.frombuffer(data, dtype="<i2").astype(np.int16)
    if shift:  # valid bits at the bottom: the unused top bits are dropped, the sign kept
        moved = (np.frombuffer(data, dtype="<u4") << np.uint32(shift)).view("<i4")
        return moved.astype(np.float64) / 65536.0
    # 24 and 32 bits: left-justify each sample in an int32, then scale down to 16 bits.
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, width)
    padded = np.zeros((len(raw), 4), dtype=np.uint8)
    padded[:, 4 - width :] = raw
    return padded.view("<i4").reshape(-1).astype(np.float64) / 65536.0


def _to_mono(columns: npt.NDArray[np.int16 | np.float64]) -> Samples:
    """Average the channels (or take the one) and round to int16, clipping beyond full scale."""
    if columns.dtype == np.int16 and columns.shape[1] == 1:
        return columns.reshape(-1).astype(np.int16)
    mixed: npt.NDArray[np.float64] = np.rint(columns.astype(np.float64).mean(axis=1))
    return np.clip(mixed, _INT16_MIN, _INT16_MAX).astype(np.int16)


def write_wav(path: str | Path, samples: Samples, sample_rate: int) -> None:
    """Write mono PCM16 samples as a WAV file."""
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(sample_rate)
        writer.writeframes(np.asarray(samples, dtype="<i2").tobytes())
