"""Replaying a recorded or staged caller against a gateway, in process or at a URL.

In process, the gateway is the one ``voicegate serve`` runs (``wiring.build_runner`` from the
same settings) on a free loopback port, and the call's timeline is read from its runner. At a
URL there is no way to read the gateway's timeline, so the result holds what the caller itself
observed (docs/timeline.md, "caller-side timeline").

:func:`run_scenario` is the entry point for tests and ``bench/bargein.py``: it runs one
``fixtures/calls/*.yml`` scenario in process and returns a :class:`ScenarioRun` with the
emulated caller (its tracks, clears, caller-side records) and the gateway's timeline records.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import shutil
import tempfile
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from websockets.exceptions import WebSocketException

from voicegate.callers.asterisk import AsteriskCaller
from voicegate.callers.audio_fork import AudioForkCaller
from voicegate.callers.browser import BrowserCaller
from voicegate.callers.conversationrelay import DEFAULT_CALL_SID, ConversationRelayCaller
from voicegate.callers.driver import Closed, drive_to_close
from voicegate.callers.echo import EchoPath
from voicegate.callers.exotel import ExotelCaller
from voicegate.callers.expect import unmet
from voicegate.callers.freeswitch import FreeSwitchCaller
from voicegate.callers.genesys import GenesysCaller
from voicegate.callers.jambonz import JambonzCaller
from voicegate.callers.plivo import PlivoCaller
from voicegate.callers.report import interruptions
from voicegate.callers.scenario import Scenario, load_scenario
from voicegate.callers.script import CallerScript
from voicegate.callers.telnyx import TelnyxCaller
from voicegate.callers.twilio import TwilioCaller
from voicegate.callers.vonage import VonageCaller
from voicegate.cli import wiring
from voicegate.clock.virtual import DEFAULT_LATENCY_MS, LatencyModel, run_virtual, virtual_loop
from voicegate.config import ServerSettings, Settings, StoreSettings, load_settings
from voicegate.errors import ConfigError, RemoteProtocolError, VoicegateError
from voicegate.gateway import conversationrelay_twiml
from voicegate.gateway.lifecycle import Gateway
from voicegate.gateway.server import (
    ASTERISK_STREAM_PATH,
    BROWSER_PATH,
    EXOTEL_STREAM_PATH,
    FREESWITCH_STREAM_PATH,
    GENESYS_STREAM_PATH,
    JAMBONZ_STREAM_PATH,
    PLIVO_STREAM_PATH,
    TELNYX_STREAM_PATH,
    TWILIO_STREAM_PATH,
    VONAGE_STREAM_PATH,
)

_T = TypeVar("_T")
Caller = (
    TwilioCaller
    | BrowserCaller
    | TelnyxCaller
    | PlivoCaller
    | VonageCaller
    | ExotelCaller
    | JambonzCaller
    | FreeSwitchCaller
    | GenesysCaller
    | AsteriskCaller
    | ConversationRelayCaller
)
Record = dict[str, Any]

PROVIDER_PATHS = {
    "twilio": TWILIO_STREAM_PATH,
    "browser": BROWSER_PATH,
    "telnyx": TELNYX_STREAM_PATH,
    "plivo": PLIVO_STREAM_PATH,
    "vonage": VONAGE_STREAM_PATH,
    "exotel": EXOTEL_STREAM_PATH,
    "jambonz": JAMBONZ_STREAM_PATH,
    "freeswitch": FREESWITCH_STREAM_PATH,
    "genesys": GENESYS_STREAM_PATH,
    "asterisk": ASTERISK_STREAM_PATH,
    "conversationrelay": conversationrelay_twiml.STREAM_PATH,
}
#: The rate each provider's caller sends at (the browser's is chosen from the recording).
TWILIO_RATE = 8000
TELEPHONE_RATES = {
    "twilio": TWILIO_RATE,
    "telnyx": 8000,
    "plivo": 8000,
    "vonage": 16000,
    "exotel": 8000,  # the applet's default ?sample-rate
    "jambonz": 8000,  # the listen verb's default sampleRate
    "freeswitch": 8000,  # uuid_audio_fork ... mono 8k (docs/protocols/freeswitch.md)
    "genesys": 8000,  # PCMU, the Audio Connector's only format
    "asterisk": 8000,  # Dial(WebSocket/<client>/c(ulaw)), docs/protocols/asterisk.md
    "conversationrelay": 8000,  # what the emulated Twilio hears the caller's line at
}
BROWSER_DEFAULT_RATE = 16000


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment of a replay on the wall clock and in the process's CPU time, in seconds."""

    wall: float  # time.perf_counter()
    cpu: float  # time.process_time()

    @classmethod
    def now(cls) -> Mark:
        """This moment."""
        return cls(time.perf_counter(), time.process_time())


@dataclass(frozen=True, slots=True)
class Phases:
    """When an in-process replay's call began (its gateway ready) and ended (the caller's
    connection closed): startup before, shutdown after (bench/virtual_replay.py)."""

    ready: Mark
    hung_up: Mark


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """One replayed call: the caller, the timeline, and where the timeline came from."""

    caller: Caller
    records: list[Record]  # the gateway's timeline, or the caller-side one at a URL
    caller_records: list[Record]  # what the caller observed (always)
    in_process: bool
    close_code: int | None
    #: ``records`` is the gateway's timeline: in process, or sent to a browser caller at a URL
    from_gateway: bool = True
    phases: Phases | None = None  # in process


def new_caller(
    provider: str,
    script: CallerScript,
    *,
    call_id: str = "",
    parameters: Mapping[str, str] | None = None,
    quiet_ms: int | None = None,
    echo: EchoPath | None = None,
) -> Caller:
    """An emulated caller of ``provider`` playing ``script``.

    Without ``call_id`` every caller gets a fresh one, so parallel replays against one gateway
    never collide (a call id may be live only once).
    """
    call_id = call_id or fresh_call_id(provider)
    if provider == "browser":
        return BrowserCaller(script, metadata=parameters, quiet_ms=quiet_ms, echo=echo)
    if provider == "telnyx":
        ids = {"call_control_id": call_id} if call_id else {}
        return TelnyxCaller(script, parameters=parameters, quiet_ms=quiet_ms, **ids)
    if provider == "plivo":  # the default <Stream contentType>, audio/x-mulaw;rate=8000
        return PlivoCaller(script, call_id=call_id, parameters=parameters, quiet_ms=quiet_ms)
    if provider == "vonage":  # L16 at 16 kHz, the default content-type
        return VonageCaller(script, uuid=call_id, parameters=parameters, quiet_ms=quiet_ms)
    if provider == "exotel":  # PCM16 at 8 kHz, the applet's default rate
        return ExotelCaller(script, call_sid=call_id, parameters=parameters, quiet_ms=quiet_ms)
    if provider == "jambonz":  # L16 at 8 kHz, the default sampleRate
        return JambonzCaller(script, call_sid=call_id, parameters=parameters, quiet_ms=quiet_ms)
    if provider == "freeswitch":  # mod_audio_fork, L16 at 8 kHz; the channel uuid names it
        return FreeSwitchCaller(script, uuid=call_id, parameters=parameters, quiet_ms=quiet_ms)
    if provider == "genesys":  # an Audio Connector session; the ids and API key are emulated
        ids = {"conversation_id": call_id} if call_id else {}
        return GenesysCaller(script, parameters=parameters, quiet_ms=quiet_ms, **ids)
    if provider == "asterisk":  # chan_websocket, ulaw, JSON control messages
        return AsteriskCaller(script, channel_id=call_id, parameters=parameters, quiet_ms=quiet_ms)
    if provider == "conversationrelay":  # Twilio transcribes: the cues' transcripts
        sid = call_id or DEFAULT_CALL_SID
        return ConversationRelayCaller(
            script, call_sid=sid, parameters=parameters, quiet_ms=quiet_ms
        )
    if provider != "twilio":
        raise ValueError(f"unknown provider {provider!r}")
    ids = {"call_sid": call_id} if call_id else {}
    return TwilioCaller(
        script, parameters=dict(parameters or {}), quiet_ms=quiet_ms, echo=echo, **ids
    )


def fresh_call_id(provider: str) -> str:
    """A new call id in the form ``provider`` uses (the browser's comes from the gateway)."""
    token = uuid.uuid4()
    if provider == "twilio":
        return f"CA{token.hex}"  # "CA" and 32 hex digits, like a Twilio CallSid
    if provider == "telnyx":
        return f"v3:{token.hex}"
    if provider == "exotel":
        return token.hex  # 32 hex digits
    if provider == "asterisk":  # a channel's unique id: epoch seconds, a dot, a sequence
        return f"{token.int % 10**10}.{token.int // 10**10 % 10**6}"
    return "" if provider == "browser" else str(token)


def caller_rate(provider: str, recording_rate: int) -> int:
    """The rate a provider's caller streams a recording of ``recording_rate`` at."""
    if provider in TELEPHONE_RATES:
        return TELEPHONE_RATES[provider]
    return recording_rate if recording_rate in (8000, 16000, 24000, 48000) else BROWSER_DEFAULT_RATE


def stream_url(url: str, provider: str) -> str:
    """``url`` with the provider's WebSocket path added when it names no path."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.netloc:
        raise ValueError(f"{url!r} is not a ws:// or wss:// URL")
    if parts.path in ("", "/"):
        parts = parts._replace(path=PROVIDER_PATHS[provider])
    return urlunsplit(parts)


def caller_timeline(
    caller: Caller,
    script: CallerScript,
    *,
    onsets: Sequence[int | None] = (),
    close_code: int | None = None,
    close_reason: str = "",
) -> list[Record]:
    """The caller-side records: cue starts (with labelled onsets), then what it observed."""
    cues: list[Record] = []
    for index, cue in enumerate(script.cues):
        start = script.start_of(index, caller.bot_started_ms)
        if start is None:
            continue
        record: Record = {"t_ms": start, "event": "cue_started", "label": cue.label}
        if cue.transcript:
            record["transcript"] = cue.transcript
        onset = onsets[index] if index < len(onsets) else None
        if onset is not None:
            record["speech_onset_ms"] = start + onset
        cues.append(record)
    opened: Record = {"t_ms": 0, "event": "stream_opened", "call_id": caller.call_id}
    closed: Record = {"t_ms": caller.now_ms, "event": "stream_closed", "close_code": close_code}
    if close_reason:
        closed["close_reason"] = close_reason
    return [opened, *sorted([*cues, *caller.observed], key=lambda r: int(r["t_ms"])), closed]


async def replay_remote(
    url: str,
    caller: Caller,
    script: CallerScript,
    *,
    speed: float,
    max_ms: int,
    onsets: Sequence[int | None] = (),
) -> ReplayResult:
    """Replay against a gateway at ``url``: the caller-side timeline, and the gateway's when
    its dialect carries it (the browser's ``event`` messages)."""
    closed = await _drive(url, caller, speed=speed, max_ms=max_ms)
    code = closed.code
    records = caller_timeline(
        caller, script, onsets=onsets, close_code=code, close_reason=closed.reason
    )
    sent = caller.timeline if isinstance(caller, BrowserCaller) else []
    return ReplayResult(caller, sent or records, records, False, code, from_gateway=bool(sent))


async def replay_in_process(
    settings: Settings,
    provider: str,
    caller: Caller,
    script: CallerScript,
    *,
    speed: float,
    max_ms: int,
    onsets: Sequence[int | None] = (),
) -> ReplayResult:
    """Start the gateway ``settings`` describe on a free loopback port and replay one call.

    On a virtual-time loop (clock/virtual.py) the engine and its tools run inline on it, and
    ``speed`` is media per *virtual* second: pass 1 (the loop's pace sets the real speed).
    """
    virtual = virtual_loop() is not None
    if virtual:
        speed = 1.0  # the loop's pace sets the real speed; media runs at virtual real time
    # The replay's own gateway takes audio at the replay's speed (limits.media_max_speed).
    paced = replace(settings.limits, media_max_speed=max(settings.limits.media_max_speed, speed))
    settings = replace(settings, server=ServerSettings(host="127.0.0.1", port=0), limits=paced)
    with tempfile.TemporaryDirectory(prefix="voicegate-replay-") as folder:
        # On virtual time the WebSocket runs over a Unix socket: a write there is in the
        # peer's receive queue when ``send`` returns, while a loopback TCP segment may wait
        # for the kernel's softirq thread on a busy machine, and the loop, seeing nothing to
        # read, would move the clock on meanwhile (docs/replay.md, "What is virtual").
        unix_path = str(Path(folder) / "gateway.sock") if virtual else None
        async with (
            wiring.open_runner(settings, inline=virtual) as runner,
            Gateway(runner, settings.gateway_options(), unix_path=unix_path) as gateway,
        ):
            base = "http://localhost" if unix_path else gateway.base_url
            url = "ws" + base.removeprefix("http") + PROVIDER_PATHS[provider]
            ready = Mark.now()
            closed = await _drive(url, caller, speed=speed, max_ms=max_ms, unix_path=unix_path)
            hung_up = Mark.now()
    code = closed.code
    # Leaving the block drained the gateway: the call's session has ended and kept its timeline.
    if not caller.call_id:
        stopped = caller.stopped_reason if isinstance(caller, BrowserCaller) else None
        refusal = stopped or f"close code {code}"
        raise RemoteProtocolError(f"the gateway did not accept the call ({refusal})")
    timeline = runner.timeline(caller.call_id)
    if timeline is None:
        raise RemoteProtocolError(f"the gateway kept no timeline for call {caller.call_id!r}")
    caller_records = caller_timeline(
        caller, script, onsets=onsets, close_code=code, close_reason=closed.reason
    )
    phases = Phases(ready, hung_up)
    return ReplayResult(caller, list(timeline.records), caller_records, True, code, phases=phases)


def with_fresh_store(settings: Settings, data_dir: Path) -> Settings:
    """``settings`` with durable memory kept in ``data_dir``, so a replay starts from empty."""
    return replace(settings, store=StoreSettings(data_dir=data_dir))


async def _drive(
    url: str, caller: Caller, *, speed: float, max_ms: int, unix_path: str | None = None
) -> Closed:
    """:func:`drive_to_close`, with a peer's protocol error surfaced as itself, not a group."""
    try:
        protocols = caller.subprotocols if isinstance(caller, AudioForkCaller) else ()
        headers = (
            caller.upgrade_headers(url, int(time.time()))
            if isinstance(caller, GenesysCaller)
            else None
        )
        return await drive_to_close(
            url,
            caller,
            speed=speed,
            max_ms=max_ms,
            subprotocols=protocols,
            headers=headers,
            unix_path=unix_path,
        )
    except (OSError, WebSocketException) as error:
        raise ConfigError(f"cannot stream to {url}: {error}") from None
    except ExceptionGroup as group:
        ours = group.subgroup(lambda error: isinstance(error, VoicegateError))
        if ours is None:
            raise
        first: BaseException = ours
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from group


# --- scenarios -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScenarioRun:
    """A scenario played in process: the caller, the gateway's timeline and where it ran."""

    scenario: Scenario
    speed: float
    caller: Caller
    records: list[Record]  # the gateway's timeline
    caller_records: list[Record]  # the caller-side timeline (cue starts, clears, marks)
    workdir: Path  # holds project/ (the copy that ran), data/ and transcripts.txt

    @property
    def project_dir(self) -> Path:
        """The copy of the project the gateway ran (tools may write records there)."""
        return self.workdir / "project"

    def speech_onsets_ms(self) -> list[int]:
        """Labelled speech onsets of the cues, in call media time (cues without a label: start)."""
        return [
            int(r["speech_onset_ms"] if "speech_onset_ms" in r else r["t_ms"])
            for r in self.caller_records
            if r["event"] == "cue_started"
        ]

    def labelled_latencies(self) -> list[dict[str, int | None]]:
        """Each interruption's latencies (ms to confirmed, turn cancelled, flush sent) measured
        from the labelled speech onset of the latest cue whose speech began before it was
        confirmed (the VAD's onset when no cue had)."""
        onsets = self.speech_onsets_ms()
        latencies = []
        for interruption in interruptions(self.records):
            before = [onset for onset in onsets if onset <= interruption.confirmed_ms]
            latencies.append(interruption.latencies(max(before) if before else None))
        return latencies

    def unmet(self) -> list[str]:
        """The scenario's expectations this call did not meet (empty: all met)."""
        return unmet(self.scenario.expect, self.records, self.caller_records)


def scenario_settings(scenario: Scenario, workdir: Path, base: Settings | None = None) -> Settings:
    """Settings running a fresh copy of the scenario's project, its model and transcripts.

    ``workdir``'s ``project/`` and ``data/`` are replaced, so each run starts from the fixture
    and an empty memory.
    """
    if base is None:
        base = load_settings(scenario.config) if scenario.config else Settings()
    project = workdir / "project"
    for stale in (project, workdir / "data"):  # every run starts from the fixture, empty memory
        shutil.rmtree(stale, ignore_errors=True)
    shutil.copytree(scenario.project, project)
    llm = scenario.llm
    if llm.resolve().is_relative_to(scenario.project.resolve()):
        llm = project / llm.resolve().relative_to(scenario.project.resolve())
    transcripts = workdir / "transcripts.txt"
    transcripts.write_text("".join(line + "\n" for line in scenario.transcripts()), "utf-8")
    if not scenario.config:
        # The end-of-turn model answers on the wall clock, so its verdicts land at media times
        # that vary with the machine's load: a scenario keeps the VAD's pause unless it asks.
        eot = replace(base.turns.end_of_turn, model="none")
        base = replace(base, turns=replace(base.turns, end_of_turn=eot))
    return replace(
        with_fresh_store(base, workdir / "data"),
        engine=replace(base.engine, project_dir=project, llm=f"scripted:{llm}"),
        # A scenario is a deterministic test: the tone synthesiser unless its config says.
        speech=replace(
            base.speech,
            stt=f"scripted:{transcripts}",
            tts=base.speech.tts if scenario.config else "tone",
        ),
    )


async def replay_scenario(
    scenario: Scenario,
    workdir: Path,
    *,
    speed: float = 1.0,
    provider: str | None = None,
    base: Settings | None = None,
) -> ScenarioRun:
    """Run ``scenario`` against an in-process gateway; files go to ``workdir``.

    ``provider`` and ``base`` (the settings to start from) override the scenario's own.
    On a virtual-time loop ``speed`` is ignored: the loop's pace sets it (:func:`run_scenario`).
    """
    provider = provider or scenario.provider
    settings = scenario_settings(scenario, workdir, base)
    script = scenario.caller_script(caller_rate(provider, BROWSER_DEFAULT_RATE))
    if virtual_loop() is not None:
        speed = 1.0  # tools and models run on the media timeline too: no scaled waits
    quiet_ms = round(scenario.quiet_ms * speed)  # the same wait in real time at any speed
    caller = new_caller(provider, script, parameters=scenario.parameters, quiet_ms=quiet_ms)
    onsets = [cue.onset_ms for cue in scenario.cues]
    result = await replay_in_process(
        settings, provider, caller, script, speed=speed, max_ms=scenario.max_ms, onsets=onsets
    )
    return ScenarioRun(scenario, speed, caller, result.records, result.caller_records, workdir)


def run_scenario(
    scenario: Scenario | Path,
    *,
    speed: float = 1.0,
    workdir: Path | None = None,
    virtual: bool = False,
    latency: LatencyModel | None = None,
) -> ScenarioRun:
    """Run a scenario (or the scenario file at a path) in process, synchronously.

    ``virtual``: on virtual time (docs/replay.md), where any ``speed`` (``math.inf``: as fast
    as the machine goes) gives the same timeline, off-loop work charged per ``latency``.
    Without ``workdir`` the project copy and memory live in a temporary folder removed on
    return (the records and the caller stay available).
    """
    loaded = load_scenario(scenario) if isinstance(scenario, Path) else scenario
    with contextlib.ExitStack() as stack:
        if workdir is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="voicegate-scenario-"))
            workdir = Path(folder)
        replay = replay_scenario(loaded, workdir, speed=speed)
        run = run_replay(replay, speed=speed, wall_clock=not virtual, latency=latency)
        return replace(run, speed=speed)


def run_replay(
    main: Coroutine[Any, Any, _T],
    *,
    speed: float,
    wall_clock: bool = False,
    latency: LatencyModel | None = None,
) -> _T:
    """Run a replay on virtual time at ``speed`` (``math.inf``: no pace), or on the wall clock."""
    if wall_clock:
        return asyncio.run(main)
    return run_virtual(main, latency=latency, pace=pace_of(speed))


def parse_speed(text: str) -> float:
    """A ``--speed`` value: a positive number, or ``max`` (``math.inf``)."""
    if text == "max":
        return math.inf
    speed = float(text)
    if not speed > 0 or not math.isfinite(speed):
        raise ValueError(f"a speed is a positive number or max, not {text!r}")
    return speed


def parse_latency(items: Sequence[str]) -> LatencyModel:
    """The default latency model with ``COMPONENT=MS`` overrides (``--latency-ms``)."""
    overrides = {}
    for item in items:
        name, _, ms = item.partition("=")
        if name not in DEFAULT_LATENCY_MS or not ms.isdigit():
            known = ", ".join(sorted(DEFAULT_LATENCY_MS))
            raise ConfigError(f"--latency-ms {item!r}: expected COMPONENT=MS, COMPONENT in {known}")
        overrides[name] = int(ms)
    return LatencyModel().overridden(overrides)


def pace_of(speed: float) -> float | None:
    """The virtual loop's pace for a replay ``speed`` (None: no pace, as fast as it goes)."""
    return None if math.isinf(speed) else speed
