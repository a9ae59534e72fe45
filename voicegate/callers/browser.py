"""The client side of the browser dialect, emulated on its own media clock.

What a browser page does (docs/protocols/browser.md): open with ``start`` at the rate it
captures, send every captured sample as binary PCM16 (20 ms per tick, silence included, as §2
asks), play the bot's PCM16 at the rate ``started`` announced, acknowledge each ``mark`` once
the audio before it has played, and on ``clear`` drop the buffered audio and acknowledge the
pending marks (§6). Messages of types it does not know are ignored (§8). The ``callId`` the
gateway announces in ``started`` is kept: it names the call's timeline. The gateway's timeline
records (``event`` messages, §5) are kept too, so a replay against a gateway at a URL still
knows what the gateway heard, said and why a turn failed (docs/replay.md).

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from voicegate.audio.pcm import Samples, pcm16le_to_samples, samples_to_pcm16le, silence
from voicegate.audio.resample import StreamResampler, resample_all
from voicegate.callers.echo import EchoPath
from voicegate.callers.hangup import quiet_after_cues
from voicegate.callers.playback import Playback
from voicegate.callers.script import CallerScript
from voicegate.errors import RemoteProtocolError

FRAME_MS = 20
#: The capture rates ``start.sampleRate`` may declare (browser.md §2).
SAMPLE_RATES = (8000, 16000, 24000, 48000)
_PCM16_BYTES = 2
#: The gateway's timeline records kept at most; a gateway bounds its own timeline far below
#: this (limits.timeline_max_records), so only a broken or hostile one reaches it.
MAX_TIMELINE_RECORDS = 100_000
#: The fields of timeline records (docs/timeline.md) that the replay's summary and report rely
#: on, with their types: a gateway sending them otherwise is refused, not trusted.
_EVENT_FIELDS: dict[str, dict[str, type]] = {
    "interruption": {"onset_ms": int},
    "heard": {"turn_id": str, "text": str, "interrupted": bool},
    "say": {"turn_id": str},
    "turn_started": {"turn_id": str},
    "turn_ended": {"turn_id": str},
    "turn_cancelled": {"turn_id": str},
}


class BrowserCaller:
    """One emulated browser call: microphone out, bot audio in, marks and clear honoured."""

    def __init__(
        self,
        script: CallerScript,
        *,
        metadata: Mapping[str, Any] | None = None,
        quiet_ms: int | None = None,
        echo: EchoPath | None = None,
    ) -> None:
        if script.sample_rate not in SAMPLE_RATES:
            raise ValueError(f"a browser caller captures at one of {SAMPLE_RATES} Hz")
        self._script = script
        self._metadata = dict(metadata or {})
        self._quiet_ms = quiet_ms  # see callers/hangup.py; None: hang up once the script ends
        self._echo = echo  # the bot's voice coming back into the microphone (callers/echo.py)
        self._echo_resampler: StreamResampler | None = None
        self._playback = Playback()
        self._output_rate: int | None = None
        self._started_at_ms = 0  # bot audio can only play from here on
        self.call_id = ""  # the gateway's id for the call, from ``started``
        self.stopped_reason: str | None = None  # the gateway's ``stop`` reason, if it sent one
        self.now_ms = 0
        self.caller_track = bytearray()  # what the caller said, PCM16 at ``sample_rate``
        self.bot_track = bytearray()  # what it heard, PCM16 at the output rate, from started
        self.timeline: list[dict[str, Any]] = []  # the gateway's records, from ``event``s

    @property
    def sample_rate(self) -> int:
        """The rate the caller captures and declares in ``start``."""
        return self._script.sample_rate

    @property
    def output_sample_rate(self) -> int | None:
        """The rate of the bot's audio, once ``started`` announced it."""
        return self._output_rate

    @property
    def bot_started_ms(self) -> list[int]:
        """Media times at which bot audio began playing."""
        return self._playback.bot_started_ms

    @property
    def clears(self) -> list[int]:
        """Media times at which a ``clear`` arrived."""
        return self._playback.clears

    @property
    def observed(self) -> list[dict[str, Any]]:
        """The caller-side timeline (docs/timeline.md)."""
        return self._playback.observed

    def opening(self) -> list[str]:
        """The ``start`` message."""
        start = {"type": "start", "version": 1, "sampleRate": self.sample_rate}
        return [json.dumps(start | {"metadata": self._metadata})]

    def closing(self) -> str:
        """The ``stop`` message: the user hung up."""
        return json.dumps({"type": "stop", "reason": "the replayed caller hung up"})

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, acknowledge marks now played, send microphone audio."""
        echoes = self._play_frame()
        samples = self._script.frame(self.now_ms, FRAME_MS, self.bot_started_ms)
        if self._echo is not None:
            if self._output_rate is None:  # nothing plays before ``started``: silence heard
                self._echo.heard(silence(len(samples)))
            samples = self._echo.mix(samples)
        frame = samples_to_pcm16le(samples)
        self.caller_track += frame
        self.now_ms += FRAME_MS
        return [*echoes, frame]

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway message; messages to send back at once (mark acknowledgements)."""
        if isinstance(message, bytes):
            self._queue_audio(message)
            return []
        data = _parse(message)
        match data.get("type"):
            case "started":
                self._on_started(data)
            case "mark":
                return self._acks(self._playback.queue_mark(_text(data, "name"), self.now_ms))
            case "clear":
                return self._acks(self._playback.clear(self.now_ms, self._bytes_per_ms()))
            case "event":
                self._keep_event(data)
            case "stop":
                self.stopped_reason = str(data.get("reason", ""))
                self._playback.note(self.now_ms, "stop_received", reason=self.stopped_reason)
        return []  # other types are informational; clients ignore them (browser.md §8)

    def finished(self, deadline_ms: int) -> bool:
        """The script has played out and the bot is done (or the deadline passed)."""
        done = self._script.finished(self.now_ms, self.bot_started_ms, deadline_ms)
        return done and (self._settled() or self.now_ms >= deadline_ms)

    def tracks(self) -> tuple[Samples, Samples]:
        """Caller and bot audio as the caller experienced them, both at ``sample_rate``."""
        caller = pcm16le_to_samples(self.caller_track)
        bot = pcm16le_to_samples(self.bot_track)
        if self._output_rate is not None and self._output_rate != self.sample_rate:
            bot = resample_all(bot, self._output_rate, self.sample_rate)
        lead = silence(self.sample_rate * self._started_at_ms // 1000)
        return caller, np.concatenate([lead, bot])

    def _settled(self) -> bool:
        if self._playback.buffered_bytes:
            return False
        if self._quiet_ms is None:
            return True
        return quiet_after_cues(
            self._script,
            self.now_ms,
            self.bot_started_ms,
            self._playback.bot_drained_ms,
            self._quiet_ms,
        )

    def _on_started(self, data: dict[str, Any]) -> None:
        rate = data.get("sampleRate")
        if rate not in SAMPLE_RATES or not isinstance(rate, int):
            raise RemoteProtocolError(f"browser 'started': sampleRate {rate!r} is not supported")
        if self._output_rate is not None:
            raise RemoteProtocolError("browser: a second 'started' message")
        self._output_rate = rate
        self._started_at_ms = self.now_ms
        self.call_id = _text(data, "callId")
        self._playback.note(self.now_ms, "call_accepted", call_id=self.call_id, sample_rate=rate)

    def _keep_event(self, data: dict[str, Any]) -> None:
        """One record of the gateway's timeline (browser.md §5): ``t_ms`` and ``event`` typed."""
        record = {key: value for key, value in data.items() if key != "type"}
        event = record.get("event")
        if not isinstance(record.get("t_ms"), int) or not isinstance(event, str):
            raise RemoteProtocolError("browser 'event': 't_ms' must be an integer, 'event' text")
        for key, kind in _EVENT_FIELDS.get(event, {}).items():
            if not isinstance(record.get(key), kind):
                raise RemoteProtocolError(
                    f"browser 'event' {event!r}: {key!r} must be {kind.__name__}"
                )
        if len(self.timeline) < MAX_TIMELINE_RECORDS:
            self.timeline.append(record)

    def _queue_audio(self, payload: bytes) -> None:
        if self._output_rate is None:
            raise RemoteProtocolError("browser: bot audio arrived before 'started'")
        if not payload or len(payload) % _PCM16_BYTES:
            raise RemoteProtocolError(f"browser: bot audio frame of {len(payload)} bytes")
        self._playback.queue_audio(payload)

    def _play_frame(self) -> list[str]:
        if self._output_rate is None:
            return []
        frame_bytes = self._bytes_per_ms() * FRAME_MS
        chunk, played = self._playback.play(self.now_ms, frame_bytes)
        heard = chunk + bytes(frame_bytes - len(chunk))
        self.bot_track += heard
        if self._echo is not None:
            self._echo.heard(self._at_capture_rate(pcm16le_to_samples(heard)))
        return self._acks(played)

    def _at_capture_rate(self, samples: Samples) -> Samples:
        """Bot audio (output rate) as the microphone picks it up (capture rate)."""
        rate = self._output_rate or self.sample_rate
        if rate == self.sample_rate:
            return samples
        if self._echo_resampler is None:
            self._echo_resampler = StreamResampler(rate, self.sample_rate)
        return self._echo_resampler.push(samples)

    def _bytes_per_ms(self) -> int:
        return (self._output_rate or 0) * _PCM16_BYTES // 1000

    @staticmethod
    def _acks(names: list[str]) -> list[str]:
        return [json.dumps({"type": "mark", "name": name}) for name in names]


def _parse(message: str) -> dict[str, Any]:
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"browser: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("browser: a control message must be a JSON object")
    return data


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise RemoteProtocolError(f"browser {data.get('type')!r} message: {key!r} must be text")
    return value
