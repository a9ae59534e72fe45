"""The barge-in machine: who holds the floor, and when the caller's speech interrupts the bot.

Design §5. Pure and table-driven: ``step(state, event, policy) -> (state, actions)``. The call
session feeds it VAD, transcript, turn and playout events stamped with media time, and executes
the actions it returns (start or cancel a turn, pause, resume or flush playout). Nothing here
awaits, sleeps or reads a clock: timers are checked on :class:`Tick` events, so a recorded call
replays with identical decisions at any speed (design §6).

Phases::

    IDLE ──speech──► USER_SPEAKING ──final transcript + speech ended──► BOT_THINKING
    BOT_THINKING ──playout started──► BOT_SPEAKING ──caller speech──► PAUSED
    PAUSED ──confirmed──► USER_SPEAKING (turn cancelled, epoch bumped, provider flushed)
    PAUSED ──false-interruption timeout──► BOT_SPEAKING (playout resumed)

An interruption is *confirmed* when the caller's speech has lasted ``min_speech_ms`` since its
onset and, if ``min_words`` is set, an interim or final transcript holds that many words that
are not backchannels ("uh-huh" never interrupts).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from voicegate.types import MediaMs


class Phase(enum.Enum):
    """Who holds the floor."""

    IDLE = "idle"
    USER_SPEAKING = "user_speaking"
    BOT_THINKING = "bot_thinking"
    BOT_SPEAKING = "bot_speaking"
    PAUSED = "paused"


DEFAULT_BACKCHANNELS = frozenset(
    {"uh-huh", "uh", "huh", "mhm", "mm", "hmm", "um", "yeah", "yep", "ok", "okay", "right"}
)


@dataclass(frozen=True, slots=True)
class BargeInPolicy:
    """When caller speech interrupts the bot (``barge_in`` in config/voicegate.yml)."""

    min_speech_ms: int = 200
    min_words: int = 0
    interrupt_while_thinking: bool = True
    interrupt_while_speaking: bool = True
    backchannels: frozenset[str] = DEFAULT_BACKCHANNELS
    false_interruption_timeout_ms: int = 1500
    # Echo guard: speech that starts within this long after bot audio starts is more likely
    # the bot's own echo than the caller, so it needs this much extra speech to confirm.
    echo_guard_ms: int = 0
    # Issue 14 §3: at detection, clear the provider's buffer as well as pausing, so the
    # caller stops hearing the bot at once; a false interruption resumes from the first
    # unheard sample. False: only stop sending (the provider plays out what it holds).
    flush_on_detection: bool = True


# --- inputs -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpeechStarted:
    """The VAD detected caller speech; ``onset_ms`` is its first frame."""

    now_ms: MediaMs
    onset_ms: MediaMs


@dataclass(frozen=True, slots=True)
class SpeechEnded:
    """The end of caller speech was declared at ``now_ms``; the speech stopped at ``end_ms``.

    The two differ by the silence that proved it (the VAD's pause, and the end-of-turn wait):
    a candidate interruption is measured to ``end_ms``, so that wait never lengthens it.
    """

    now_ms: MediaMs
    end_ms: MediaMs | None = None


@dataclass(frozen=True, slots=True)
class Transcript:
    """An interim or final transcript of the caller's current utterance."""

    now_ms: MediaMs
    text: str
    final: bool


@dataclass(frozen=True, slots=True)
class Dtmf:
    """The caller pressed keys; DTMF always interrupts an interruptible bot."""

    now_ms: MediaMs
    digits: str


@dataclass(frozen=True, slots=True)
class AgentFirst:
    """The call connected and the agent speaks first: a turn with this input (contract §5.7)."""

    now_ms: MediaMs
    text: str


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn task finished on its own (not cancelled by this machine)."""

    now_ms: MediaMs


@dataclass(frozen=True, slots=True)
class PlayoutStarted:
    """Bot audio began playing; ``interruptible`` is False for uninterruptible utterances."""

    now_ms: MediaMs
    interruptible: bool = True


@dataclass(frozen=True, slots=True)
class PlayoutDrained:
    """Every queued bot utterance has been played."""

    now_ms: MediaMs


@dataclass(frozen=True, slots=True)
class Tick:
    """Media time advanced; timers are checked here."""

    now_ms: MediaMs


Event = (
    SpeechStarted
    | SpeechEnded
    | Transcript
    | Dtmf
    | AgentFirst
    | TurnEnded
    | PlayoutStarted
    | PlayoutDrained
    | Tick
)

# --- outputs ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartTurn:
    """Run an engine turn with this user input."""

    text: str = ""
    dtmf: str = ""


@dataclass(frozen=True, slots=True)
class CancelTurn:
    """A confirmed interruption: cancel the turn task and flush the provider."""

    epoch: int
    onset_ms: MediaMs
    confirmed_ms: MediaMs
    reason: str


@dataclass(frozen=True, slots=True)
class PausePlayout:
    """Possible interruption: stop sending bot audio; with ``flush``, clear what the provider
    holds too (kept to resume from its first unheard sample)."""

    flush: bool = False


@dataclass(frozen=True, slots=True)
class ResumePlayout:
    """A false interruption: carry on speaking where playout stopped."""


Action = StartTurn | CancelTurn | PausePlayout | ResumePlayout

# --- state ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """Caller speech heard while the bot holds the floor, not yet confirmed."""

    onset_ms: MediaMs
    ended_ms: MediaMs | None = None
    words: int = 0
    needed_ms: int = 0


@dataclass(frozen=True, slots=True)
class BargeInState:
    """Everything the machine remembers between events."""

    phase: Phase = Phase.IDLE
    epoch: int = 0
    turn_running: bool = False
    playing: bool = False
    interruptible: bool = True
    user_speaking: bool = False
    playout_started_ms: MediaMs | None = None
    candidate: Candidate | None = None
    pending_text: tuple[str, ...] = field(default=())


Step = tuple[BargeInState, list[Action]]
Handler = Callable[[BargeInState, "Event", BargeInPolicy], Step]


def step(state: BargeInState, event: Event, policy: BargeInPolicy) -> Step:
    """Apply one event; return the new state and the actions the session must execute."""
    handler = _TABLE.get((state.phase, type(event)), _bookkeeping)
    return handler(state, event, policy)


def needs_tick(state: BargeInState) -> bool:
    """Whether a :class:`Tick` could change anything: only a pending candidate has timers.

    The session skips the Tick of every other frame (most frames of a call), which saves an
    event, a step and a list per 20 ms (bench/media_cost.py).
    """
    return state.candidate is not None and state.phase in _BOT_PHASES


# --- helpers ----------------------------------------------------------------------------------


def count_words(text: str, policy: BargeInPolicy) -> int:
    """Words in ``text`` that are not backchannels."""
    words = (w.strip(".,!?;:").lower() for w in text.split())
    return sum(1 for w in words if w and w not in policy.backchannels)


def _bot_phase(state: BargeInState) -> Phase:
    if state.playing:
        return Phase.BOT_SPEAKING
    return Phase.BOT_THINKING if state.turn_running else Phase.IDLE


def _start_turn_if_ready(state: BargeInState) -> Step:
    """A turn starts once the caller stopped speaking and a final transcript is in."""
    if state.user_speaking or not state.pending_text or state.turn_running:
        return state, []
    text = " ".join(state.pending_text)
    started = replace(state, phase=Phase.BOT_THINKING, turn_running=True, pending_text=())
    return started, [StartTurn(text=text)]


def _interrupt(state: BargeInState, now_ms: MediaMs, reason: str) -> Step:
    assert state.candidate is not None
    cancel = CancelTurn(state.epoch + 1, state.candidate.onset_ms, now_ms, reason)
    interrupted = replace(
        state,
        phase=Phase.USER_SPEAKING if state.user_speaking else Phase.IDLE,
        epoch=state.epoch + 1,
        turn_running=False,
        playing=False,
        candidate=None,
    )
    return interrupted, [cancel]


def _may_interrupt(state: BargeInState, policy: BargeInPolicy) -> bool:
    if state.phase is Phase.BOT_THINKING:
        return policy.interrupt_while_thinking
    return policy.interrupt_while_speaking and state.interruptible


# --- handlers ---------------------------------------------------------------------------------


def _bookkeeping(state: BargeInState, event: Event, policy: BargeInPolicy) -> Step:
    """Events that change flags but not, by themselves, interrupt anyone."""
    match event:
        case SpeechStarted():
            return replace(state, user_speaking=True), []
        case SpeechEnded():
            return _start_turn_if_ready(replace(state, user_speaking=False))
        case Transcript(text=text, final=True) if text.strip():
            return _start_turn_if_ready(replace(state, pending_text=(*state.pending_text, text)))
        case TurnEnded():
            return _on_turn_ended(state), []
        case PlayoutStarted(now_ms=now, interruptible=interruptible):
            return _on_playout_started(state, now, interruptible, policy)
        case PlayoutDrained():
            return _on_playout_drained(state), []
        case Dtmf(digits=digits) if not state.turn_running:
            started = replace(state, phase=Phase.BOT_THINKING, turn_running=True)
            return started, [StartTurn(dtmf=digits)]
        case AgentFirst(text=text) if state.phase is Phase.IDLE and not state.turn_running:
            # A caller who already started talking keeps the floor: their turn comes first.
            started = replace(state, phase=Phase.BOT_THINKING, turn_running=True)
            return started, [StartTurn(text=text)]
    return state, []


def _on_turn_ended(state: BargeInState) -> BargeInState:
    ended = replace(state, turn_running=False)
    if state.phase is Phase.BOT_THINKING and state.candidate is None:
        return replace(ended, phase=Phase.USER_SPEAKING if state.user_speaking else Phase.IDLE)
    return ended


def _on_playout_started(
    state: BargeInState, now_ms: MediaMs, interruptible: bool, policy: BargeInPolicy
) -> Step:
    playing = replace(state, playing=True, interruptible=interruptible, playout_started_ms=now_ms)
    if state.candidate is not None and interruptible:
        # The caller is already talking: do not start speaking over them until decided.
        # The release that started playout already sent its first frames: clear them too.
        return replace(playing, phase=Phase.PAUSED), [PausePlayout(policy.flush_on_detection)]
    if state.phase in (Phase.IDLE, Phase.BOT_THINKING):
        return replace(playing, phase=Phase.BOT_SPEAKING), []
    return playing, []


def _on_playout_drained(state: BargeInState) -> BargeInState:
    drained = replace(state, playing=False)
    if state.phase is Phase.BOT_SPEAKING:
        return replace(drained, phase=Phase.BOT_THINKING if state.turn_running else Phase.IDLE)
    return drained


def _on_idle_speech(state: BargeInState, event: Event, policy: BargeInPolicy) -> Step:
    return replace(state, phase=Phase.USER_SPEAKING, user_speaking=True), []


def _on_bot_speech(state: BargeInState, event: Event, policy: BargeInPolicy) -> Step:
    """Caller speech while the bot thinks or speaks: a candidate interruption."""
    assert isinstance(event, SpeechStarted)
    state = replace(state, user_speaking=True)
    if state.candidate is not None:
        # More speech from the same caller: the candidate keeps its first onset.
        return replace(state, candidate=replace(state.candidate, ended_ms=None)), []
    if not _may_interrupt(state, policy):
        return state, []
    candidate = Candidate(event.onset_ms, needed_ms=_echo_allowance(state, event, policy))
    if state.phase is Phase.BOT_SPEAKING:
        pause = PausePlayout(policy.flush_on_detection)
        return replace(state, phase=Phase.PAUSED, candidate=candidate), [pause]
    return replace(state, candidate=candidate), []


def _echo_allowance(state: BargeInState, event: SpeechStarted, policy: BargeInPolicy) -> int:
    started = state.playout_started_ms
    if state.phase is not Phase.BOT_SPEAKING or started is None:
        return 0
    return policy.echo_guard_ms if event.onset_ms - started < policy.echo_guard_ms else 0


def _on_candidate_event(state: BargeInState, event: Event, policy: BargeInPolicy) -> Step:
    """While a candidate is pending, every event may confirm or dismiss it."""
    if state.candidate is None:
        return _bookkeeping(state, event, policy)
    actions: list[Action] = []
    match event:
        case SpeechEnded(now_ms=now, end_ms=end):
            candidate = replace(state.candidate, ended_ms=now if end is None else end)
            state = replace(state, user_speaking=False, candidate=candidate)
        case Transcript(text=text, final=final):
            state = _count_candidate_words(state, text, final, policy)
        case TurnEnded() | PlayoutStarted() | PlayoutDrained():
            state, actions = _bookkeeping(state, event, policy)
    state, decided = _decide(state, event.now_ms, policy)
    return state, actions + decided


def _count_candidate_words(
    state: BargeInState, text: str, final: bool, policy: BargeInPolicy
) -> BargeInState:
    assert state.candidate is not None
    words = max(state.candidate.words, count_words(text, policy))
    pending = (*state.pending_text, text) if final and text.strip() else state.pending_text
    return replace(state, candidate=replace(state.candidate, words=words), pending_text=pending)


def _decide(state: BargeInState, now_ms: MediaMs, policy: BargeInPolicy) -> Step:
    """Confirm the candidate, keep waiting, or dismiss it as a false interruption."""
    candidate = state.candidate
    assert candidate is not None
    end_ms = now_ms if candidate.ended_ms is None else candidate.ended_ms
    long_enough = end_ms - candidate.onset_ms >= policy.min_speech_ms + candidate.needed_ms
    if long_enough and candidate.words >= policy.min_words:
        interrupted, actions = _interrupt(state, now_ms, "caller speech")
        started, more = _start_turn_if_ready(interrupted)
        return started, actions + more
    if candidate.ended_ms is None:
        return state, []
    # Speech long enough but short of words may still be confirmed by a late transcript.
    if long_enough and now_ms - candidate.ended_ms < policy.false_interruption_timeout_ms:
        return state, []
    return _dismiss(state)


def _dismiss(state: BargeInState) -> Step:
    """A false interruption: forget the candidate and resume speaking if playout was paused."""
    resumed = replace(state, phase=_bot_phase(state), candidate=None, pending_text=())
    if state.phase is Phase.PAUSED and resumed.phase is Phase.BOT_SPEAKING:
        return resumed, [ResumePlayout()]
    return resumed, []


def _on_bot_dtmf(state: BargeInState, event: Event, policy: BargeInPolicy) -> Step:
    """Keys pressed while the bot holds the floor interrupt it (if it may be interrupted)."""
    assert isinstance(event, Dtmf)
    if not _may_interrupt(state, policy):
        return state, []
    marked = replace(state, candidate=Candidate(event.now_ms))
    interrupted, actions = _interrupt(marked, event.now_ms, "dtmf")
    started = replace(interrupted, phase=Phase.BOT_THINKING, turn_running=True)
    return started, [*actions, StartTurn(dtmf=event.digits)]


_BOT_PHASES = (Phase.BOT_THINKING, Phase.BOT_SPEAKING, Phase.PAUSED)
_CANDIDATE_EVENTS: tuple[type[Event], ...] = (
    SpeechEnded,
    Transcript,
    Tick,
    TurnEnded,
    PlayoutStarted,
    PlayoutDrained,
)

#: (phase, event type) -> handler; pairs not listed only update bookkeeping flags.
_TABLE: Mapping[tuple[Phase, type[Event]], Handler] = MappingProxyType(
    {
        (Phase.IDLE, SpeechStarted): _on_idle_speech,
        (Phase.BOT_THINKING, SpeechStarted): _on_bot_speech,
        (Phase.BOT_SPEAKING, SpeechStarted): _on_bot_speech,
        (Phase.PAUSED, SpeechStarted): _on_bot_speech,
        **{(phase, Dtmf): _on_bot_dtmf for phase in _BOT_PHASES},
        **{
            (phase, kind): _on_candidate_event
            for phase in _BOT_PHASES
            for kind in _CANDIDATE_EVENTS
        },
    }
)
