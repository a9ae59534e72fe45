"""The core every emulated telephone caller shares: a 20 ms media clock, playback, tracks.

A provider's caller (callers/telnyx.py, ...) only writes and reads its own messages; this
class speaks the script into wire frames, plays bot audio through :class:`Playback` (marks
acknowledged once the audio before them has played, ``clear`` drops the buffer and
acknowledges the pending marks), keeps both sides of the call for ``call.wav``, and decides
when the caller hangs up (callers/hangup.py).

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

from typing import Any

from voicegate.audio.g711 import (
    alaw_bytes_to_samples,
    samples_to_alaw_bytes,
    samples_to_ulaw_bytes,
    ulaw_bytes_to_samples,
)
from voicegate.audio.pcm import Samples, pcm16le_to_samples, samples_to_pcm16le
from voicegate.callers.hangup import quiet_after_cues
from voicegate.callers.playback import Playback
from voicegate.callers.script import CallerScript, EncodedScript
from voicegate.types import SILENCE_BYTE, AudioEncoding, AudioFormat

FRAME_MS = 20


def encode(samples: Samples, encoding: AudioEncoding) -> bytes:
    """PCM16 samples in a wire encoding (the emulated provider's side of the call)."""
    match encoding:
        case AudioEncoding.PCMU:
            return samples_to_ulaw_bytes(samples)
        case AudioEncoding.PCMA:
            return samples_to_alaw_bytes(samples)
        case AudioEncoding.L16:
            return samples_to_pcm16le(samples)


def decode(payload: bytes, encoding: AudioEncoding) -> Samples:
    """Wire bytes back to PCM16 samples."""
    match encoding:
        case AudioEncoding.PCMU:
            return ulaw_bytes_to_samples(payload)
        case AudioEncoding.PCMA:
            return alaw_bytes_to_samples(payload)
        case AudioEncoding.L16:
            return pcm16le_to_samples(payload)


class TelephoneLine:
    """One emulated call's media: caller frames out, bot audio played, both tracks kept."""

    def __init__(self, script: CallerScript, wire: AudioFormat, *, quiet_ms: int | None) -> None:
        if script.sample_rate != wire.sample_rate:
            raise ValueError(f"the caller's script must be at {wire.sample_rate} Hz")
        self.script = script
        self.wire = wire
        self.quiet_ms = quiet_ms  # see callers/hangup.py; None: hang up once the script ends
        self.playback = Playback()
        self._frames = EncodedScript(
            script, lambda samples: encode(samples, wire.encoding), FRAME_MS
        )
        self.now_ms = 0
        self.caller_track = bytearray()  # what the caller said, in the wire encoding
        self.bot_track = bytearray()  # what it heard of the bot, aligned with it

    @property
    def frame_bytes(self) -> int:
        """Bytes of 20 ms of wire audio."""
        return self.wire.bytes_for_ms(FRAME_MS)

    @property
    def observed(self) -> list[dict[str, Any]]:
        """The caller-side timeline (docs/timeline.md)."""
        return self.playback.observed

    def tick(self, *, held: bool = False) -> tuple[bytes, list[str]]:
        """Advance 20 ms: the caller's frame, and the marks whose audio has now played.

        ``held``: the provider plays silence and keeps its buffer (Asterisk's PAUSE_MEDIA).
        """
        chunk, played = (b"", []) if held else self.playback.play(self.now_ms, self.frame_bytes)
        silence = SILENCE_BYTE[self.wire.encoding] * (self.frame_bytes - len(chunk))
        self.bot_track += chunk + silence
        frame = self._frames.frame(self.now_ms, self.playback.bot_started_ms)
        self.caller_track += frame
        self.now_ms += FRAME_MS
        return frame, played

    def clear(self, *, drop_marks: bool = False) -> list[str]:
        """The provider's flush: drop the buffer; the pending marks to acknowledge, in order."""
        bytes_per_ms = self.frame_bytes // FRAME_MS
        return self.playback.clear(self.now_ms, bytes_per_ms, drop_marks=drop_marks)

    def finished(self, deadline_ms: int) -> bool:
        """The script has played out and the bot is done (or the deadline passed)."""
        bot_started = self.playback.bot_started_ms
        done = self.script.finished(self.now_ms, bot_started, deadline_ms)
        return done and (self._settled() or self.now_ms >= deadline_ms)

    def tracks(self) -> tuple[Samples, Samples]:
        """Caller and bot audio as the caller experienced them, PCM16 at the wire rate."""
        encoding = self.wire.encoding
        return decode(bytes(self.caller_track), encoding), decode(bytes(self.bot_track), encoding)

    def _settled(self) -> bool:
        if self.playback.buffered_bytes:
            return False
        if self.quiet_ms is None:
            return True
        return quiet_after_cues(
            self.script,
            self.now_ms,
            self.playback.bot_started_ms,
            self.playback.bot_drained_ms,
            self.quiet_ms,
        )
