"""PCM16 samples: the one in-memory audio representation, and its little-endian wire bytes.

Every stage of the audio path works on mono ``int16`` numpy arrays (:data:`Samples`);
bytes appear only at the edges, where a codec hands over a payload or takes one back.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

from voicegate.errors import AudioFormatError

#: Mono signed 16-bit linear PCM samples.
Samples = npt.NDArray[np.int16]

#: Bytes one PCM16 sample takes on a wire.
PCM16_SAMPLE_BYTES = 2

#: int16 as a dtype object: comparing with it skips a scalar-type conversion per call.
_INT16 = np.dtype(np.int16)


def require_samples(samples: npt.NDArray[np.generic], what: str = "samples") -> Samples:
    """Return ``samples`` typed as :data:`Samples`, or raise if it is not a 1-D int16 array."""
    if samples.dtype != _INT16 or samples.ndim != 1:
        raise AudioFormatError(
            f"{what}: expected a 1-D int16 array, got {samples.ndim}-D {samples.dtype}"
        )
    # Native int16, checked above: the array itself (astype(copy=False) returned it too).
    return cast(Samples, samples)


def pcm16le_to_samples(data: bytes | bytearray | memoryview) -> Samples:
    """Decode signed 16-bit little-endian PCM bytes (an odd length is an ``AudioFormatError``)."""
    if len(data) % PCM16_SAMPLE_BYTES:
        raise AudioFormatError(
            f"PCM16 audio must be a whole number of 2-byte samples, got {len(data)} bytes"
        )
    # Always a fresh, writable, native-order copy: callers may keep or modify it.
    return np.frombuffer(data, dtype="<i2").astype(np.int16)


def samples_to_pcm16le(samples: Samples) -> bytes:
    """Encode samples as signed 16-bit little-endian PCM bytes."""
    return require_samples(samples).astype("<i2", copy=False).tobytes()


def silence(count: int) -> Samples:
    """``count`` samples of digital silence."""
    return np.zeros(count, dtype=np.int16)


def samples_for_ms(sample_rate: int, ms: int) -> int:
    """How many samples ``ms`` milliseconds take at ``sample_rate`` (rounded down)."""
    return sample_rate * ms // 1000


def ms_for_samples(sample_rate: int, count: int) -> int:
    """How many whole milliseconds ``count`` samples last at ``sample_rate``."""
    return count * 1000 // sample_rate
