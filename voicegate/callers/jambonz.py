"""The provider side of a Jambonz ``listen`` with bidirectional streaming audio, emulated.

What Jambonz does (shared/spec/providers.md §b.9; the listen verb page
https://docs.jambonz.org/verbs/verbs/listen and jambonz-feature-server ``lib/tasks/listen.js``):
it opens the socket with the ``audio.jambonz.org`` subprotocol, sends one text frame with the
call's attributes, ``sampleRate``, ``mixType`` and the verb's metadata, then one binary frame
of 16-bit little-endian PCM per 20 ms, silence included. Streamed bot audio arrives as binary
frames of any whole number of samples, played in order; ``killAudio`` stops playback and drops
the buffer; ``disconnect`` ends the listen, after which Jambonz closes the socket. Jambonz
sends no playback acknowledgement, so this caller sends none either.

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from voicegate.callers.line_caller import LineCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telephone import TelephoneLine
from voicegate.codecs.jambonz import SAMPLE_RATES, SUBPROTOCOL
from voicegate.errors import RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat

DEFAULT_CALL_SID = "1a2b3c4d-0000-4000-8000-000000000042"


class JambonzCaller(LineCaller):
    """One emulated Jambonz listen: binary caller audio out, streamed bot audio in, killAudio."""

    #: What the caller's WebSocket asks for (the listen page's subprotocol).
    subprotocols = (SUBPROTOCOL,)

    def __init__(
        self,
        script: CallerScript,
        *,
        call_sid: str = "",  # empty: DEFAULT_CALL_SID
        parameters: Mapping[str, str] | None = None,
        quiet_ms: int | None = None,
    ) -> None:
        if script.sample_rate not in SAMPLE_RATES:
            raise ValueError(f"a Jambonz caller streams L16 at one of {SAMPLE_RATES} Hz")
        wire = AudioFormat(AudioEncoding.L16, script.sample_rate)
        line = TelephoneLine(script, wire, quiet_ms=quiet_ms)
        super().__init__(line, call_sid or DEFAULT_CALL_SID)
        self._metadata = dict(parameters or {})
        self.disconnected_ms: int | None = None  # when the gateway sent disconnect

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

    def closing(self) -> None:
        """Jambonz sends no stop: the listen ends when the socket closes."""
        return None

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, send 20 ms of caller audio."""
        frame, _ = self._line.tick()
        return [frame]

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway message; Jambonz never answers at once."""
        if isinstance(message, bytes):
            if not message or len(message) % 2:
                raise RemoteProtocolError(f"jambonz: {len(message)} bytes is not whole samples")
            self._line.playback.queue_audio(message)
            return []
        match _parse(message).get("type"):
            case "killAudio":
                self._line.clear()
            case "disconnect":
                self.disconnected_ms = self._line.now_ms
                self._line.playback.note(self._line.now_ms, "disconnect_received")
            case other:
                raise RemoteProtocolError(f"jambonz does not accept type {other!r} here")
        return []

    def finished(self, deadline_ms: int) -> bool:
        """The script and the bot are done, or the gateway ended the listen."""
        return self.disconnected_ms is not None or super().finished(deadline_ms)


def _parse(message: str) -> dict[str, Any]:
    try:
        data = json.loads(message)
    except json.JSONDecodeError as error:
        raise RemoteProtocolError(f"jambonz: not JSON: {error}") from error
    if not isinstance(data, dict):
        raise RemoteProtocolError("jambonz: a text frame must be a JSON object")
    return data
