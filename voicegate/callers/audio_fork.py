"""What an emulated mod_audio_fork client does, shared by the Jambonz and FreeSWITCH callers.

Both providers run drachtio's ``mod_audio_fork`` (codecs/audio_fork.py): one text frame of
metadata, then one binary frame of 16-bit little-endian PCM per 20 ms, silence included;
``killAudio`` stops playback and drops what is queued; ``disconnect`` ends the fork, after
which the provider closes the socket. Neither sends a playback acknowledgement. A provider's
caller writes its first message and reads its bot audio; the rest lives here.

Pure and synchronous: a driver (``callers/driver.py``) moves the messages over a WebSocket.
"""

from __future__ import annotations

import json
from typing import Any

from voicegate.callers.line_caller import LineCaller
from voicegate.callers.script import CallerScript
from voicegate.callers.telephone import TelephoneLine
from voicegate.errors import RemoteProtocolError
from voicegate.types import AudioEncoding, AudioFormat


class AudioForkCaller(LineCaller):
    """One emulated fork: binary caller audio out; killAudio and disconnect honoured."""

    dialect = "audio fork"
    #: What the caller's WebSocket asks for (the provider's subprotocol).
    subprotocols: tuple[str, ...] = ()

    def __init__(
        self,
        script: CallerScript,
        call_id: str,
        *,
        rates: tuple[int, ...],
        quiet_ms: int | None = None,
    ) -> None:
        if script.sample_rate not in rates:
            raise ValueError(f"a {self.dialect} caller streams L16 at one of {rates} Hz")
        wire = AudioFormat(AudioEncoding.L16, script.sample_rate)
        super().__init__(TelephoneLine(script, wire, quiet_ms=quiet_ms), call_id)
        self.disconnected_ms: int | None = None  # when the gateway sent disconnect

    def closing(self) -> None:
        """No stop message: the fork ends when the socket closes."""
        return None

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, send 20 ms of caller audio."""
        frame, _ = self._line.tick()
        return [frame]

    def receive(self, message: str | bytes) -> list[str]:
        """Take one gateway message; the fork never answers at once."""
        if isinstance(message, bytes):
            self._play_binary(message)
            return []
        data = self._parse(message)
        match data.get("type"):
            case "killAudio":
                self._line.clear()
            case "disconnect":
                self.disconnected_ms = self._line.now_ms
                self._line.playback.note(self._line.now_ms, "disconnect_received")
            case other:
                self._command(other, data)
        return []

    def finished(self, deadline_ms: int) -> bool:
        """The script and the bot are done, or the gateway ended the fork."""
        return self.disconnected_ms is not None or super().finished(deadline_ms)

    def _play_binary(self, message: bytes) -> None:
        """Bot audio in a binary frame (Jambonz's streaming mode); refused by default."""
        raise RemoteProtocolError(f"{self.dialect}: a binary frame of {len(message)} bytes")

    def _command(self, kind: object, data: dict[str, Any]) -> None:
        """A text command other than killAudio and disconnect."""
        raise RemoteProtocolError(f"{self.dialect} does not accept type {kind!r} here")

    def _whole_samples(self, payload: bytes) -> bytes:
        if not payload or len(payload) % 2:
            raise RemoteProtocolError(f"{self.dialect}: {len(payload)} bytes is not whole samples")
        return payload

    def _parse(self, message: str) -> dict[str, Any]:
        try:
            data = json.loads(message)
        except json.JSONDecodeError as error:
            raise RemoteProtocolError(f"{self.dialect}: not JSON: {error}") from error
        if not isinstance(data, dict):
            raise RemoteProtocolError(f"{self.dialect}: a text frame must be a JSON object")
        return data
