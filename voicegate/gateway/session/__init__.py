"""One call: codec events in, barge-in decisions, engine turns, paced bot audio out.

Design §2 and §4 to §6. A ``CallSession`` (``call.py``) owns one ``asyncio.TaskGroup``: the
receive loop (the call's media clock: every inbound 20 ms frame advances ``now_ms``), the
transcript reader, and at most one turn task at a time. The barge-in machine decides; the
session only executes its actions. A confirmed interruption cancels the turn task (the
running tool sees ``CancelledError``), bumps the epoch so no audio of the old turn is sent,
flushes the provider with its own verb and reports to the engine what the caller actually
heard. The package is split by responsibility, each part with explicit collaborators:

- ``settings.py``: ``SessionSettings`` and ``CallServices``, what a session is built from;
- ``runner.py``: ``SessionRunner``, a session per accepted call, and the recent timelines;
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

from voicegate.gateway.session.call import CallSession
from voicegate.gateway.session.runner import SessionRunner
from voicegate.gateway.session.settings import CallServices, SessionSettings

__all__ = ["CallServices", "CallSession", "SessionRunner", "SessionSettings"]
