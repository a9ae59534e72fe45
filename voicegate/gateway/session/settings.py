"""What a call session is built from: its settings and the services every call shares.

``SessionSettings`` is the per-call behaviour the CLI reads from config/voicegate.yml (frame
length, playout pace, barge-in policy, limits, the gateway's own apologies); ``CallServices`` is
the shared object graph (the dialogue engine, STT, TTS, the media factory, the call registry,
end of turn, call control). Both are frozen and built once at the edge (design §7), so every
part of a session reads them and none can change them; they live apart from the session so
that those parts (and relay_session.py) can name them without importing the session itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from voicegate.engine.seam import DialogueEngine
from voicegate.gateway import bargein
from voicegate.gateway.call_ending import CallControl
from voicegate.gateway.limits import Limits
from voicegate.gateway.media import MediaFactory
from voicegate.gateway.timeline import Record
from voicegate.gateway.transport import CallLeases
from voicegate.speech.ports import SpeechToText, TextToSpeech
from voicegate.turns.tracker import TurnFactory


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """Per-call behaviour (built from config/voicegate.yml by the CLI)."""

    frame_ms: int = 20
    #: Spoken when the synthesiser fails in the middle of a turn (the turn ends there).
    apology: str = "Sorry, I am having trouble speaking right now. Please try again."
    send_ahead_ms: int = 500
    #: Bot audio per outbound media message (at most half of send_ahead_ms; see playout.py).
    chunk_ms: int = 200
    barge_in: bargein.BargeInPolicy = field(default_factory=bargein.BargeInPolicy)
    limits: Limits = field(default_factory=Limits)
    #: Spoken when a turn ends in error (e.g. the model failed): the caller is not left in
    #: silence, and the call goes on (issue 18). "": say nothing.
    error_response: str = "Sorry, I could not get that. Could you say it again?"


@dataclass(frozen=True, slots=True)
class CallServices:
    """What every call shares: the engine, the speech engines and the media factory."""

    engine: DialogueEngine
    stt: SpeechToText
    tts: TextToSpeech
    media: MediaFactory
    # Makes one more timeline listener per call (gateway/metrics.py), e.g. for metrics.
    observer: Callable[[], Callable[[Record], None]] | None = None
    #: One live session per provider call id across every node (issue 13; Redis), if set.
    leases: CallLeases | None = None
    #: End of turn and echo gate (issue 14); the default keeps a VAD pause as the end of turn.
    turns: TurnFactory = field(default_factory=TurnFactory)
    #: Hangs up and transfers through the providers' APIs (issue 16); None: the socket only.
    call_control: CallControl | None = None
