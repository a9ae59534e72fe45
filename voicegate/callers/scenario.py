"""Scenario files (``fixtures/calls/*.yml``): a staged call and what it must produce.

A scenario names the provider the caller emulates, the agent project and scripted model the
gateway runs, the recordings the caller plays (at fixed media times, or a delay after the n-th
time the bot started speaking), when it hangs up, and the expectations checked against the
call's timeline (callers/expect.py). Paths are relative to the scenario file. The format is
documented in docs/replay.md; the file loads into a frozen :class:`Scenario`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from voicegate.audio.wav import parse_channel
from voicegate.callers.expect import Expectations, parse_expectations
from voicegate.callers.fields import Fields
from voicegate.callers.inputs import load_recording
from voicegate.callers.labels import labels_of
from voicegate.callers.script import CallerScript, Cue
from voicegate.errors import ConfigError

PROVIDERS = (
    "twilio",
    "browser",
    "telnyx",
    "plivo",
    "vonage",
    "exotel",
    "jambonz",
    "freeswitch",
    "genesys",
    "asterisk",
)
SCENARIO_SUFFIXES = (".yml", ".yaml")
DEFAULT_QUIET_MS = 2000
DEFAULT_MAX_MS = 60_000


@dataclass(frozen=True, slots=True)
class ScenarioCue:
    """One recording the caller plays, its labels, and when it starts."""

    audio: Path
    transcript: str  # what the scripted recogniser returns for it ("" for noise)
    onset_ms: int | None  # labelled speech onset inside the recording, if known
    at_ms: int | None = None
    after_bot_speech: int | None = None
    delay_ms: int = 0
    channel: int | None = None  # of a WAV recording (1-based); None: its channels averaged

    def cue(self, sample_rate: int) -> Cue:
        """The caller-script cue, its recording converted to ``sample_rate``."""
        samples = load_recording(self.audio, self.channel).at_rate(sample_rate)
        return Cue(
            samples,
            at_ms=self.at_ms,
            after_bot_speech=self.after_bot_speech,
            delay_ms=self.delay_ms,
            label=self.audio.name,
            transcript=self.transcript,
        )


@dataclass(frozen=True, slots=True)
class Scenario:
    """A staged call: who calls, what runs, what the caller plays, what must happen."""

    name: str
    path: Path
    description: str
    provider: str
    project: Path
    llm: Path  # the scripted model's conversation file
    config: Path | None  # a voicegate.yml; None: the built-in defaults
    cues: tuple[ScenarioCue, ...]
    quiet_ms: int = DEFAULT_QUIET_MS
    max_ms: int = DEFAULT_MAX_MS
    parameters: Mapping[str, str] = field(default_factory=dict)
    expect: Expectations = field(default_factory=Expectations)

    def transcripts(self) -> list[str]:
        """The scripted recogniser's lines: each cue's transcript, in the order listed."""
        return [cue.transcript for cue in self.cues if cue.transcript]

    def caller_script(self, sample_rate: int) -> CallerScript:
        """The caller's cues at ``sample_rate``; hanging up is decided by ``quiet_ms``."""
        return CallerScript([cue.cue(sample_rate) for cue in self.cues], sample_rate, tail_ms=0)


def load_scenario(path: Path) -> Scenario:
    """Read and check one scenario file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the scenario: {error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: invalid YAML: {error}") from None
    fields = Fields(data, str(path))
    folder = path.parent
    project = folder / fields.text("project")
    provider = fields.text("provider", "twilio")
    if provider not in PROVIDERS:
        raise fields.error("provider", f"must be one of {', '.join(PROVIDERS)}")
    config = fields.optional_text("config")
    hang_up = fields.mapping("hang_up")
    scenario = Scenario(
        name=path.stem,
        path=path,
        description=" ".join(fields.text("description", "").split()),
        provider=provider,
        project=project,
        llm=project / fields.text("llm"),
        config=None if config is None else folder / config,
        cues=_cues(fields, folder),
        quiet_ms=_quiet_ms(hang_up),
        max_ms=fields.integer("max_ms", DEFAULT_MAX_MS),
        parameters=_parameters(fields.mapping("parameters")),
        expect=parse_expectations(fields.mapping("expect")),
    )
    fields.done()
    return scenario


def scenario_paths(folder: Path) -> list[Path]:
    """The scenario files of a folder, in name order."""
    return sorted(p for p in folder.iterdir() if p.suffix in SCENARIO_SUFFIXES and p.is_file())


def _cues(fields: Fields, folder: Path) -> tuple[ScenarioCue, ...]:
    listed = fields.raw("caller")
    if not isinstance(listed, list) or not listed:
        raise fields.error("caller", "must be a non-empty list of cues")
    return tuple(
        _cue(Fields(item, f"{fields.where}.caller[{n}]"), folder) for n, item in enumerate(listed)
    )


def _cue(fields: Fields, folder: Path) -> ScenarioCue:
    audio = folder / fields.text("audio")
    if not audio.is_file():
        raise fields.error("audio", f"names {audio}, which does not exist")
    labels = labels_of(audio)
    transcript = fields.optional_text("transcript")
    if transcript is None:
        transcript = labels.transcript
    if transcript is None:
        raise fields.error(
            "transcript", "is required: the recording has no label in transcripts.tsv"
        )
    cue = ScenarioCue(
        audio=audio,
        transcript=transcript,
        onset_ms=labels.onset_ms,
        at_ms=fields.optional_integer("at_ms"),
        after_bot_speech=fields.optional_integer("after_bot_speech"),
        delay_ms=fields.integer("delay_ms", 0),
        channel=_channel(fields),
    )
    if (cue.at_ms is None) == (cue.after_bot_speech is None) or cue.after_bot_speech == 0:
        raise ConfigError(f"{fields.where}: give either at_ms or after_bot_speech (1 or more)")
    fields.done()
    return cue


def _channel(fields: Fields) -> int | None:
    """A cue's ``channel:``, written as ``--channel`` is: mix, left, right or 1, 2, ...."""
    value = fields.raw("channel", "mix")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise fields.error("channel", "must be mix, left, right or a channel number")
    try:
        return parse_channel(str(value))
    except ValueError as error:
        raise fields.error("channel", str(error)) from None


def _quiet_ms(fields: Fields | None) -> int:
    if fields is None:
        return DEFAULT_QUIET_MS
    quiet = fields.integer("quiet_ms", DEFAULT_QUIET_MS)
    fields.done()
    return quiet


def _parameters(fields: Fields | None) -> dict[str, str]:
    if fields is None:
        return {}
    parameters = {}
    for key, value in fields.items():
        if not isinstance(value, str):
            raise fields.error(key, "must be text (Twilio custom parameters are strings)")
        parameters[key] = value
    return parameters
