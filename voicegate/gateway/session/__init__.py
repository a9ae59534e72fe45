"""One call: codec events in, barge-in decisions, engine turns, paced bot audio out.

Design §2 and §4 to §6. A ``CallSession`` (``call.py``) owns one ``asyncio.TaskGroup``: the
receive loop (the call's media clock: every inbound 20 ms frame advances ``now_ms``), the
transcript reader, and at most one turn task at a time. The barge-in machine decides; the
session only executes its actions. A confirmed interruption cancels the turn task (the
running tool sees ``CancelledError``), bumps the epoch so no audio of the old turn is sent,
flushes the provider with its own verb and reports to the engine what the caller actually
heard. The package is split by responsibility, each part with explicit collaborators:

- ``settings.py``: ``SessionSettings`` and ``CallServices``, what a session is built from;
- here: ``SessionRunner``, a session per accepted call, and the recent timelines;
- ``call.py``: ``CallSession``, the call's lifetime (admission, receive loop, cleanup);
- ``wiring.py``: ``CallParts``, the parts of an admitted call, built and connected;
- ``clock.py``: the media clock and the timeline stamped with it;
- ``inbound.py``: frames through the recogniser, the VAD and the turn tracker; transcripts;
- ``reactions.py``: the barge-in machine stepped and its actions carried out;
- ``turn_runner.py``: the dialogue hand-off, the engine's turns as tasks and their events;
- ``speculator.py``: the speculative turn, started at a pause, confirmed or dropped;
- ``outbound.py``: commands to the peer, speech synthesised and paced out, marks, flushes;
- ``heard.py``: what the caller heard, told to the engine;
- ``ending.py``: the engine's ``EndCall``, carried out once the goodbye was heard.
"""

from __future__ import annotations

from voicegate.codecs import Codec
from voicegate.codecs.conversationrelay import ConversationRelayCodec
from voicegate.gateway.relay_session import RelaySession
from voicegate.gateway.session.call import CallSession
from voicegate.gateway.session.settings import CallServices, SessionSettings
from voicegate.gateway.timeline import Timeline
from voicegate.gateway.transport import CallGate, Transport

__all__ = ["CallServices", "CallSession", "SessionRunner", "SessionSettings"]


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
