"""Jambonz ``listen`` with bidirectional streaming audio, as a sans-I/O codec.

Wire protocol: shared/spec/providers.md §b.9, checked against the listen verb page
https://docs.jambonz.org/verbs/verbs/listen , the bidirectional-audio article
https://www.jambonz.org/docs/supporting-articles/bidirectional-audio/ and the code that runs it
(jambonz-feature-server ``lib/tasks/listen.js``, jambonz freeswitch-modules
``mod_audio_fork/lws_glue.cpp``). The socket speaks the ``audio.jambonz.org`` subprotocol.
Jambonz's first text frame holds the call's attributes (``callSid``, ``from``, ``to``, ...),
``sampleRate`` and ``mixType``, with the verb's ``metadata`` merged in at the top level; then
binary frames of 16-bit little-endian PCM at ``sampleRate``. With ``passDtmf`` a key press
comes as a text frame ``{"event": "dtmf", "dtmf": "5", "duration": ...}``. With
``bidirectionalAudio.streaming`` the gateway answers with binary PCM at
``bidirectionalAudio.sampleRate`` (voicegate's verb sets it to ``sampleRate``), and text
commands: ``killAudio`` stops playback and drops what is buffered (the flush), ``disconnect``
ends the listen (the hang-up). Jambonz documents no playback acknowledgement, so the gateway
estimates what was heard from its own playout clock (``playback_acks`` is false). There is no
stop message: the stream ends when the socket closes. The socket is drachtio's mod_audio_fork
under the hood, so the shared parts live in :mod:`voicegate.codecs.audio_fork`.
"""

from __future__ import annotations

from collections.abc import Mapping

from voicegate.codecs.audio_fork import DISCONNECT, KILL_AUDIO, AudioForkCodec, check_mono
from voicegate.codecs.base import Capabilities, FrameLimits
from voicegate.codecs.commands import PlayAudio
from voicegate.codecs.events import CallStarted
from voicegate.codecs.wire import JsonObject
from voicegate.errors import ConfigError
from voicegate.types import AudioEncoding, AudioFormat

#: The WebSocket subprotocol Jambonz asks for (listen page).
SUBPROTOCOL = "audio.jambonz.org"
#: Default for ``max_message_bytes``: Jambonz sends 20 ms frames; call attributes are ~1 kB.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
#: listen ``sampleRate`` values the gateway's media layer takes (the verb also offers 64000).
SAMPLE_RATES = (8000, 16000, 24000, 48000)


def jambonz_format(sample_rate: int) -> AudioFormat:
    """L16 at a listen ``sampleRate`` this gateway takes."""
    if sample_rate not in SAMPLE_RATES:
        raise ConfigError(f"jambonz sample_rate must be one of {SAMPLE_RATES}, got {sample_rate}")
    return AudioFormat(AudioEncoding.L16, sample_rate)


def jambonz_capabilities(audio_format: AudioFormat) -> Capabilities:
    """What a Jambonz listen stream can do, carrying ``audio_format`` both ways."""
    return Capabilities(
        dialect="jambonz",
        flush_verb=KILL_AUDIO,
        hangup_verb=DISCONNECT,  # ends the listen; the app's actionHook answer hangs up
        playback_acks=False,  # none documented: the playout clock estimates what was heard
        pause=False,
        dtmf=True,  # with passDtmf
        binary_audio=True,
        inbound_formats=tuple(jambonz_format(rate) for rate in SAMPLE_RATES),
        outbound_format=audio_format,
        # Streamed audio goes into Jambonz's buffer in any size: whole samples only.
        outbound_frames=FrameLimits(min_bytes=2, multiple_of=2),
    )


class JambonzCodec(AudioForkCodec):
    """One Jambonz listen stream: parses its frames and writes audio, killAudio, disconnect."""

    def __init__(
        self,
        call_id: str,
        *,
        sample_rate: int = 8000,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        super().__init__(
            jambonz_capabilities(jambonz_format(sample_rate)),
            call_id,
            max_message_bytes=max_message_bytes,
        )

    def _on_first(self, data: Mapping[str, object]) -> CallStarted:
        """The first text message: call attributes, ``sampleRate``, ``mixType``, metadata."""
        msg = JsonObject(data, "jambonz first message")
        rate = msg.integer("sampleRate")
        if rate not in SAMPLE_RATES:
            raise msg.error("sampleRate", f"must be one of {SAMPLE_RATES}, got {rate}")
        check_mono(msg)
        # callSid in listen.js's CallInfo.toJSON; call_sid is the webhooks' spelling (lenient).
        call_sid = msg.optional_text("callSid") or msg.optional_text("call_sid")
        account = msg.optional_text("accountSid")
        return self._call_started(data, jambonz_format(rate), call_sid, account)

    def _capabilities_for(self, started: CallStarted) -> Capabilities:
        return jambonz_capabilities(started.audio_format)

    def _play(self, command: PlayAudio, payload: bytes) -> list[str | bytes]:
        """Streaming bidirectional audio: the PCM itself, as one binary frame."""
        return [payload]
