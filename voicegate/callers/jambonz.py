"""The provider side of a Jambonz ``listen`` with bidirectional streaming audio, emulated.

What Jambonz does (shared/spec/providers.md §b.9; the listen verb page
https://docs.jambonz.org/verbs/verbs/listen and jambonz-feature-server ``lib/tasks/listen.js``):
it opens the socket with the ``audio.jambonz.org`` subprotocol, sends one text frame with the
call's attributes, ``sampleRate``, ``mixType`` and the verb's metadata, then one binary frame
of 16-bit little-endian PCM per 20 ms, silence included. Streamed bot audio arrives as binary
frames of any whole number of samples, played in order; ``killAudio`` stops playback and drops
the buffer; ``disconnect`` ends the listen, after which Jambonz closes the socket. Jambonz
sends no playback acknowledgement, so this caller sends none either. The fork's shared
behaviour is in callers/audio_fork.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from voicegate.callers.audio_fork import AudioForkCaller
from voicegate.callers.script import CallerScript
from voicegate.codecs.jambonz import SAMPLE_RATES, SUBPROTOCOL

DEFAULT_CALL_SID = "1a2b3c4d-0000-4000-8000-000000000042"


class JambonzCaller(AudioForkCaller):
    """One emulated Jambonz listen: binary caller audio out, streamed bot audio in, killAudio."""

    #: What the caller's WebSocket asks for (the listen page's subprotocol).
    subprotocols = (SUBPROTOCOL,)
    dialect = "jambonz"

    def __init__(
        self,
        script: CallerScript,
        *,
        call_sid: str = "",  # empty: DEFAULT_CALL_SID
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
    ) -> None:
        super().__init__(
            script, call_sid or DEFAULT_CALL_SID, rates=SAMPLE_RATES, quiet_ms=quiet_ms
        )
        self._metadata = dict(parameters or {})

    def opening(self) -> list[str]:
        """The first text frame: call attributes, sampleRate, mixType, the verb's metadata."""
        first = {
            "sampleRate": self.sample_rate,
            "mixType": "mono",
            "callSid": self.call_id,
            "direction": "inbound",
            "from": "15550100042",
            "to": "15550100043",
            "callStatus": "in-progress",
            "accountSid": "jambonz-emulated-account",
            **self._metadata,
        }
        return [json.dumps(first)]

    def _play_binary(self, message: bytes) -> None:
        """Streamed bot audio: played after what is queued."""
        self._line.playback.queue_audio(self._whole_samples(message))
