"""Turn-taking settings: one frozen dataclass per concern, built once at the edge (design §7)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from voicegate.errors import ConfigError

#: Words that, ending what the caller said so far, mean more is coming ("I want to ... and",
#: "um"): fillers and conjunctions/prepositions that cannot end an English sentence.
DEFAULT_HOLD_WORDS = frozenset(
    {
        "and", "but", "or", "so", "because", "if", "then", "that", "the", "a", "an", "to",
        "of", "for", "with", "my", "um", "uh", "er", "erm", "hmm", "like",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class EndOfTurnSettings:
    """When a pause in the caller's speech ends their turn (``turns`` in config/voicegate.yml).

    Without the model (``model: none``) a pause ends the turn at once, so the VAD's own
    ``stop_ms`` is the whole wait (the behaviour before issue 14).
    """

    #: ``smart-turn`` (the bundled Smart Turn v3.2 ONNX), ``none``, or a path to an ONNX file
    #: with the same input (80x800 Whisper log-mel features of the last 8 s).
    model: str = "smart-turn"
    #: Silence (ms) after which a complete verdict may end the turn, counted from the VAD's
    #: dated end of speech. 160, not Pipecat's 200: a pause is held while the VAD hears the
    #: caller going on (``wait_while_voiced``), which it does 40-80 ms before it confirms the
    #: start, so 160 ends no more turns inside an utterance than 200 without that hold
    #: (docs/turn-taking.md, "Waiting on a voice"). A whole number of 20 ms frames.
    pause_ms: int = 160
    #: Silence (ms) after which the model and the recogniser are asked about a pause; it
    #: becomes the VAD's ``stop_ms``. Asking before ``pause_ms`` has passed means the verdict
    #: and the transcript (~90 and ~80-130 ms, on the two cores) are in when it has, instead
    #: of starting then; a pause that speech resumes costs them for nothing
    #: (docs/turn-taking.md, "Asking at 60 ms").
    ask_after_ms: int = 60
    #: Whether a pause is held while the VAD hears possible speech it has not confirmed as a
    #: start yet (a caller going on, heard 40-80 ms before the start is confirmed); the
    #: silence timeout still ends the turn. Lets ``pause_ms`` be shorter for the same
    #: pauses inside an utterance left whole (docs/turn-taking.md, "Waiting on a voice").
    wait_while_voiced: bool = True
    #: Model probability at or above which the turn is complete (Smart Turn's own 0.5).
    threshold: float = 0.5
    #: Fallback while the model has not answered (a loaded machine): silence (ms since the
    #: speech ended) that ends the turn as the VAD alone did before (vad.stop_ms, 500).
    silence_timeout_ms: int = 500
    #: Silence that ends a turn the model scored incomplete.
    incomplete_timeout_ms: int = 1000
    #: Silence that ends a turn without a complete verdict (scored incomplete, or not scored)
    #: whose transcript ends a sentence: "Two.", "Goodbye!". Smart Turn scores such short
    #: answers low on a phone line; Whisper leaves many fragments unpunctuated.
    sentence_end_timeout_ms: int = 500
    #: Silence that ends a turn whose transcript ends on a hold word ("and", "um").
    hesitation_timeout_ms: int = 2000
    #: How long (ms) a complete verdict waits for the transcript of the pause before it acts.
    transcript_wait_ms: int = 300
    #: Caller audio before the turn's onset given to the model, like Pipecat's pre_speech_ms.
    preroll_ms: int = 500
    hold_words: frozenset[str] = DEFAULT_HOLD_WORDS
    #: Model inferences run at once, on their own threads (shared by every call of a worker).
    workers: int = 1
    #: Pauses waiting for a free model thread, at most; past that a pause is not scored (the
    #: silence timeout decides it, ``model: shed`` on the timeline): under load a queued
    #: verdict would come after the silence timeout anyway, and only cost CPU.
    max_queue: int = 2
    #: Share of one core the model may use per worker process, averaged over a second; past
    #: it pauses are shed as above. 100 calls on 2 workers scored every pause and took ~40 %
    #: of a busy worker's CPU, and 32 of those calls had choppy playout.
    cpu_share: float = 0.25
    #: Caller speech (ms, from the turn's onset to the pause) below which the model is not
    #: asked and the silence timeout decides: a lone word scores low (bench/turn_taking.py:
    #: single digits scored incomplete and waited incomplete_timeout_ms) and the pause it
    #: ends is short anyway.
    min_speech_ms: int = 400
    #: Speculative turns (preemptive generation): at a held pause whose transcript is in
    #: (and ends on no hold word), start the engine's turn at once; its audio and effects wait
    #: for the end of the turn, and it is cancelled without a trace if the caller goes on.
    #: Off by default: it pays off with a model that takes long to answer (an LLM), costs a
    #: model request per overridden pause, and gained nothing measurable with the scripted
    #: model (docs/turn-taking.md).
    speculative: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"threshold must be in (0, 1], got {self.threshold!r}")
        for name in (
            "pause_ms",
            "silence_timeout_ms",
            "incomplete_timeout_ms",
            "sentence_end_timeout_ms",
            "hesitation_timeout_ms",
        ):
            if getattr(self, name) < 20:
                raise ConfigError(f"{name} must be at least 20 ms, got {getattr(self, name)!r}")
        if min(self.silence_timeout_ms, self.sentence_end_timeout_ms) < self.pause_ms:
            raise ConfigError("silence_timeout_ms and sentence_end_timeout_ms must be >= pause_ms")
        if not 20 <= self.ask_after_ms <= self.pause_ms:
            raise ConfigError(
                f"ask_after_ms must be at least 20 ms and at most pause_ms, got {self.ask_after_ms}"
            )
        if min(self.transcript_wait_ms, self.preroll_ms, self.max_queue, self.min_speech_ms) < 0:
            raise ConfigError(
                "transcript_wait_ms, preroll_ms, max_queue and min_speech_ms must be >= 0"
            )
        if not 0.0 < self.cpu_share <= float(self.workers):
            raise ConfigError(f"cpu_share must be in (0, workers], got {self.cpu_share!r}")
        if self.workers < 1:
            raise ConfigError(f"workers must be at least 1, got {self.workers!r}")

    @property
    def uses_model(self) -> bool:
        """Whether an end-of-turn model is consulted at pauses."""
        return self.model != "none"

    def model_path(self, bundled: Path) -> Path:
        """The ONNX file to load: the bundled one for ``smart-turn``, else the given path."""
        return bundled if self.model == "smart-turn" else Path(self.model)


@dataclass(frozen=True, slots=True)
class EchoGateSettings:
    """When caller-side audio is the bot's own voice coming back (``echo_gate``).

    The reference is the level of the bot audio the gateway released, dated by when the caller
    plays it. A caller frame is *evident* (not explained by echo) when it is louder than the
    loudest reference within ``max_delay_ms`` minus ``margin_db``; a VAD speech start is passed
    on only after ``evidence_ms`` of evident frames.
    """

    enabled: bool = True
    #: How far below the bot's own level (dB) echo is assumed to be at most, to start with;
    #: phone lines give 10-30 dB of echo return loss (ITU-T G.131 asks for more than 24 dB
    #: of talker echo loss), a speakerphone can give less.
    margin_db: float = 6.0
    #: The margin grows up to this as the call shows its echo is weaker: it becomes the
    #: measured echo return loss less 6 dB (the loudest tenth of the echo frames). A line
    #: that shows no echo at all gets this: 45 dB lets a talker whose peaks are at -45 dBFS
    #: interrupt espeak-ng's -13 to -17 dBFS; at 20 every such barge-in was missed
    #: (docs/turn-taking.md, "Real phone lines").
    max_margin_db: float = 45.0
    #: Longest echo path (ms) from release to the caller's microphone, send-ahead included.
    max_delay_ms: int = 600
    #: Evident audio (ms) needed inside one VAD segment before it counts as the caller.
    evidence_ms: int = 40
    #: Once the bot's audio has left the window, a frame quieter than this many dB below full
    #: scale does not count: the silence after an echo is no evidence of the caller.
    silence_below_db: float = 55.0

    def __post_init__(self) -> None:
        if self.margin_db < 0 or self.max_delay_ms < 0 or self.evidence_ms < 0:
            raise ConfigError("echo_gate: margin_db, max_delay_ms and evidence_ms must be >= 0")
        if self.max_margin_db < self.margin_db:
            raise ConfigError("echo_gate: max_margin_db must be at least margin_db")


@dataclass(frozen=True, slots=True)
class TurnSettings:
    """Both concerns together, as the CLI passes them to the gateway."""

    end_of_turn: EndOfTurnSettings = field(default_factory=EndOfTurnSettings)
    echo_gate: EchoGateSettings = field(default_factory=EchoGateSettings)
