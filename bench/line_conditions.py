"""Turn-taking on degraded phone lines: the labelled recordings as real calls deliver them.

bench/turn_taking.py measures clean, studio-like takes. This probe plays the same labelled
recordings (fixtures/audio/onsets.tsv) through line conditions (bench/line_effects.py: level,
noise, G.711 A-law and 16 kHz L16, packet loss, DC, AGC, band limit; each alone, then a few
combined) into the same gateway (the shipped config, the bench's scripted model) and counts,
per condition:

- ``end_of_speech``: turns answered, turns split (the bot answered before the labelled end of
  speech: the turn ended at a pause inside it), unanswered, ms from the labelled end of
  speech to the first bot audio (p50/p95), and why the turns ended;
- ``barge_in``: the caller talks over the bot's long answer: missed barge-ins (no flush from
  500 ms before the labelled onset on), ms from the onset to the flush;
- ``false_barge_ins``: the caller stays quiet (the line's noise goes on) while the bot gives
  its long answer: flushes sent anyway.

Calls run ``--concurrency`` at a time on one gateway to fit the condition matrix in minutes;
compare a condition with ``clean`` of the same run, not with bench/turn_taking.py's figures.
Latencies are wall-clock (media at real time): other load on the machine moves them.

    python bench/line_conditions.py [--conditions clean,white_10,...] [--eos 14 --barge 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import zlib
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from line_effects import Condition, LinePath, speech_rms, talker
from turn_taking import (
    CUE_AT_MS,
    OPENER,
    AnswerCaller,
    Bench,
    Labelled,
    bench_settings,
    gateway,
    labelled_recordings,
    percentile,
    spread,
)

from voicegate.audio.resample import resample_all
from voicegate.audio.wav import read_wav
from voicegate.callers.asterisk import AsteriskCaller
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import TwilioCaller
from voicegate.types import SILENCE_BYTE

ROOT = Path(__file__).resolve().parent.parent
BAND = (500.0, 2500.0)


def conditions() -> list[Condition]:
    """Each effect on its own, then a few together."""
    alone = [
        Condition("clean"),
        Condition("quiet_-45dBFS", peak_dbfs=-45),
        Condition("quiet_-35dBFS", peak_dbfs=-35),
        Condition("hot_clipped_+10dB", overdrive_db=10),
        *(
            Condition(f"{kind}_{snr}dB", noise=kind, snr_db=snr)
            for kind in ("white", "pink", "hum50", "hum60", "comfort")
            for snr in (20, 10, 5)
        ),
        Condition("alaw", wire="alaw"),
        Condition("l16_16k", wire="slin16"),
        *(Condition(f"loss_zero_{p}pct", loss=p / 100) for p in (1, 3, 5)),
        *(Condition(f"loss_plc_{p}pct", loss=p / 100, plc=True) for p in (1, 3, 5)),
        Condition("dc_800", dc=800),
        Condition("agc", agc=True),
        Condition("band_500_2500", band_hz=BAND),
    ]
    combined = [
        Condition("quiet_-35+pink_10dB", peak_dbfs=-35, noise="pink", snr_db=10),
        Condition("agc+white_20dB", agc=True, noise="white", snr_db=20),
        Condition("band+plc_3pct+hum50_20dB", band_hz=BAND, loss=0.03, plc=True, noise="hum50"),
        Condition("alaw+quiet_-45dBFS", wire="alaw", peak_dbfs=-45),
        Condition("quiet_-35+dc_800+loss_zero_3pct", peak_dbfs=-35, dc=800, loss=0.03),
    ]
    return alone + combined


def at_16k(rec: Labelled) -> Labelled:
    """The recording at 16 kHz: the 16 kHz take where there is one, else resampled up."""
    wide = ROOT / "fixtures" / "audio" / rec.name.replace("_8k.wav", "_16k.wav")
    wav = read_wav(wide if wide.exists() else ROOT / "fixtures" / "audio" / rec.name)
    samples = wav.samples
    if wav.sample_rate != 16000:
        samples = resample_all(samples, wav.sample_rate, 16000)
    return Labelled(rec.name, samples, rec.onset_ms, rec.offset_ms)


class AnswerAsterisk(AsteriskCaller):
    """:class:`AnswerCaller`'s hang-up rule for an Asterisk channel."""

    def finished(self, deadline_ms: int) -> bool:
        """The bot answered after the caller's cue (or the deadline passed)."""
        script = self._line.script
        end = CUE_AT_MS + max(len(c.samples) for c in script.cues) * 1000 // script.sample_rate
        answered = any(t > end for t in self.bot_started_ms)
        return (
            self.now_ms >= deadline_ms
            or (answered and not self._line.playback.buffered_bytes)
            or (answered and self.now_ms > max(self.bot_started_ms) + 300)
        )


class Probe:
    """Places one condition's calls on a shared gateway, ``limit`` at a time."""

    def __init__(self, bench: Bench, limit: asyncio.Semaphore) -> None:
        self._bench = bench
        self._limit = limit

    async def call(
        self,
        condition: Condition,
        cues: list[tuple[Labelled, Cue]],
        *,
        tail_ms: int,
        answered: bool = False,
    ) -> tuple[Any, list[dict[str, Any]]]:
        """One call of ``cues`` (each recording with its placement) over ``condition``."""
        rate = 16000 if condition.wire == "slin16" else 8000
        said = []
        for rec, cue in cues:
            source = at_16k(rec) if rate == 16000 else rec
            said.append(_with_samples(cue, talker(source.samples, condition, rate)))
        script = CallerScript(said, rate, tail_ms=tail_ms)
        number = self._bench.next_id()
        async with self._limit:
            if condition.wire == "twilio":
                rec, _ = cues[-1]
                level = speech_rms(said[-1].samples, rec.onset_ms, rec.offset_ms, rate)
                seed = zlib.crc32(f"{condition.name}/{rec.name}/{len(cues)}".encode())
                path = LinePath(condition, rate, level, seed) if condition.on_line else None
                kind = AnswerCaller if answered else TwilioCaller
                caller: Any = kind(script, call_sid=f"CA{number:032d}", echo=path)  # type: ignore[arg-type]
                return caller, await self._bench.place(caller)
            kind_a = AnswerAsterisk if answered else AsteriskCaller
            caller = kind_a(script, channel_id=f"1.{number}", codec=condition.wire)
            return caller, await self._bench.place(caller, route="asterisk")


def _with_samples(cue: Cue, samples: np.ndarray) -> Cue:
    return Cue(samples, cue.at_ms, cue.after_bot_speech, cue.delay_ms, cue.label)


def playing_frames(caller: Any) -> np.ndarray:
    """Per 20 ms frame, whether the caller heard bot audio (any wire encoding)."""
    wire = getattr(getattr(caller, "_line", None), "wire", None)
    silent = SILENCE_BYTE[wire.encoding] if wire is not None else b"\xff"
    size = wire.bytes_for_ms(20) if wire is not None else 160
    track = np.frombuffer(bytes(caller.bot_track), dtype=np.uint8)
    frames = track[: len(track) // size * size].reshape(-1, size)
    playing: np.ndarray = (frames != silent[0]).any(axis=1)
    return playing


async def end_of_speech(probe: Probe, condition: Condition, rec: Labelled) -> dict[str, Any]:
    """One turn: answered, split inside the labelled speech, latency, the turn's end reason."""
    caller, timeline = await probe.call(
        condition, [(rec, Cue(rec.samples, at_ms=CUE_AT_MS))], tail_ms=1500, answered=True
    )
    end = CUE_AT_MS + rec.offset_ms
    first = next((t for t in caller.bot_started_ms if t >= CUE_AT_MS), None)
    eot = next((r for r in timeline if r["event"] == "end_of_turn"), None)
    return {
        "ms": None if first is None else first - end,
        "reason": eot["reason"] if eot else "vad stop",
    }


async def barge_in(
    probe: Probe, condition: Condition, opener: Labelled, rec: Labelled
) -> dict[str, Any]:
    """The caller talks over the bot: flushed at all, how long after the labelled onset."""
    cues = [
        (opener, Cue(opener.samples, at_ms=CUE_AT_MS)),
        (rec, Cue(rec.samples, after_bot_speech=1, delay_ms=1200)),
    ]
    caller, _ = await probe.call(condition, cues, tail_ms=1500)
    if not caller.bot_started_ms:
        return {"bot_never_spoke": True}
    onset = caller.bot_started_ms[0] + 1200 + rec.onset_ms
    clear = next((t for t in caller.clears if t >= onset - 500), None)
    early = [t for t in caller.clears if t < onset - 500]
    # A provider that can pause (Asterisk) is paused at detection and flushed only at
    # confirmation: the audible stop is the figure to compare across dialects.
    playing = playing_frames(caller)
    frames = range(onset // 20, len(playing))
    stop = next((i * 20 for i in frames if not playing[i]), None)
    return {
        "clear_ms": None if clear is None else clear - onset,
        "stop_ms": None if stop is None else stop - onset,
        "early_clears": len(early),
    }


async def silent(probe: Probe, condition: Condition, opener: Labelled) -> dict[str, Any]:
    """The caller is quiet while the bot answers at length: flushes are false barge-ins."""
    caller, _ = await probe.call(
        condition, [(opener, Cue(opener.samples, at_ms=CUE_AT_MS))], tail_ms=9000
    )
    return {"clears": len(caller.clears), "bot_spoke": bool(caller.bot_started_ms)}


def summary(
    eos: list[dict[str, Any]], barge: list[dict[str, Any]], quiet: list[dict[str, Any]]
) -> dict[str, Any]:
    """One condition's counts and spreads."""
    latencies = [r["ms"] for r in eos if r["ms"] is not None and r["ms"] >= 0]
    reasons: dict[str, int] = {}
    for r in eos:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    flushes = [r["clear_ms"] for r in barge if r.get("clear_ms") is not None]
    return {
        "turns": len(eos),
        "answered": len(latencies),
        "split": sum(1 for r in eos if r["ms"] is not None and r["ms"] < 0),
        "unanswered": sum(1 for r in eos if r["ms"] is None),
        "ms_end_of_speech_to_bot_audio": spread(latencies),
        "turn_end_reasons": reasons,
        "barge_ins": len(barge),
        "missed_barge_ins": sum(1 for r in barge if r.get("clear_ms") is None),
        "ms_onset_to_clear_p50": percentile(flushes, 0.5),
        "ms_onset_to_audible_stop_p50": percentile(
            [r["stop_ms"] for r in barge if r.get("stop_ms") is not None], 0.5
        ),
        "flushes_before_onset": sum(r.get("early_clears", 0) for r in barge),
        "false_barge_ins_quiet_caller": sum(r["clears"] for r in quiet),
        "quiet_calls": len(quiet),
    }


def pick(items: list[Labelled], count: int) -> list[Labelled]:
    """``count`` recordings spread evenly over the list (every source, short and long)."""
    if count >= len(items):
        return items
    return [items[round(i * (len(items) - 1) / max(1, count - 1))] for i in range(count)]


async def probe_condition(
    probe: Probe,
    condition: Condition,
    opener: Labelled,
    eos: list[Labelled],
    barge: list[Labelled],
    quiet: int,
) -> dict[str, Any]:
    """Every call of one condition, concurrently within the probe's limit."""
    # The quiet-caller calls are the longest (the bot's whole answer): placed first.
    jobs: list[Awaitable[dict[str, Any]]] = [silent(probe, condition, opener) for _ in range(quiet)]
    jobs += [end_of_speech(probe, condition, r) for r in eos]
    jobs += [barge_in(probe, condition, opener, r) for r in barge]
    results = await asyncio.gather(*jobs)
    out = summary(
        list(results[quiet : quiet + len(eos)]),
        list(results[quiet + len(eos) :]),
        list(results[:quiet]),
    )
    out["per_file_ms"] = {r.name: res["ms"] for r, res in zip(eos, results[quiet:], strict=False)}
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every condition asked for, on one gateway."""
    recordings = labelled_recordings()
    opener = next(rec for rec in recordings if rec.name == OPENER)
    others = [rec for rec in recordings if rec is not opener]
    eos, barge = pick(recordings, args.eos), pick(others, args.barge)
    wanted = set(args.conditions.split(",")) if args.conditions else None
    chosen = [c for c in conditions() if wanted is None or c.name in wanted]
    out: dict[str, Any] = {
        "benchmark": "line_conditions",
        "concurrency": args.concurrency,
        "recordings": {"end_of_speech": len(eos), "barge_in": len(barge), "quiet": args.quiet},
        "conditions": {},
    }
    limit = asyncio.Semaphore(args.concurrency)
    with tempfile.TemporaryDirectory() as data:
        async with gateway(bench_settings("current", Path(data)), 1.0) as bench:
            probe = Probe(bench, limit)
            for condition in chosen:
                result = await probe_condition(probe, condition, opener, eos, barge, args.quiet)
                out["conditions"][condition.name] = result
                print(
                    condition.name,
                    json.dumps({k: v for k, v in result.items() if k != "per_file_ms"}),
                    file=sys.stderr,
                    flush=True,
                )
    return out


def main() -> None:
    """Print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", default="", help="comma-separated names; empty: all")
    parser.add_argument("--eos", type=int, default=14, help="recordings for end_of_speech")
    parser.add_argument("--barge", type=int, default=8, help="recordings for barge_in")
    parser.add_argument("--quiet", type=int, default=1, help="quiet-caller calls per condition")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--list", action="store_true", help="list the conditions and exit")
    args = parser.parse_args()
    if args.list:
        print("\n".join(c.name for c in conditions()))
        return
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
