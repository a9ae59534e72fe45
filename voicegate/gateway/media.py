"""One call's audio conversions: wire payloads to session frames and back, and the VAD.

Inbound (design §2): decode the wire encoding (G.711 μ-law/A-law or PCM16), resample to the
call's rate, cut 20 ms frames, score them with the VAD. The call's rate is the provider's own
when the VAD takes it and it is no wider than the session rate: 8 kHz telephony is not
upsampled, since that adds no information and cost ~5 ms of CPU per call-second (soxr) plus a
dearer Silero window (bench/media_cost.py). A recogniser that needs 16 kHz (Whisper) resamples
the utterances it decodes, off the loop. Outbound: the TTS engine's samples,
resampled to the provider's rate and encoded in its wire format. Codecs report formats and
never transcode; this is the one place audio changes shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from voicegate.audio.framing import Reframer
from voicegate.audio.g711 import (
    alaw_bytes_to_samples,
    samples_to_alaw_bytes,
    samples_to_ulaw_bytes,
    ulaw_bytes_to_samples,
)
from voicegate.audio.pcm import Samples, pcm16le_to_samples, samples_to_pcm16le
from voicegate.audio.resample import StreamResampler, convert
from voicegate.gateway.vad_batch import SileroBatcher
from voicegate.types import AudioEncoding, AudioFormat, MediaMs
from voicegate.vad.detector import Detector, build_scorer
from voicegate.vad.machine import SpeechStarted, VadEvent
from voicegate.vad.settings import SUPPORTED_RATES as VAD_RATES
from voicegate.vad.settings import ScorerKind, VadSettings
from voicegate.vad.silero import SileroModel


@dataclass(frozen=True, slots=True)
class VoiceEvent:
    """The VAD's verdict change: speech started at ``at_ms`` (its onset) or ended there."""

    started: bool
    at_ms: MediaMs


#: Each encoding's decoder, looked up once per call rather than matched per payload.
_DECODERS: Mapping[AudioEncoding, Callable[[bytes], Samples]] = MappingProxyType(
    {
        AudioEncoding.PCMU: ulaw_bytes_to_samples,
        AudioEncoding.PCMA: alaw_bytes_to_samples,
        AudioEncoding.L16: pcm16le_to_samples,
    }
)


def decode(payload: bytes, encoding: AudioEncoding) -> Samples:
    """Wire bytes to PCM16 samples."""
    return _DECODERS[encoding](payload)


def _voices(events: tuple[VadEvent, ...]) -> Sequence[VoiceEvent]:
    """The detector's events as the session's voice events (no list for a quiet frame)."""
    if not events:
        return ()
    return [
        VoiceEvent(True, event.onset_ms)
        if isinstance(event, SpeechStarted)
        else VoiceEvent(False, event.end_ms)
        for event in events
    ]


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
        silero: SileroModel | None = None,
        batcher: SileroBatcher | None = None,
    ) -> None:
        self._in = inbound_format
        self._batcher = batcher
        self._out = outbound_format
        self._rate = sample_rate
        self._decode = _DECODERS[inbound_format.encoding]
        # None at the provider's own rate (8 kHz telephony): no pass-through call per frame.
        self._resampler = (
            None
            if inbound_format.sample_rate == sample_rate
            else StreamResampler(inbound_format.sample_rate, sample_rate)
        )
        self._framer = Reframer.for_rate(sample_rate, frame_ms)
        self._detector = Detector(build_scorer(sample_rate, vad, model=silero), vad)

    @property
    def sample_rate(self) -> int:
        """The rate of the frames :meth:`inbound` returns (what VAD and STT are fed)."""
        return self._rate

    def inbound(self, payload: bytes) -> list[Samples]:
        """Whole session-rate frames made available by one wire payload."""
        samples = self._decode(payload)
        if self._resampler is not None:
            samples = self._resampler.push(samples)
        return self._framer.push(samples)

    async def detect(self, frame: Samples) -> Sequence[VoiceEvent]:
        """Run the VAD on one frame; its Silero windows are scored in the worker's batch."""
        voices = self.detect_now(frame)
        return await self.detect_held() if voices is None else voices

    def detect_now(self, frame: Samples) -> Sequence[VoiceEvent] | None:
        """:meth:`detect` without an await, unless Silero windows wait (then None).

        Most frames need no Silero window (the gate is closed, or the window is not full):
        they take no coroutine. After None, :meth:`detect_held` scores and steps the frame.
        """
        events = self._detector.prepare(frame)
        return None if events is None else _voices(events)

    @property
    def hears_voice(self) -> bool:
        """Whether the VAD took the last frame for possible speech (``Detector.hears_voice``)."""
        return self._detector.hears_voice

    async def detect_held(self) -> Sequence[VoiceEvent]:
        """Score the windows :meth:`detect_now` left waiting (in the batch), step the frame."""
        waiting = self._detector.waiting
        assert waiting is not None
        if self._batcher is None:
            waiting.score_queued()
        else:
            await self._batcher.score(waiting)
        return _voices(self._detector.resume())

    def outbound(self, chunks: Sequence[Samples], sample_rate: int) -> bytes:
        """One synthesised segment, converted to the provider's wire format."""
        if not chunks:
            return b""
        samples = np.concatenate(chunks)
        if sample_rate != self._out.sample_rate:
            samples = convert(samples, sample_rate, self._out.sample_rate)
        return encode(samples, self._out.encoding)


@dataclass(frozen=True, slots=True)
class MediaFactory:
    """Builds each call's :class:`CallMedia` with the gateway's audio settings.

    The Silero model is loaded (and warmed up) once, when the factory is built at startup,
    and shared by every call: a call start then costs well under a millisecond instead of
    ~100 ms of ONNX session set-up and ~10 MB (bench/media_cost.py). Its one
    :class:`SileroBatcher` scores the windows of all the worker's calls together.
    """

    #: The widest rate calls are converted to for VAD and STT (narrower providers stay native).
    sample_rate: int = 16000
    frame_ms: int = 20
    vad: VadSettings = field(default_factory=VadSettings)
    silero: SileroModel | None = None
    #: Score calls' Silero windows together (gateway/vad_batch.py); False: each call alone.
    batch_silero: bool = True
    batcher: SileroBatcher | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.silero is None and self.vad.scorer is not ScorerKind.WEBRTC:
            object.__setattr__(self, "silero", SileroModel())
        if self.silero is not None and self.batch_silero:
            object.__setattr__(self, "batcher", SileroBatcher(self.vad.silero_batch_ms))

    def rate_for(self, inbound_format: AudioFormat) -> int:
        """The call's VAD/STT rate: the provider's own if the VAD takes it and it is no wider."""
        native = inbound_format.sample_rate
        return native if native in VAD_RATES and native <= self.sample_rate else self.sample_rate

    def open(self, inbound_format: AudioFormat, outbound_format: AudioFormat) -> CallMedia:
        """Media state for a call with these wire formats (cheap: no model is loaded here)."""
        return CallMedia(
            inbound_format,
            outbound_format,
            sample_rate=self.rate_for(inbound_format),
            frame_ms=self.frame_ms,
            vad=self.vad,
            silero=self.silero,
            batcher=self.batcher,
        )
