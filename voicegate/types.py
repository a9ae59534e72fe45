"""Small value types shared by every layer (a leaf: imports nothing else of voicegate)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

#: Milliseconds of media time, derived from frame counts (design §6), never from a wall clock.
MediaMs = int


class AudioEncoding(enum.Enum):
    """How samples are carried on a wire."""

    PCMU = "pcmu"  # G.711 μ-law, 8 bits per sample
    PCMA = "pcma"  # G.711 A-law, 8 bits per sample
    L16 = "l16"  # signed 16-bit little-endian linear PCM


@dataclass(frozen=True, slots=True)
class AudioFormat:
    """The format of audio on a wire or in a buffer."""

    encoding: AudioEncoding
    sample_rate: int
    channels: int = 1

    @property
    def bytes_per_sample(self) -> int:
        """Bytes one sample of one channel takes."""
        return 2 if self.encoding is AudioEncoding.L16 else 1

    def bytes_for_ms(self, ms: int) -> int:
        """Bytes that ``ms`` milliseconds of this audio take."""
        return self.sample_rate * ms // 1000 * self.bytes_per_sample * self.channels


#: One byte of silence in each encoding (G.711 μ-law's zero is 0xFF, A-law's 0xD5), for padding.
SILENCE_BYTE = {AudioEncoding.PCMU: b"\xff", AudioEncoding.PCMA: b"\xd5", AudioEncoding.L16: b"\0"}

#: Twilio Media Streams and most telephony: μ-law at 8 kHz, mono.
TELEPHONE_ULAW = AudioFormat(AudioEncoding.PCMU, 8000)
