"""FreeSWITCH with drachtio's ``mod_audio_fork``, as a sans-I/O codec.

Wire protocol: shared/spec/providers.md §b.9, checked against the module's README
(https://github.com/drachtio/drachtio-freeswitch-modules , ``modules/mod_audio_fork/README.md``)
and the code behind it (``lws_glue.cpp``, ``audio_pipe.cpp``, ``mod_audio_fork.c``).
``uuid_audio_fork <uuid> start <wss-url> <mono|mixed|stereo> <8k|16k> <metadata>`` opens the
socket with the ``audio.drachtio.org`` subprotocol (README, MOD_AUDIO_FORK_SUBPROTOCOL_NAME),
sends ``metadata`` as the first text frame ("immediately upon connecting") and then binary
frames of 16-bit PCM at the fork's rate. Without a metadata argument nothing precedes the
audio (lws_glue.cpp sends the text frame only when it is not empty), so a binary first frame
starts the call with no metadata. ``uuid_audio_fork <uuid> stop`` may send one last text frame,
and a graceful shutdown sends a zero-length binary frame (audio_pipe.cpp): both are ignored.

The metadata is the user's text; voicegate asks for a JSON object (docs/protocols/freeswitch.md
gives the dialplan) and reads three keys of it: ``uuid`` (the channel, the call's id; the
README's example calls it ``callid``), ``sampleRate`` (the fork's rate when it is not the
configured one) and ``mixType`` (must be mono). The rest is the call's metadata.

Bot audio goes back as ``{"type":"playAudio","data":{"audioContentType":"raw","sampleRate":N,
"audioContent":base64}}``: the module writes each one to a temporary file and raises
``mod_audio_fork::play_audio`` with its path; the application plays it (README, "audio").
``killAudio`` stops the file playing (lws_glue.cpp sets CF_BREAK), ``disconnect`` raises
``mod_audio_fork::disconnect`` and the application hangs up (README: the module "does not
close the Freeswitch channel"); ``transfer`` raises ``mod_audio_fork::transfer`` with its
data, and the application transfers the call. There is no playback acknowledgement, so the gateway
estimates what was heard from its own playout clock (``playback_acks`` is false). DTMF is not
part of the module: a FreeSWITCH hook may forward it with ``uuid_audio_fork <uuid> send_text``
as ``{"event":"dtmf","dtmf":"5"}`` (README, send_text), the shape Jambonz uses.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from voicegate.codecs.audio_fork import DISCONNECT, KILL_AUDIO, AudioForkCodec, check_mono
from voicegate.codecs.base import CallPhase, Capabilities, FrameLimits
from voicegate.codecs.commands import PlayAudio
from voicegate.codecs.events import CallStarted, Event
from voicegate.codecs.wire import JsonObject
from voicegate.errors import ConfigError
from voicegate.types import AudioEncoding, AudioFormat

#: mod_audio_fork's default subprotocol (README, MOD_AUDIO_FORK_SUBPROTOCOL_NAME).
SUBPROTOCOL = "audio.drachtio.org"
#: The fork's ``<sampling-rate>`` choices the README documents: ``8k`` and ``16k``.
SAMPLE_RATES = (8000, 16000)
#: mod_audio_fork batches what queued while its socket was busy into one frame, up to its
#: buffer (MOD_AUDIO_FORK_BUFFER_SECS, 2 s by default: 64 kB at 16 kHz); metadata is ≤ 8 kB.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024
#: Bot audio per ``playAudio``, i.e. per temporary file FreeSWITCH plays (docs: "Chunk size").
DEFAULT_CHUNK_MS = 200
CHUNK_MS_RANGE = (20, 1000)


#: The verb of a transfer, for the timeline (its ``data`` carries the destination).
TRANSFER = '{"type":"transfer"}'


def freeswitch_format(sample_rate: int) -> AudioFormat:
    """L16 at a fork rate this gateway takes."""
    if sample_rate not in SAMPLE_RATES:
        raise ConfigError(
            f"freeswitch sample_rate must be one of {SAMPLE_RATES}, got {sample_rate}"
        )
    return AudioFormat(AudioEncoding.L16, sample_rate)


def freeswitch_capabilities(audio_format: AudioFormat, chunk_ms: int) -> Capabilities:
    """What a mod_audio_fork socket can do, carrying ``audio_format`` both ways."""
    low, high = CHUNK_MS_RANGE
    if not low <= chunk_ms <= high or chunk_ms % 20:
        raise ConfigError(f"freeswitch chunk_ms must be whole 20 ms frames in {low}..{high}")
    return Capabilities(
        dialect="freeswitch",
        flush_verb=KILL_AUDIO,
        hangup_verb=DISCONNECT,  # the application's disconnect hook hangs up
        playback_acks=False,  # none exists: the playout clock estimates what was heard
        pause=False,
        dtmf=True,  # when the dialplan forwards it with send_text (docs/protocols)
        binary_audio=False,  # bot audio travels base64 in playAudio JSON
        inbound_formats=tuple(freeswitch_format(rate) for rate in SAMPLE_RATES),
        outbound_format=audio_format,
        # Each playAudio becomes a file: min_bytes is the chunk the session's playout pace
        # sends (playout.provider_pace lifts its chunk to it and keeps two in flight), so a
        # call-second of speech is 1000/chunk_ms files. An utterance's last chunk is shorter;
        # a file of any whole number of samples plays, so send() checks only for that.
        outbound_frames=FrameLimits(min_bytes=audio_format.bytes_for_ms(chunk_ms), multiple_of=2),
        transfer_verb=TRANSFER,  # the README's `transfer`, for the dialplan's hook (_ending)
    )


class FreeSwitchCodec(AudioForkCodec):
    """One mod_audio_fork socket: parses the fork's frames, writes playAudio and killAudio."""

    def __init__(
        self,
        call_id: str,
        *,
        sample_rate: int = 8000,
        chunk_ms: int = DEFAULT_CHUNK_MS,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        super().__init__(
            freeswitch_capabilities(freeswitch_format(sample_rate), chunk_ms),
            call_id,
            max_message_bytes=max_message_bytes,
        )
        self._chunk_ms = chunk_ms

    def _binary(self, payload: bytes) -> list[Event]:
        """Caller audio; the graceful shutdown's empty frame; audio with no metadata first."""
        if not payload:
            return []  # audio_pipe.cpp: "sending zero length binary frame to flush"
        if self.phase is not CallPhase.AWAITING_START:
            return super()._binary(payload)
        # No metadata argument: the fork sends audio at once, at the configured rate.
        self._check_samples(payload)  # before starting: a rejected frame changes nothing
        started = self._on_first({})
        self._begin(started)
        return [started, self._pcm(payload)]

    def _on_first(self, data: Mapping[str, object]) -> CallStarted:
        """The metadata: a JSON object (docs/protocols/freeswitch.md), or none at all."""
        msg = JsonObject(data, "freeswitch metadata")
        rate = msg.optional_integer("sampleRate")
        if rate is None:
            rate = self._capabilities.outbound_format.sample_rate
        elif rate not in SAMPLE_RATES:
            raise msg.error("sampleRate", f"must be one of {SAMPLE_RATES}, got {rate}")
        check_mono(msg)
        call_id = msg.optional_text("uuid") or msg.optional_text("callid")
        return self._call_started(data, freeswitch_format(rate), call_id)

    def _capabilities_for(self, started: CallStarted) -> Capabilities:
        return freeswitch_capabilities(started.audio_format, self._chunk_ms)

    def _ending(self, transfer_to: str) -> dict[str, object]:
        """``disconnect``; for a transfer, ``transfer`` with the destination.

        The README's ``transfer`` carries any JSON ``data`` to the application's
        ``mod_audio_fork::transfer`` event; docs/protocols/freeswitch.md's hook passes
        ``destination`` to ``uuid_transfer``.
        """
        if not transfer_to:
            return {"type": "disconnect"}
        return {"type": "transfer", "data": {"destination": transfer_to}}

    def _play(self, command: PlayAudio, payload: bytes) -> list[str | bytes]:
        """One ``playAudio``: raw L16 at the call's rate, base64 (README, "audio")."""
        data = {
            "audioContentType": "raw",
            "sampleRate": self._capabilities.outbound_format.sample_rate,
            "audioContent": base64.b64encode(payload).decode("ascii"),
        }
        return self._json(command, {"type": "playAudio", "data": data})
