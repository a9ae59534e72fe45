"""What every emulated telephone caller exposes about its line, written once.

A provider's caller (callers/exotel.py, ...) writes and reads only its own messages; the
clock, the playback buffer, both tracks and the hang-up decision live in its
:class:`TelephoneLine`, and this base class reads them out for drivers, reports and tests.
"""

from __future__ import annotations

from typing import Any

from voicegate.audio.pcm import Samples
from voicegate.callers.telephone import TelephoneLine


class LineCaller:
    """The properties every emulated caller shares, read off its telephone line."""

    def __init__(self, line: TelephoneLine, call_id: str) -> None:
        self._line = line
        self._call_id = call_id

    @property
    def call_id(self) -> str:
        """The provider's id of the call: the gateway's id for it."""
        return self._call_id

    @property
    def sample_rate(self) -> int:
        """The rate the line streams at."""
        return self._line.wire.sample_rate

    @property
    def now_ms(self) -> int:
        """Media time of the next frame."""
        return self._line.now_ms

    @property
    def bot_started_ms(self) -> list[int]:
        """Media times at which bot audio began playing."""
        return self._line.playback.bot_started_ms

    @property
    def clears(self) -> list[int]:
        """Media times at which the provider's flush verb arrived."""
        return self._line.playback.clears

    @property
    def observed(self) -> list[dict[str, Any]]:
        """The caller-side timeline (docs/timeline.md)."""
        return self._line.observed

    @property
    def bot_track(self) -> bytearray:
        """What the caller heard of the bot, in the wire encoding, one frame per tick."""
        return self._line.bot_track

    def finished(self, deadline_ms: int) -> bool:
        """The script has played out and the bot is done (or the deadline passed)."""
        return self._line.finished(deadline_ms)

    def tracks(self) -> tuple[Samples, Samples]:
        """Caller and bot audio as the caller's side experienced them, PCM16."""
        return self._line.tracks()
