"""Turn-taking at real time: answer latency, barge-in stop, echo and non-speech bursts.

Issue 14 §5. One gateway in process (the shipped config/voicegate.yml: embedded Whisper
tiny.en, espeak-ng, the VAD; the scripted model of bench/turn_taking.yml) and emulated Twilio
callers on loopback, one call at a time, at real time (``--speed 1``). Every figure is computed
against labelled onsets and offsets (fixtures/audio/onsets.tsv, labelled from the waveform,
never by the VAD under test) or against synthetic bursts whose timing is known by construction.

- ``end_of_speech``: the caller says one human recording; ms from its labelled end of speech
  to the first bot audio the caller hears (p50/p95), and why the gateway ended the turn. A
  bot that starts before the labelled end (the turn ended at a pause between two words) is
  listed in ``answered_before_end_of_speech``, not in the latencies.
- ``barge_in``: the caller talks over the bot's long answer; ms from the labelled onset to
  the bot audio stopping at the caller (audible stop) and to the provider's ``clear``.
- ``echo``: the caller is silent while the bot talks, with the echo loopback on (-40, -30,
  -20 and -10 dB; 100 and 250 ms): false barge-ins; and the caller talking over that echo:
  detected.
- ``bursts``: non-speech bursts (broadband noise, coughs, a door slam, DTMF, clicks, breath;
  synthetic, see ``bursts()``) while the bot talks: false triggers.

``--variant speculative`` turns speculative turns on (``turns.end_of_turn.speculative``).
``--variant baseline`` runs this branch with the end-of-turn model and echo gate off and the
VAD's 500 ms stop (the behaviour before issue 14); on a tree without ``voicegate.turns`` the
script runs that tree as it is.

    python bench/turn_taking.py [--variant current|baseline] [--parts end_of_speech,echo,...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import voicegate
from voicegate.audio.pcm import Samples
from voicegate.audio.resample import resample_all
from voicegate.audio.wav import read_wav
from voicegate.callers.driver import drive
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import FRAME_BYTES, FRAME_MS, TwilioCaller
from voicegate.cli import wiring
from voicegate.cli.serve_command import read_settings
from voicegate.config import ServerSettings, Settings, StoreSettings
from voicegate.gateway.lifecycle import Gateway

ROOT = Path(__file__).resolve().parent.parent

AUDIO = ROOT / "fixtures" / "audio"
RATE = 8000
CUE_AT_MS = 600


@dataclass(frozen=True, slots=True)
class Labelled:
    """A human recording at 8 kHz with its labelled speech onset and offset (ms)."""

    name: str
    samples: Samples
    onset_ms: int
    offset_ms: int


def labelled_recordings() -> list[Labelled]:
    """Every human recording with labels: the 8 kHz alsa takes, asterisk and pocketsphinx."""
    rows = (AUDIO / "onsets.tsv").read_text(encoding="utf-8").splitlines()[1:]
    found = []
    for row in rows:
        path, onset, offset, _ = row.split("\t")
        if "/alsa/" in path and not path.endswith("_8k.wav"):
            continue  # the alsa takes come at both rates: the 8 kHz copy is the phone one
        wav = read_wav(AUDIO / path)
        samples = wav.samples
        if wav.sample_rate != RATE:
            samples = resample_all(samples, wav.sample_rate, RATE)
        found.append(Labelled(path, samples, int(onset), int(offset)))
    return found


#: What the caller says first in the barge-in, echo and burst parts, so the bot answers at
#: length. One phrase without a gap inside: "front ... center" (the first recording) holds
#: ~220 ms of silence and a faint /s/ between its words, where the end-of-turn model may end
#: the turn (the end_of_speech part shows it), and the caller's "center" would then be a real
#: barge-in counted as the echo's or the burst's.
OPENER = "human/asterisk/please-try-again.wav"


def bursts() -> dict[str, Samples]:
    """Non-speech sounds (8 kHz), made here so their timing and nature are known exactly."""
    rng = np.random.default_rng(14)
    t = np.arange(RATE) / RATE

    def shaped(noise: np.ndarray, ms: int, attack: float, decay: float) -> Samples:
        n = RATE * ms // 1000
        env = np.minimum(1.0, np.arange(n) / (attack * RATE)) * np.exp(
            -np.arange(n) / (decay * RATE)
        )
        shaped_sound: Samples = np.clip(noise[:n] * env, -32767, 32767).astype(np.int16)
        return shaped_sound

    white = rng.standard_normal(RATE) * 6000
    low = np.convolve(rng.standard_normal(RATE), np.ones(16) / 16, mode="same") * 20000
    noise = read_wav(AUDIO / "human/alsa/Noise_8k.wav").samples[:RATE]
    dtmf = (np.sin(2 * np.pi * 697 * t) + np.sin(2 * np.pi * 1209 * t)) * 6000
    clicks = np.zeros(RATE)
    clicks[:: RATE // 10] = 20000
    return {
        "noise": noise,
        "cough": shaped(white, 300, 0.01, 0.08),
        "door_slam": shaped(low, 250, 0.002, 0.05),
        "dtmf": shaped(dtmf, 200, 0.001, 10.0),
        "clicks": shaped(clicks, 500, 0.0001, 10.0),
        "breath": shaped(white * 0.25, 600, 0.2, 0.3),
    }


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile, None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def spread(values: list[float]) -> dict[str, Any]:
    """p50/p95/max and the count."""
    return {
        "n": len(values),
        "p50": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
        "max": max(values) if values else None,
    }


# --- the gateway ------------------------------------------------------------------------------


def bench_settings(variant: str, data_dir: Path, config: Path | None = None) -> Settings:
    """``config`` (config/voicegate.yml) with the bench's scripted model, as ``variant``."""
    # By default the settings file of the tree whose voicegate is imported (this one, or a
    # baseline's); --config measures another setting on the same tree.
    if config is None:
        config = Path(voicegate.__file__).parent.parent / "config" / "voicegate.yml"
    settings = read_settings(config)
    engine = replace(settings.engine, llm=f"scripted:{ROOT / 'bench' / 'turn_taking.yml'}")
    settings = replace(
        settings,
        engine=engine,
        store=StoreSettings(data_dir=data_dir),
        server=ServerSettings(host="127.0.0.1", port=0),
    )
    if variant == "speculative":
        eot = replace(settings.turns.end_of_turn, speculative=True)
        settings = replace(settings, turns=replace(settings.turns, end_of_turn=eot))
    if variant == "baseline" and hasattr(settings, "turns"):
        eot = replace(settings.turns.end_of_turn, model="none")
        gate = replace(settings.turns.echo_gate, enabled=False)
        settings = replace(settings, turns=replace(settings.turns, end_of_turn=eot, echo_gate=gate))
    return settings


class AnswerCaller(TwilioCaller):
    """Hangs up once the bot has started answering after the caller's last cue."""

    def finished(self, deadline_ms: int) -> bool:
        """The bot answered (or the deadline passed)."""
        end = CUE_AT_MS + max(len(c.samples) for c in self._script.cues) * 1000 // RATE
        answered = any(t > end for t in self.bot_started_ms)
        return (
            self.now_ms >= deadline_ms
            or (answered and not self._buffer)
            or (answered and self.now_ms > max(self.bot_started_ms) + 300)
        )


class Bench:
    """One gateway; calls placed one after another."""

    def __init__(self, runner: Any, url: str, speed: float) -> None:
        self._runner = runner
        self._url = url
        self._speed = speed
        self._calls = 0

    async def call(
        self,
        cues: list[Cue],
        *,
        echo: tuple[int, float] | None = None,
        tail_ms: int = 1500,
        max_ms: int = 15000,
        answered: bool = False,
    ) -> tuple[TwilioCaller, list[dict[str, Any]]]:
        """Run one call; the caller and the gateway's timeline."""
        sid = f"CA{self.next_id():032d}"
        kwargs: dict[str, Any] = {}
        if echo is not None:
            from voicegate.callers.echo import EchoPath

            kwargs["echo"] = EchoPath(RATE, delay_ms=echo[0], gain_db=echo[1])
        script = CallerScript(cues, RATE, tail_ms=tail_ms)
        caller = (AnswerCaller if answered else TwilioCaller)(script, call_sid=sid, **kwargs)
        return caller, await self.place(caller, max_ms=max_ms)

    def next_id(self) -> int:
        """A number no earlier call of this bench used (for call ids)."""
        self._calls += 1
        return self._calls

    async def place(
        self, caller: Any, *, route: str = "twilio", max_ms: int = 15000
    ) -> list[dict[str, Any]]:
        """Run one call of any emulated caller on ``route``; the gateway's timeline of it."""
        url = self._url.removesuffix("/twilio") + "/" + route
        await drive(url, caller, speed=self._speed, max_ms=max_ms)
        for _ in range(200):  # the session keeps its timeline once it has finished
            if (timeline := self._runner.timeline(caller.call_id)) is not None:
                return list(timeline.records)
            await asyncio.sleep(0.05)
        return []


@asynccontextmanager
async def gateway(settings: Settings, speed: float) -> AsyncIterator[Bench]:
    """A gateway on a free loopback port."""
    async with (
        wiring.open_runner(settings) as runner,
        Gateway(runner, settings.gateway_options()) as gw,
    ):
        yield Bench(runner, "ws" + gw.base_url.removeprefix("http") + "/twilio", speed)


# --- the parts --------------------------------------------------------------------------------


def bot_audio_frames(caller: TwilioCaller) -> np.ndarray:
    """Per 20 ms frame, whether the caller heard bot audio."""
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // FRAME_BYTES * FRAME_BYTES].reshape(-1, FRAME_BYTES)
    playing: np.ndarray = (frames != 0xFF).any(axis=1)
    return playing


def stages(timeline: list[dict[str, Any]], end_ms: int) -> dict[str, int]:
    """Media time after the labelled end of speech at which each step happened."""
    found = {}
    for name, event, match in (
        ("turn_end_declared", "speech_ended", {}),
        ("final_transcript", "transcript", {"final": True}),
        ("turn_started", "turn_started", {}),
        ("first_say", "say", {}),
        ("bot_speaking", "bot_speaking", {}),
    ):
        record = next(
            (
                r
                for r in timeline
                if r["event"] == event
                and r["t_ms"] >= end_ms - 400
                and all(r.get(k) == v for k, v in match.items())
            ),
            None,
        )
        if record is not None:
            found[name] = record["t_ms"] - end_ms
    return found


async def end_of_speech(bench: Bench, recordings: list[Labelled]) -> dict[str, Any]:
    """Labelled end of caller speech -> first bot audio at the caller."""
    latencies: list[float] = []
    early: list[str] = []
    reasons: dict[str, int] = {}
    per_file: dict[str, Any] = {}
    stage_times: dict[str, list[float]] = {}
    for rec in recordings:
        caller, timeline = await bench.call(
            [Cue(rec.samples, at_ms=CUE_AT_MS, label=rec.name)], answered=True
        )
        end = CUE_AT_MS + rec.offset_ms
        first = next((t for t in caller.bot_started_ms if t >= CUE_AT_MS), None)
        eot = next((r for r in timeline if r["event"] == "end_of_turn"), None)
        reason = eot["reason"] if eot else "vad stop"
        reasons[reason] = reasons.get(reason, 0) + 1
        if first is not None and first < end:
            early.append(rec.name)  # the turn ended at a pause inside the labelled speech
        elif first is not None:
            latencies.append(first - end)
        per_file[rec.name] = {
            "ms": None if first is None else first - end,
            "reason": reason,
            "score": eot.get("score") if eot else None,
            "model": eot.get("model") if eot else None,
            "words": eot.get("words") if eot else None,
            # Where the time went: the VAD's end after the labelled one, then the silence the
            # decision waited for (pause_ms, or the model's and the decode's answers).
            "vad_end_after_label_ms": eot["end_ms"] - end if eot else None,
            "silence_ms": eot.get("silence_ms") if eot else None,
            "stages_ms": stages(timeline, end),
        }
        for stage, at in per_file[rec.name]["stages_ms"].items():
            stage_times.setdefault(stage, []).append(at)
    return {
        "ms_end_of_speech_to_first_bot_audio": spread(latencies),
        "stage_p50_ms_after_end_of_speech": {k: percentile(v, 0.5) for k, v in stage_times.items()},
        "unanswered": len(recordings) - len(latencies) - len(early),
        "answered_before_end_of_speech": early,
        "turn_end_reasons": reasons,
        "per_file": per_file,
    }


async def barge_in(bench: Bench, opener: Labelled, recordings: list[Labelled]) -> dict[str, Any]:
    """Labelled onset of talking over the bot -> audible stop and -> clear."""
    stops: list[float] = []
    flushes: list[float] = []
    missed = 0
    for rec in recordings:
        cues = [
            Cue(opener.samples, at_ms=CUE_AT_MS),
            Cue(rec.samples, after_bot_speech=1, delay_ms=1200, label=rec.name),
        ]
        caller, _ = await bench.call(cues, tail_ms=1500)
        if not caller.bot_started_ms:
            missed += 1
            continue
        onset = caller.bot_started_ms[0] + 1200 + rec.onset_ms
        playing = bot_audio_frames(caller)
        stop = next(
            (i * FRAME_MS for i in range(onset // FRAME_MS, len(playing)) if not playing[i]), None
        )
        clear = next((t for t in caller.clears if t >= onset - 500), None)
        if clear is None:
            missed += 1
        else:
            flushes.append(clear - onset)
        if stop is not None:
            stops.append(stop - onset)
    return {
        "ms_onset_to_audible_stop": spread(stops),
        "ms_onset_to_clear": spread(flushes),
        "missed": missed,
        "n": len(recordings),
    }


async def echo(
    bench: Bench,
    opener: Labelled,
    recordings: list[Labelled],
    calls: int,
    gains: list[float],
    delays: list[int],
) -> dict[str, Any]:
    """False barge-ins from the bot's own echo, and the caller detected over that echo.

    Weak echo (-30, -40 dB) is where the gate's margin grows past the old 20 dB cap towards
    ``max_margin_db``: the false barge-ins there are what that costs.
    """
    report = {}
    for gain in gains:
        for delay in delays:
            false = 0
            detected = 0
            for index in range(calls):
                caller, _ = await bench.call(
                    [Cue(opener.samples, at_ms=CUE_AT_MS)], echo=(delay, gain), tail_ms=9000
                )
                false += len(caller.clears)
                rec = recordings[index % len(recordings)]
                cues = [
                    Cue(opener.samples, at_ms=CUE_AT_MS),
                    Cue(rec.samples, after_bot_speech=1, delay_ms=1500),
                ]
                caller, _ = await bench.call(cues, echo=(delay, gain), tail_ms=1500)
                detected += bool(caller.clears)
            report[f"{gain:g}dB_{delay}ms"] = {
                "calls": calls,
                "false_barge_ins": false,
                "caller_detected_over_echo": detected,
            }
    return report


async def burst_triggers(bench: Bench, opener: Labelled) -> dict[str, Any]:
    """Non-speech bursts while the bot talks: false triggers (a clear sent)."""
    report = {}
    for name, sound in bursts().items():
        cues = [Cue(opener.samples, at_ms=CUE_AT_MS), Cue(sound, after_bot_speech=1, delay_ms=1200)]
        caller, _ = await bench.call(cues, tail_ms=2500)
        report[name] = len(caller.clears)
    return {"false_triggers": sum(report.values()), "per_burst": report}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every part asked for, on one gateway."""
    recordings = labelled_recordings()
    opener = next(rec for rec in recordings if rec.name == OPENER)
    if args.limit:
        recordings = recordings[: args.limit]
    others = [rec for rec in recordings if rec is not opener]
    parts = args.parts.split(",")
    out: dict[str, Any] = {"benchmark": "turn_taking", "variant": args.variant, "speed": args.speed}
    with tempfile.TemporaryDirectory() as data:
        settings = bench_settings(args.variant, Path(data), args.config)
        async with gateway(settings, args.speed) as bench:
            if "end_of_speech" in parts:
                out["end_of_speech"] = await end_of_speech(bench, recordings)
            if "barge_in" in parts:
                out["barge_in"] = await barge_in(bench, opener, others)
            if "echo" in parts:
                gains = [float(g) for g in args.echo_gains.split(",")]
                delays = [int(d) for d in args.echo_delays.split(",")]
                out["echo"] = await echo(bench, opener, others, args.echo_calls, gains, delays)
            if "bursts" in parts:
                out["bursts"] = await burst_triggers(bench, opener)
    return out


def main() -> None:
    """Print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant", choices=("current", "baseline", "speculative"), default="current"
    )
    parser.add_argument("--parts", default="end_of_speech,barge_in,echo,bursts")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument(
        "--config", type=Path, default=None, help="settings file (default: the tree's own)"
    )
    parser.add_argument("--limit", type=int, default=0, help="use only the first N recordings")
    parser.add_argument("--echo-calls", type=int, default=5)
    parser.add_argument(
        "--echo-gains", default="-40,-30,-20,-10", help="echo levels, dB (--echo-gains=-40,-30)"
    )
    parser.add_argument("--echo-delays", default="100,250", help="echo delays, ms")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
