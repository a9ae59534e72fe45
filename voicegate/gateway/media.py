"""One call's audio conversions: wire payloads to session frames and back, and the VAD.

Inbound (design §2): decode the wire encoding (G.711 μ-law/A-law or PCM16), resample to the
session rate, cut 20 ms frames, score them with the VAD. Outbound: the TTS engine's samples,
resampled to the provider's rate and encoded in its wire format. Codecs report formats and
never transcode; this is the one place audio changes shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from voicegate.audio.framing import Reframer
from voicegate.audio.g711 import (
    alaw_bytes_to_samples,
    samples_to_alaw_bytes,
    samples_to_ulaw_bytes,
    ulaw_bytes_to_samples,
)
from voicegate.audio.pcm import Samples, pcm16le_to_samples, samples_to_pcm16le
from voicegate.audio.resample import StreamResampler, resample_all
from voicegate.types import AudioEncoding, AudioFormat, MediaMs
from voicegate.vad.detector import Detector, build_scorer
from voicegate.vad.machine import SpeechStarted
from voicegate.vad.settings import VadSettings


@dataclass(frozen=True, slots=True)
class VoiceEvent:
    """The VAD's verdict change: speech started at ``at_ms`` (its onset) or ended there."""

    started: bool
    at_ms: MediaMs


def decode(payload: bytes, encoding: AudioEncoding) -> Samples:
    """Wire bytes to PCM16 samples."""
    match encoding:
        case AudioEncoding.PCMU:
            return ulaw_bytes_to_samples(payload)
        case AudioEncoding.PCMA:
            return alaw_bytes_to_samples(payload)
        case AudioEncoding.L16:
            return pcm16le_to_samples(payload)


def encode(samples: Samples, encoding: AudioEncoding) -> bytes:
    """PCM16 samples to wire bytes."""
    match encoding:
        case AudioEncoding.PCMU:
            return samples_to_ulaw_bytes(samples)
        case AudioEncoding.PCMA:
            return samples_to_alaw_bytes(samples)
        case AudioEncoding.L16:
            return samples_to_pcm16le(samples)


class CallMedia:
    """The audio state of one call: resamplers, the 20 ms re-framer and the detector."""

    def __init__(
        self,
        inbound_format: AudioFormat,
        outbound_format: AudioFormat,
        *,
        sample_rate: int,
        frame_ms: int,
        vad: VadSettings,
    ) -> None:
        self._in = inbound_format
        self._out = outbound_format
        self._resampler = StreamResampler(inbound_format.sample_rate, sample_rate)
        self._framer = Reframer.for_rate(sample_rate, frame_ms)
        self._detector = Detector(build_scorer(sample_rate, vad), vad)

    def inbound(self, payload: bytes) -> list[Samples]:
        """Whole session-rate frames made available by one wire payload."""
        samples = decode(payload, self._in.encoding)
        return self._framer.push(self._resampler.push(samples))

    def detect(self, frame: Samples) -> list[VoiceEvent]:
        """Run the VAD on one frame."""
        return [
            VoiceEvent(True, event.onset_ms)
            if isinstance(event, SpeechStarted)
            else VoiceEvent(False, event.end_ms)
            for event in self._detector.push(frame)
        ]

    def outbound(self, chunks: Sequence[Samples], sample_rate: int) -> bytes:
        """One synthesised segment, converted to the provider's wire format."""
        if not chunks:
            return b""
        samples = np.concatenate(chunks)
        if sample_rate != self._out.sample_rate:
            samples = resample_all(samples, sample_rate, self._out.sample_rate)
        return encode(samples, self._out.encoding)


@dataclass(frozen=True, slots=True)
class MediaFactory:
    """Builds each call's :class:`CallMedia` with the gateway's audio settings."""

    sample_rate: int = 16000
    frame_ms: int = 20
    vad: VadSettings = field(default_factory=VadSettings)

    def open(self, inbound_format: AudioFormat, outbound_format: AudioFormat) -> CallMedia:
        """Media state for a call with these wire formats."""
        return CallMedia(
            inbound_format,
            outbound_format,
            sample_rate=self.sample_rate,
            frame_ms=self.frame_ms,
            vad=self.vad,
        )
