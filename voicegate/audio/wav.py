"""WAV read/write. Writes mono 16-bit PCM; reads the WAV files recorders and tools produce.

:func:`read_wav` takes integer PCM of 8, 16, 24 or 32 bits, IEEE float of 32 or 64 bits and
G.711 A-law or μ-law (telephony recorders store calls so), plain or WAVE_FORMAT_EXTENSIBLE,
with any number of channels, and returns mono PCM16 at the file's own rate: the shape every
stage of voicegate takes. The channels are averaged, as ``sox -c 1`` and ``ffmpeg -ac 1`` do,
unless one is chosen (``channel=2``, ``sox remix 2``): a dual-channel call recording holds the
caller on one channel and the agent on the other, and only one of them is the caller's voice.
How the chunks are found (extra chunks, streaming sizes, a file cut short) is in
:mod:`voicegate.audio.riff`.
"""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voicegate.audio.g711 import alaw_bytes_to_samples, ulaw_bytes_to_samples
from voicegate.audio.pcm import Samples
from voicegate.audio.riff import WaveFormat, parse_wave
from voicegate.errors import AudioFormatError

_PCM, _FLOAT, _ALAW, _ULAW = 1, 3, 6, 7

#: Bytes per sample (the container, not the valid bits) each format tag can be read at.
_WIDTHS = {_PCM: (1, 2, 3, 4), _FLOAT: (4, 8), _ALAW: (1,), _ULAW: (1,)}
_TAG_NAMES = {_PCM: "integer PCM", _FLOAT: "IEEE float", _ALAW: "A-law", _ULAW: "μ-law"}

_INT16_MAX, _INT16_MIN = 32767, -32768

#: The names users give channels besides their 1-based numbers (``None``: the average of all).
_CHANNEL_NAMES: dict[str, int | None] = {"mix": None, "left": 1, "right": 2}


@dataclass(frozen=True, slots=True)
class WavAudio:
    """Mono PCM16 samples, their rate, and how many channels the file had."""

    samples: Samples
    sample_rate: int
    channels: int = 1  # the file's; ``samples`` is one of them or their average

    @property
    def duration_ms(self) -> int:
        """Length in whole milliseconds."""
        return len(self.samples) * 1000 // self.sample_rate


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
        content = Path(path).read_bytes()
    except OSError as error:
        raise AudioFormatError(f"{path}: cannot read ({error.strerror})") from error
    try:
        chunks = parse_wave(content)
        width = _sample_width(chunks.format)
    except AudioFormatError as error:
        raise AudioFormatError(f"{path}: not a readable WAV file ({error})") from error
    fmt = chunks.format
    _check_channel(path, channel, fmt.channels)
    # A file cut mid-frame (a recorder killed while writing) keeps its whole frames.
    whole = len(chunks.data) - len(chunks.data) % fmt.block_align
    columns = _decode(fmt.tag, width, chunks.data[:whole]).reshape(-1, fmt.channels)
    if channel is not None:
        columns = columns[:, channel - 1 : channel]
    return WavAudio(_to_mono(columns), fmt.sample_rate, fmt.channels)


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
    if spare or width not in widths:
        bits = ", ".join(str(8 * w) for w in widths)
        raise AudioFormatError(
            f"{_TAG_NAMES[fmt.tag]} of {fmt.bits} bits in {fmt.block_align}-byte frames of "
            f"{fmt.channels} channel(s) is not supported ({bits}-bit samples are)"
        )
    return width


def _decode(tag: int, width: int, data: bytes) -> npt.NDArray[np.int16 | np.float64]:
    """Samples in int16 scale: int16 where that is exact, float64 where it is not."""
    if tag == _ULAW:
        return ulaw_bytes_to_samples(data)
    if tag == _ALAW:
        return alaw_bytes_to_samples(data)
    if tag == _FLOAT:
        floats = np.frombuffer(data, dtype="<f4" if width == 4 else "<f8")
        return np.nan_to_num(floats.astype(np.float64)) * 32768.0
    if width == 1:  # 8-bit WAV is unsigned, centred on 128
        return ((np.frombuffer(data, dtype=np.uint8).astype(np.int16) - 128) << 8).astype(np.int16)
    if width == 2:
        return np.frombuffer(data, dtype="<i2").astype(np.int16)
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
