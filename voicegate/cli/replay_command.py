"""``voicegate replay INPUT``: stream a recorded or staged caller to a gateway, as a provider would.

INPUT is a WAV file (any rate; ``--channel`` picks one of its channels), raw G.711
(``.ulaw``, ``.alaw``, 8 kHz) or Asterisk signed linear (``.sln``, ``.sln16``, ...), a Twilio
message recording (``.jsonl``) or a scenario (``fixtures/calls/*.yml``). The emulated
provider keeps its own media clock, echoes marks when the audio before them has played, and
honours ``clear`` (callers/twilio.py, callers/browser.py). Without ``--url`` the gateway runs
in process, built exactly like ``voicegate serve`` from ``--config``, ``--project`` and
``--llm``, with memory in a temporary store. Writes ``call.wav`` and ``timeline.jsonl`` to
``--out``, prints a summary, and with ``--report`` draws the call as HTML or PNG
(docs/replay.md, docs/timeline.md).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicegate.callers.echo import EchoPath
from voicegate.callers.inputs import MIN_RECORDING_MS, load_recording
from voicegate.callers.labels import labels_of
from voicegate.callers.report import caller_summary, summary, write_call_wav, write_jsonl
from voicegate.callers.scenario import SCENARIO_SUFFIXES, Scenario, load_scenario
from voicegate.callers.script import CallerScript, Cue
from voicegate.cli import replay_clock
from voicegate.cli.channel_option import add_channel_option
from voicegate.cli.paths import check_output_dir
from voicegate.cli.replay_report import check_reports, write_reports
from voicegate.cli.replaying import (
    PROVIDER_PATHS,
    ReplayResult,
    caller_rate,
    new_caller,
    replay_in_process,
    replay_remote,
    replay_scenario,
    stream_url,
    with_fresh_store,
)
from voicegate.cli.serve_command import apply_overrides, read_settings
from voicegate.cli.transcribe_command import transcribe_recording
from voicegate.errors import ConfigError
from voicegate.gateway.transport import CLOSE_NORMAL

DEFAULT_OUT = Path("replay-out")
DEFAULT_TAIL_MS = 3000
DEFAULT_MAX_MS = 60_000


def add_parser(subparsers: Any) -> None:
    """Register ``voicegate replay``."""
    parser = subparsers.add_parser(
        "replay",
        help="stream a recorded caller to a gateway and write call.wav and timeline.jsonl",
        description=(
            "Stream a recorded caller (WAV, raw μ-law, Twilio JSONL) or a scenario (.yml) to "
            "a gateway as a provider would: in process unless --url is given. Writes "
            "call.wav and timeline.jsonl to --out and prints a summary (docs/replay.md)."
        ),
    )
    parser.add_argument(
        "input", type=Path, metavar="INPUT", help=".wav, .ulaw, .alaw, .sln, .jsonl or .yml"
    )
    add_channel_option(parser)
    parser.add_argument(
        "--provider",
        choices=sorted(PROVIDER_PATHS),
        help="the provider the caller emulates (default twilio; docs/protocols/)",
    )
    parser.add_argument("--url", help="a running gateway, e.g. ws://127.0.0.1:8080/twilio")
    replay_clock.add_options(parser)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--config", type=Path, help="settings file, as for serve")
    parser.add_argument("--project", type=Path, help="agent project directory, as for serve")
    parser.add_argument("--llm", metavar="SPEC", help="language model, e.g. scripted:FILE")
    parser.add_argument(
        "--tail-ms",
        type=int,
        default=DEFAULT_TAIL_MS,
        help="hang up once the bot has answered and been quiet this long (real time)",
    )
    parser.add_argument(
        "--max-ms",
        type=int,
        help="hang up at this media time at most (default: a recording's length plus 60000; "
        "a scenario's max_ms)",
    )
    parser.add_argument(
        "--echo-delay-ms",
        type=int,
        help="acoustic echo loopback: mix the bot audio the caller hears back into what the "
        "caller sends, this many ms later, band-limited to 300-3400 Hz",
    )
    parser.add_argument(
        "--echo-gain-db", type=float, default=-20.0, help="level of that echo (default -20 dB)"
    )
    parser.add_argument(
        "--report",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="also draw the call: FILE.html (one self-contained page) or FILE.png; repeatable",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """The ``replay`` handler."""
    _check(args)
    if args.input.suffix.lower() in SCENARIO_SUFFIXES:
        return _replay_scenario(args, load_scenario(args.input))
    outcome = replay_clock.run_call(args, _replay_recording(args))
    _report(args, outcome, unmet=[])
    return _exit_status(outcome.result)


def _exit_status(result: ReplayResult) -> int:
    """0 when the call ended normally; 1 (and why, on stderr) when the gateway refused it
    (1013, 1008), failed it (1011, 1002) or went away (1001): a replay run as a check fails."""
    code = result.close_code
    if code in (None, CLOSE_NORMAL):
        return 0
    reason = next(
        (
            str(r.get("close_reason", ""))
            for r in reversed(result.caller_records)
            if r.get("event") == "stream_closed"
        ),
        "",
    )
    detail = f": {reason}" if reason else ""
    print(f"voicegate replay: the gateway closed the call with {code}{detail}", file=sys.stderr)
    return 1


@dataclass(frozen=True, slots=True)
class _Outcome:
    result: ReplayResult
    provider: str
    sample_rate: int
    against: str  # "an in-process gateway" or the URL
    notes: tuple[str, ...] = ()  # about the recording, printed first
    recording_ms: int = 0  # the recording's length (a scenario's: 0, not compared)


async def _replay_recording(args: argparse.Namespace) -> _Outcome:
    recording = load_recording(args.input, args.channel)
    if args.max_ms is None:  # a long call recording plays whole, and the bot has time to answer
        args.max_ms = recording.duration_ms + DEFAULT_MAX_MS
    provider = args.provider or "twilio"
    rate = caller_rate(provider, recording.sample_rate)
    # A labelled recording (transcripts.tsv beside it) names what the caller says, so even a
    # replay at a telephone URL, which sees no transcript from the gateway, can tell it.
    said = labels_of(args.input).transcript or ""
    notes = recording.notes
    if provider == "conversationrelay" and not said:
        # Twilio's own recogniser hears the caller; without a label, ours stands in for it.
        said = transcribe_recording(recording.samples, recording.sample_rate)
        notes += (f"no transcripts.tsv names what the caller says: recognised {said!r}",)
    cue = Cue(recording.at_rate(rate), at_ms=0, label=args.input.name, transcript=said)
    script = CallerScript([cue], rate)
    caller = new_caller(
        provider,
        script,
        call_id=recording.call_id,
        parameters=recording.parameters,
        quiet_ms=math.ceil(args.tail_ms * replay_clock.real_time_factor(args)),
        echo=_echo(args, rate),
    )
    if args.url:
        url = stream_url(args.url, provider)
        result = await replay_remote(url, caller, script, speed=args.speed, max_ms=args.max_ms)
        return _Outcome(result, provider, rate, url, notes, recording.duration_ms)
    settings = apply_overrides(read_settings(args.config), project=args.project, llm=args.llm)
    with tempfile.TemporaryDirectory(prefix="voicegate-replay-") as data_dir:
        result = await replay_in_process(
            with_fresh_store(settings, Path(data_dir)),
            provider,
            caller,
            script,
            speed=args.speed,
            max_ms=args.max_ms,
        )
    against = "an in-process gateway"
    return _Outcome(result, provider, rate, against, notes, recording.duration_ms)


def _replay_scenario(args: argparse.Namespace, scenario: Scenario) -> int:
    if args.project or args.llm:
        raise ConfigError("a scenario names its own project and model; drop --project and --llm")
    if args.channel is not None:
        raise ConfigError("a scenario's cues name their own channel (channel:); drop --channel")
    provider = args.provider or scenario.provider
    if args.url:
        rate = caller_rate(provider, 16000)
        script = scenario.caller_script(rate)
        quiet_ms = math.ceil(scenario.quiet_ms * replay_clock.real_time_factor(args))
        caller = new_caller(provider, script, parameters=scenario.parameters, quiet_ms=quiet_ms)
        url = stream_url(args.url, provider)
        onsets = [cue.onset_ms for cue in scenario.cues]
        result = replay_clock.run_call(
            args,
            replay_remote(
                url, caller, script, speed=args.speed, max_ms=scenario.max_ms, onsets=onsets
            ),
        )
        _report(args, _Outcome(result, provider, rate, url), unmet=[])
        return _exit_status(result)
    with tempfile.TemporaryDirectory(prefix="voicegate-scenario-") as workdir:
        base = read_settings(args.config) if args.config else None
        replay = replay_scenario(
            scenario, Path(workdir), speed=args.speed, provider=provider, base=base
        )
        run_ = replay_clock.run_call(args, replay)
    result = ReplayResult(run_.caller, run_.records, run_.caller_records, True, None)
    rate = run_.caller.sample_rate
    unmet = run_.unmet()
    _report(args, _Outcome(result, provider, rate, "an in-process gateway"), unmet=unmet)
    return 1 if unmet else 0


def _echo(args: argparse.Namespace, rate: int) -> EchoPath | None:
    """The echo loopback the options ask for, if any."""
    if args.echo_delay_ms is None:
        return None
    return EchoPath(rate, delay_ms=args.echo_delay_ms, gain_db=args.echo_gain_db)


def _check(args: argparse.Namespace) -> None:
    if not args.input.is_file():
        raise ConfigError(f"{args.input}: no such file")
    check_output_dir(args.out)  # before the call, not after it
    check_reports(args.report, args.out)
    replay_clock.check(args)
    if args.echo_delay_ms is not None and args.echo_delay_ms < 0:
        raise ConfigError("--echo-delay-ms must not be negative")
    if not math.isfinite(args.echo_gain_db):  # argparse's float() takes "nan" and "inf"
        raise ConfigError(f"--echo-gain-db must be a finite number of dB, not {args.echo_gain_db}")
    if args.tail_ms < 0 or (args.max_ms is not None and args.max_ms <= 0):
        raise ConfigError("--tail-ms must not be negative and --max-ms must be positive")
    if args.url:
        try:
            stream_url(args.url, args.provider or "twilio")
        except ValueError as error:
            raise ConfigError(f"--url: {error}") from None


def _report(args: argparse.Namespace, outcome: _Outcome, *, unmet: list[str]) -> None:
    """Write call.wav and timeline.jsonl (and caller.jsonl in process); print the summary."""
    result = outcome.result
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    caller_samples, bot_samples = result.caller.tracks()
    write_call_wav(out / "call.wav", caller_samples, bot_samples, outcome.sample_rate)
    count = write_jsonl(out / "timeline.jsonl", result.records)
    title = (
        f"replayed {args.input} as a {outcome.provider} caller (call {result.caller.call_id}) "
        f"against {outcome.against} at {replay_clock.describe(args)}"
    )
    print(title)
    if result.from_gateway:  # in process, or sent to a browser caller as ``event`` messages
        write_jsonl(out / "caller.jsonl", result.caller_records)
        lines = summary(result.records, observed=result.caller_records)
        source = f"the gateway's timeline, {count} events; caller side in {out / 'caller.jsonl'}"
    else:
        lines = caller_summary(result.records)
        source = (
            f"{count} events seen by the caller: the gateway's own timeline is not "
            f"available over the wire ({outcome.provider}; --provider browser carries it) "
            "(docs/replay.md)"
        )
    lines = [f"note: {note}" for note in outcome.notes] + lines + _unstreamed(args, outcome)
    lines += [f"expectation not met: {problem}" for problem in unmet]
    lines += [
        f"wrote {out / 'call.wav'} (stereo {outcome.sample_rate} Hz: caller left, bot right)",
        f"wrote {out / 'timeline.jsonl'} ({source})",
    ]
    lines += write_reports(args.report, result, title, outcome.sample_rate)
    print("\n".join("  " + line for line in lines), flush=True)


def _unstreamed(args: argparse.Namespace, outcome: _Outcome) -> list[str]:
    """Why the call ended before the recording did, when it did: a summary of a 10-minute
    recording that stopped at 9 s otherwise reads like the whole recording was heard."""
    result = outcome.result
    ended_ms = max((int(r["t_ms"]) for r in result.records + result.caller_records), default=0)
    left_ms = outcome.recording_ms - ended_ms
    if left_ms < MIN_RECORDING_MS:
        return []
    rest = f"the last {left_ms} ms of the {outcome.recording_ms} ms recording were not streamed"
    if ended_ms >= args.max_ms:
        return [f"note: the call stopped at --max-ms {args.max_ms}: {rest}; raise --max-ms"]
    if any(r["event"] == "call_ended_by_agent" for r in result.records):
        return [f"note: the agent ended the call at {ended_ms} ms: {rest}"]
    return [f"note: the call ended at {ended_ms} ms: {rest}"]
