"""Re-framing: turn arbitrarily split audio into fixed-size frames (20 ms by default).

Providers and the browser deliver audio in whatever chunks their transport produced; VAD and
STT want fixed frames, and providers want fixed frames back. A re-framer keeps the remainder
between pushes, so the frames depend only on the concatenated stream, never on its splits.
"""

from __future__ import annotations

import numpy as np

from voicegate.audio.pcm import Samples, require_samples, samples_for_ms, silence

#: The frame length the gateway uses everywhere (design §2).
DEFAULT_FRAME_MS = 20


def _check_frame_size(size: int, unit: str) -> None:
    """Raise ``ValueError`` unless ``size`` is a usable frame length."""
    if size <= 0:
        raise ValueError(f"frame length must be a positive number of {unit}, got {size}")


class Reframer:
    """Cut a stream of int16 samples into frames of exactly ``frame_samples`` samples."""

    def __init__(self, frame_samples: int) -> None:
        _check_frame_size(frame_samples, "samples")
        self._frame_samples = frame_samples
        self._pending = silence(0)

    @classmethod
    def for_rate(cls, sample_rate: int, frame_ms: int = DEFAULT_FRAME_MS) -> Reframer:
        """A re-framer cutting ``frame_ms`` frames at ``sample_rate``."""
        return cls(samples_for_ms(sample_rate, frame_ms))

    @property
    def frame_samples(self) -> int:
        """Samples per frame."""
        return self._frame_samples

    @property
    def pending(self) -> int:
        """Samples held back, waiting to complete a frame (always < ``frame_samples``)."""
        return len(self._pending)

    def push(self, samples: Samples) -> list[Samples]:
        """Add samples; return every frame now complete, in order (maybe ``samples`` itself)."""
        samples = require_samples(samples)
        if not len(self._pending) and len(samples) == self._frame_samples:
            return [samples]  # the usual case (Twilio sends 20 ms): no copy
        stream = np.concatenate([self._pending, samples])
        whole = len(stream) - len(stream) % self._frame_samples
        # Copy the remainder so it does not pin the whole concatenated buffer in memory.
        self._pending = stream[whole:].copy()
        return [
            stream[start : start + self._frame_samples]
            for start in range(0, whole, self._frame_samples)
        ]

    def flush(self) -> Samples | None:
        """Return the pending partial frame padded with silence (``None`` if nothing is pending)."""
        if not len(self._pending):
            return None
        frame = np.concatenate([self._pending, silence(self._frame_samples - len(self._pending))])
        self._pending = silence(0)
        return frame

    def reset(self) -> None:
        """Drop the pending partial frame."""
        self._pending = silence(0)


class BytesReframer:
    """Cut a byte stream (an encoded payload) into frames of exactly ``frame_bytes`` bytes.

    ``silence_byte`` is the byte one silent sample encodes to, used to pad a flushed frame:
    0x00 for PCM16, 0xFF for μ-law, 0xD5 for A-law (see :mod:`voicegate.audio.g711`).
    """

    def __init__(self, frame_bytes: int, silence_byte: int = 0x00) -> None:
        _check_frame_size(frame_bytes, "bytes")
        if not 0 <= silence_byte <= 0xFF:
            raise ValueError(f"silence_byte must be a byte value 0-255, got {silence_byte}")
        self._frame_bytes = frame_bytes
        self._silence_byte = silence_byte
        self._pending = bytearray()

    @property
    def frame_bytes(self) -> int:
        """Bytes per frame."""
        return self._frame_bytes

    @property
    def pending(self) -> int:
        """Bytes held back, waiting to complete a frame (always < ``frame_bytes``)."""
        return len(self._pending)

    def push(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add bytes; return every frame now complete, in order."""
        self._pending += data
        whole = len(self._pending) - len(self._pending) % self._frame_bytes
        frames = [
            bytes(self._pending[start : start + self._frame_bytes])
            for start in range(0, whole, self._frame_bytes)
        ]
        del self._pending[:whole]
        return frames

    def flush(self) -> bytes | None:
        """Return the pending partial frame padded with silence (``None`` if nothing is pending)."""
        if not self._pending:
            return None
        padding = bytes([self._silence_byte]) * (self._frame_bytes - len(self._pending))
        frame = bytes(self._pending) + padding
        self._pending.clear()
        return frame

    def reset(self) -> None:
        """Drop the pending partial frame."""
        self._pending.clear()
