"""The provider side of a Twilio ConversationRelay session, emulated: Twilio's STT and TTS.

What Twilio does (shared/spec/providers.md §b.2;
https://www.twilio.com/docs/voice/conversationrelay/websocket-messages): ``setup`` first; it
listens to the caller and sends a ``prompt`` with the transcript once an utterance has ended;
it speaks the ``text`` tokens it receives, in order; when the caller talks over that speech it
stops speaking and sends ``interrupt`` with the text spoken so far and for how long; ``end``
ends the session. No audio crosses the socket.

The emulation hears the caller's script as Twilio would hear the line: each cue's speech is
found with webrtcvad (its first onset to its last end), and once it has ended and
``endpoint_ms`` more passed, the cue's transcript goes out as a ``prompt`` (cues without one
take the next of ``transcripts``). Speech that starts while the bot is speaking interrupts it
``interrupt_after_ms`` later. The bot's speech is paced at ``ms_per_char`` (a tone in the bot
track of ``call.wav``). Pure and synchronous: ``callers/driver.py`` moves the messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.pcm import Samples
from voicegate.callers.line_caller import LineCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telephone import TelephoneLine
from voicegate.errors import RemoteProtocolError
from voicegate.types import TELEPHONE_ULAW
from voicegate.vad import ScorerKind, VadSettings, detect_segments

SAMPLE_RATE = 8000
DEFAULT_CALL_SID = "CA00000000000000000000000000000042"
#: Twilio's speech pace, roughly: 15 characters a second.
DEFAULT_MS_PER_CHAR = 65
#: How long after the caller stops talking Twilio sends the transcript (its endpointing).
DEFAULT_ENDPOINT_MS = 600
#: How long the caller talks over the bot before Twilio stops speaking.
DEFAULT_INTERRUPT_AFTER_MS = 300
_BYTES_PER_MS = TELEPHONE_ULAW.bytes_for_ms(1000) // 1000
# A quiet 500 Hz tone, one period at 8 kHz: what "the bot speaking" sounds like in call.wav.
_TONE = samples_to_ulaw_bytes((3000 * np.sin(2 * np.pi * np.arange(16) / 16)).astype(np.int16))


@dataclass(frozen=True, slots=True)
class Utterance:
    """One thing the caller says: when its speech starts and ends, and its transcript."""

    start_ms: int
    end_ms: int
    text: str


class ConversationRelayCaller(LineCaller):
    """One emulated ConversationRelay session: prompts out, text tokens spoken, interrupts."""

    def __init__(
        self,
        script: CallerScript,
        *,
        call_sid: str = DEFAULT_CALL_SID,
        parameters: Mapping[str, str] | None = None,
        transcripts: Sequence[str] = (),
        quiet_ms: int | None = None,
        ms_per_char: int = DEFAULT_MS_PER_CHAR,
        endpoint_ms: int = DEFAULT_ENDPOINT_MS,
        interrupt_after_ms: int = DEFAULT_INTERRUPT_AFTER_MS,
    ) -> None:
        super().__init__(TelephoneLine(script, TELEPHONE_ULAW, quiet_ms=quiet_ms), call_sid)
        self._parameters = dict(parameters or {})
        self._spare = list(transcripts)
        self._cue_speech = [_speech_span(cue.samples) for cue in script.cues]
        self._prompted: set[int] = set()
        self._interrupted: set[int] = set()
        self._ms_per_char = ms_per_char
        self._endpoint_ms = endpoint_ms
        self._interrupt_after_ms = interrupt_after_ms
        self._reply: list[tuple[int, str]] = []  # (bytes queued after the token, token)
        self._reply_start = 0  # bytes played when the reply in progress began
        self.ended: dict[str, Any] | None = None  # the gateway's `end`, once it came

    def opening(self) -> list[str]:
        """The ``setup`` message."""
        setup = {
            "type": "setup",
            "sessionId": "VX00000000000000000000000000000042",
            "accountSid": "AC00000000000000000000000000000042",
            "parentCallSid": "",
            "callSid": self._call_id,
            "from": "+18005550100",
            "to": "+18005550101",
            "forwardedFrom": "",
            "callType": "PSTN",
            "callerName": "",
            "direction": "inbound",
            "callStatus": "IN-PROGRESS",
            "customParameters": self._parameters,
        }
        return [json.dumps(setup)]

    def closing(self) -> str | None:
        """Nothing: when the caller hangs up Twilio closes the socket."""
        return None

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: speak the bot's text, hear the caller, send what Twilio would."""
        now_ms = self._line.now_ms
        playing_before = self._line.playback.playing
        self._line.tick()
        messages: list[str | bytes] = []
        for index, utterance in self._utterances():
            if (
                index not in self._interrupted
                and now_ms >= utterance.start_ms + self._interrupt_after_ms
            ):
                self._interrupted.add(index)
                if playing_before and self._line.playback.buffered_bytes:
                    messages.append(self._interrupt(now_ms))
            if index not in self._prompted and now_ms >= utterance.end_ms + self._endpoint_ms:
                self._prompted.add(index)
                messages.append(self._prompt(now_ms, utterance.text))
        return messages

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway message (text tokens, play, sendDigits, language, end)."""
        data = _parse(message)
        now_ms = self._line.now_ms
        match data.get("type"):
            case "text":
                self._speak(_field(data, "token", str), now_ms)
                if _field(data, "last", bool):
                    self._line.playback.note(now_ms, "reply_ended")
            case "play":
                self._line.playback.note(now_ms, "play", source=_field(data, "source", str))
            case "sendDigits":
                self._line.playback.note(now_ms, "digits_sent", digits=_field(data, "digits", str))
            case "language":
                self._line.playback.note(now_ms, "language", tts=data.get("ttsLanguage"))
            case "end":
                self.ended = data
                self._line.playback.note(now_ms, "end_received", handoff=data.get("handoffData"))
            case other:
                raise RemoteProtocolError(f"conversationrelay does not accept type {other!r}")
        return []

    def finished(self, deadline_ms: int) -> bool:
        """The session ended, or every utterance was sent and the bot has answered."""
        if self.ended is not None:
            return True
        prompted = len(self._prompted) == len(self._cue_speech)
        return (prompted and self._line.finished(deadline_ms)) or self.now_ms >= deadline_ms

    def tracks(self) -> tuple[Samples, Samples]:
        """The caller's audio and the bot's speech (a tone), 8 kHz PCM16."""
        return self._line.tracks()

    # --- Twilio's side ------------------------------------------------------------------------

    def _utterances(self) -> list[tuple[int, Utterance]]:
        """The cues whose start is known, as utterances on the call's clock."""
        found = []
        playback = self._line.playback
        for index, span in enumerate(self._cue_speech):
            start = self._line.script.start_of(index, playback.bot_started_ms)
            if start is None or span is None:
                continue
            text = self._line.script.cues[index].transcript or self._spare_text(index)
            found.append((index, Utterance(start + span[0], start + span[1], text)))
        return found

    def _spare_text(self, index: int) -> str:
        earlier = sum(1 for cue in self._line.script.cues[:index] if not cue.transcript)
        return self._spare[earlier] if earlier < len(self._spare) else "hello"

    def _speak(self, token: str, now_ms: int) -> None:
        playback = self._line.playback
        if not playback.buffered_bytes:  # a new reply begins
            self._reply, self._reply_start = [], playback.played_bytes
        size = len(token) * self._ms_per_char * _BYTES_PER_MS
        playback.queue_audio((_TONE * (size // len(_TONE) + 1))[:size])
        self._reply.append((playback.queued_bytes, token))
        playback.note(now_ms, "token_received", token=token)

    def _interrupt(self, now_ms: int) -> str:
        """Stop speaking; say what was spoken of the reply and for how long."""
        playback = self._line.playback
        played = playback.played_bytes
        heard = "".join(token for end, token in self._reply if end <= played)
        partial = next(((end, token) for end, token in self._reply if end > played), None)
        if partial is not None:
            start = partial[0] - len(partial[1]) * self._ms_per_char * _BYTES_PER_MS
            chars = max(0, played - start) // (self._ms_per_char * _BYTES_PER_MS)
            heard += partial[1][:chars]
        duration_ms = (played - self._reply_start) // _BYTES_PER_MS
        self._line.clear()
        body = {
            "type": "interrupt",
            "utteranceUntilInterrupt": heard.strip(),
            "durationUntilInterruptMs": duration_ms,
        }
        playback.note(now_ms, "interrupt_sent", heard=heard.strip())
        return json.dumps(body)

    def _prompt(self, now_ms: int, text: str) -> str:
        self._line.playback.note(now_ms, "prompt_sent", text=text)
        return json.dumps({"type": "prompt", "voicePrompt": text, "lang": "en-US", "last": True})


def _speech_span(samples: Samples) -> tuple[int, int] | None:
    """Where a cue's speech starts and ends (ms from the cue's start), by webrtcvad."""
    settings = VadSettings(scorer=ScorerKind.WEBRTC)
    segments = detect_segments(samples, SAMPLE_RATE, settings)
    if not segments:
        return None
    return segments[0].start_ms, segments[-1].end_ms


def _parse(message: str | bytes) -> dict[str, Any]:
    if isinstance(message, bytes):
        raise RemoteProtocolError("conversationrelay takes JSON text frames, not binary")
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"conversationrelay: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("conversationrelay: a message must be a JSON object")
    return data


def _field(data: dict[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise RemoteProtocolError(f"conversationrelay {data.get('type')!r}: {key} is not {kind}")
    return value
