"""The provider side of FreeSWITCH's ``mod_audio_fork``, emulated with its playback dialplan.

What FreeSWITCH does (shared/spec/providers.md §b.9; drachtio-freeswitch-modules
``modules/mod_audio_fork/README.md``, ``lws_glue.cpp``) with the hooks of
docs/protocols/freeswitch.md: ``uuid_audio_fork <uuid> start <url> mono 8k <metadata>`` opens
the socket with the ``audio.drachtio.org`` subprotocol and sends the metadata as the first text
frame, then one binary frame of 16-bit PCM per 20 ms, silence included. Each ``playAudio``
becomes a file the channel plays after the ones before it (the play_audio hook's
``uuid_broadcast``); ``killAudio`` stops the file playing (CF_BREAK) and the kill_audio hook's
``uuid_break <uuid> all`` drops the queued ones; ``disconnect`` makes the disconnect hook hang
up and ``transfer`` the transfer hook ``uuid_transfer`` the call, and FreeSWITCH closes the
socket. Nothing is acknowledged. The fork's shared behaviour is
in callers/audio_fork.py.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from voicegate.callers.audio_fork import AudioForkCaller
from voicegate.callers.script import CallerScript
from voicegate.codecs.freeswitch import SAMPLE_RATES, SUBPROTOCOL
from voicegate.errors import RemoteProtocolError

DEFAULT_UUID = "7f4de4bc-4a5c-11ef-8e4b-0242ac120042"


class FreeSwitchCaller(AudioForkCaller):
    """One emulated fork: binary caller audio out, playAudio files played in order, killAudio."""

    #: What mod_audio_fork advertises by default (README, MOD_AUDIO_FORK_SUBPROTOCOL_NAME).
    subprotocols = (SUBPROTOCOL,)
    dialect = "freeswitch"

    def __init__(
        self,
        script: CallerScript,
        *,
        uuid: str = "",  # empty: DEFAULT_UUID
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
    ) -> None:
        super().__init__(script, uuid or DEFAULT_UUID, rates=SAMPLE_RATES, quiet_ms=quiet_ms)
        self._metadata = dict(parameters or {})
        self.files = 0  # playAudio messages played, one temporary file each
        self.transferred_to = ""  # where the transfer hook sent the call

    def opening(self) -> list[str]:
        """The metadata argument of docs/protocols/freeswitch.md's dialplan, as its first frame."""
        first = {
            "uuid": self.call_id,
            "from": "1000",
            "to": "9196",
            "sampleRate": self.sample_rate,
            "mixType": "mono",
            **self._metadata,
        }
        return [json.dumps(first, separators=(",", ":"))]

    def _command(self, kind: object, data: dict[str, Any]) -> None:
        if kind == "transfer":
            self._transfer(data)
            return
        if kind != "playAudio":
            super()._command(kind, data)
        audio = data.get("data")
        if not isinstance(audio, dict):
            raise RemoteProtocolError("freeswitch: playAudio without a data object")
        if audio.get("audioContentType") != "raw" or audio.get("sampleRate") != self.sample_rate:
            raise RemoteProtocolError(
                f"freeswitch: this channel plays raw L16 at {self.sample_rate} Hz, got "
                f"{audio.get('audioContentType')!r} at {audio.get('sampleRate')!r}"
            )
        try:
            payload = base64.b64decode(str(audio.get("audioContent")), validate=True)
        except binascii.Error as error:
            raise RemoteProtocolError(f"freeswitch: audioContent is not base64: {error}") from error
        self._line.playback.queue_audio(self._whole_samples(payload))
        self.files += 1

    def _transfer(self, data: dict[str, Any]) -> None:
        """The transfer hook's ``uuid_transfer``: the call leaves the fork for the destination."""
        target = data.get("data")
        destination = target.get("destination") if isinstance(target, dict) else None
        if not isinstance(destination, str) or not destination:
            raise RemoteProtocolError("freeswitch: transfer without data.destination")
        self.transferred_to = destination
        self.disconnected_ms = self._line.now_ms
        self._line.playback.note(self._line.now_ms, "transfer_received", destination=destination)
