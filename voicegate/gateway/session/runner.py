"""The gateway's ``CallRunner``: one session per accepted call, and the recent timelines.

``SessionRunner`` is what the server calls for each accepted connection: it picks the
session kind (a ConversationRelay call is text, not audio, and has its own session in
``gateway/relay_session.py``), runs it to its end, and keeps the timelines of the most recent
calls, bounded in number and in bytes, for the replay tool and the tests to read afterwards.
It holds no per-call state of its own beyond those timelines.
"""

from __future__ import annotations

from voicegate.codecs import Codec
from voicegate.codecs.conversationrelay import ConversationRelayCodec
from voicegate.gateway.relay_session import RelaySession
from voicegate.gateway.session.call import CallSession
from voicegate.gateway.session.settings import CallServices, SessionSettings
from voicegate.gateway.timeline import Timeline
from voicegate.gateway.transport import CallGate, Transport


class SessionRunner:
    """The gateway's ``CallRunner``: one :class:`CallSession` per accepted call.

    Keeps the timelines of the most recent calls (``limits.kept_timelines``, at most
    ``limits.kept_timelines_bytes`` in all) so the replay tool and tests can read what
    happened, and an operator can fetch it after a call.
    """

    def __init__(self, services: CallServices, settings: SessionSettings) -> None:
        self._services = services
        self._settings = settings
        self._timelines: dict[str, tuple[Timeline, int]] = {}
        self._kept_bytes = 0

    async def __call__(self, transport: Transport, codec: Codec, gate: CallGate) -> None:
        """Run one call to its end."""
        session: CallSession | RelaySession
        if isinstance(codec, ConversationRelayCodec):  # text, not audio: its own session
            session = RelaySession(transport, codec, self._services, self._settings, gate)
        else:
            session = CallSession(transport, codec, self._services, self._settings, gate)
        try:
            await session.run()
        finally:
            # A refused stream has no provider id of its own: it must not replace the
            # timeline of the live call it duplicated.
            self._remember(session.call_id or gate.call_id, session.timeline)

    @property
    def services(self) -> CallServices:
        """What every call shares (the engine, the speech engines, media)."""
        return self._services

    @property
    def call_ids(self) -> tuple[str, ...]:
        """The ids of the kept timelines, oldest first."""
        return tuple(self._timelines)

    def timeline(self, call_id: str) -> Timeline | None:
        """The timeline of a recent call (by provider call id, or the gateway's id)."""
        kept = self._timelines.get(call_id)
        return None if kept is None else kept[0]

    def _remember(self, call_id: str, timeline: Timeline) -> None:
        """Keep the latest timelines, bounded in number and in bytes (issue 15 #5)."""
        self._forget(call_id)
        size = len(timeline.to_jsonl())
        self._timelines[call_id] = (timeline, size)
        self._kept_bytes += size
        limits = self._settings.limits
        while self._timelines and (
            len(self._timelines) > limits.kept_timelines
            or self._kept_bytes > limits.kept_timelines_bytes
        ):
            self._forget(next(iter(self._timelines)))

    def _forget(self, call_id: str) -> None:
        kept = self._timelines.pop(call_id, None)
        if kept is not None:
            self._kept_bytes -= kept[1]
