"""CPU and memory of the per-call media path, in process, with no sockets (issue 12, item 3).

N simulated Twilio calls run concurrently in one event loop through the gateway's real
``CallSession`` (built by ``cli.wiring.build_runner`` from fixtures/config/deterministic.yml:
scripted STT, tone TTS, the default combined VAD, the demo project's scripted model). Each call
is a lightweight provider fake on a media clock: every inbound 20 ms ``media`` message carries
a real 8 kHz μ-law recording (fixtures/audio/human/asterisk) or silence; bot audio the gateway
sends is "played" 20 ms per inbound frame, marks are echoed once played and at once on
``clear``, as Twilio does. The caller says one thing, the bot answers, and the caller barges in
on the answer, so every stage runs: codec receive, CallMedia inbound (decode/resample/reframe),
VAD, STT push, the barge-in machine, playout release, codec send.

Three passes:

* ``total``: no instrumentation; CPU (``process_time``, all threads) per call-second of media.
* ``stages``: the same calls with each stage wrapped in thread-CPU timers; the split by stage
  in µs per call-second (``session_and_loop`` is what is left: the session's own
  code and the event loop; ``harness`` is the provider fake, subtracted from the total).
  ``echo_gate`` is the turn tracker's echo gate: its per-frame judgement and the bot audio
  it is told of (``played``, ``flushed``).
* ``memory``: tracemalloc and RSS growth per live call, sampled mid-call with all N calls up.

Call start: K calls started one after another with nothing else running; CPU (all threads and
the loop thread alone) and wall time from handing over the ``start`` message until the session
asks for the next message. The machine is shared, so every figure is a median over ``--runs``.

The event loop is uvloop, as ``voicegate serve`` runs it; ``--loop asyncio`` gives asyncio's own
(the loop these figures were taken on before; it costs ~15-20 % more CPU here).

    python bench/media_cost.py [--calls 50] [--runs 3] [--starts 20] [--loop asyncio]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import json
import os
import statistics
import tempfile
import time
import tracemalloc
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import uvloop

from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.wav import read_wav
from voicegate.cli.wiring import build_runner
from voicegate.codecs import CallStarted, TwilioCodec
from voicegate.config.loader import load_settings
from voicegate.gateway import bargein
from voicegate.gateway.session import SessionRunner, wiring
from voicegate.gateway.transport import Refusal

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "fixtures" / "config" / "deterministic.yml"
AUDIO = ROOT / "fixtures" / "audio" / "human" / "asterisk"
FRAME_MS = 20
FRAME_BYTES = 160  # 20 ms of 8 kHz μ-law
CALL_MS = 12_000
#: (start ms, recording): the request, then a barge-in on the bot's answer (which starts ~4.4 s).
CUES = ((500, "agent-pass.wav"), (6_000, "goodbye.wav"))
MEMORY_AT_MS = 7_000  # mid-call, during the bot's answer and the barge-in


def caller_payloads() -> list[str]:
    """Base64 μ-law payload of every 20 ms frame of the caller's side of one call."""
    samples = np.zeros(CALL_MS * 8, dtype=np.int16)
    for at_ms, name in CUES:
        audio = read_wav(AUDIO / name)
        assert audio.sample_rate == 8000, name
        start = at_ms * 8
        samples[start : start + len(audio.samples)] = audio.samples[: len(samples) - start]
    ulaw = samples_to_ulaw_bytes(samples)
    return [
        base64.b64encode(ulaw[i : i + FRAME_BYTES]).decode("ascii")
        for i in range(0, len(ulaw), FRAME_BYTES)
    ]


class Stages:
    """CPU nanoseconds (this thread's) spent per stage, and calls (instrumented pass only).

    Thread CPU rather than wall time: a stage descheduled on a busy machine is not charged.
    Each timer read costs ~0.5 µs; :meth:`calibrate` measures it so it can be taken out.
    """

    def __init__(self) -> None:
        self.ns: dict[str, int] = {}
        self.calls: dict[str, int] = {}

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` with its CPU time added to ``name``."""
        self.ns.setdefault(name, 0)
        self.calls.setdefault(name, 0)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time_ns()
            try:
                return fn(*args, **kwargs)
            finally:
                self.ns[name] += time.thread_time_ns() - start
                self.calls[name] += 1

        return wrapper

    def timed_steps(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Coroutine function ``fn`` with the CPU of its own steps (not its awaits) in ``name``."""
        self.ns.setdefault(name, 0)
        self.calls.setdefault(name, 0)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return _TimedSteps(fn(*args, **kwargs), self.ns, name)

        return wrapper

    @staticmethod
    def calibrate(count: int = 20_000) -> tuple[float, float]:
        """(ns a wrapper adds inside its own stage, ns it adds in all) per call."""
        probe = Stages()
        empty = probe.timed("empty", lambda: None)
        start = time.thread_time_ns()
        for _ in range(count):
            empty()
        total = (time.thread_time_ns() - start) / count
        return probe.ns["empty"] / count, total


class _TimedSteps:
    """Awaits a coroutine, adding the thread CPU of each of its steps to ``ns[name]``."""

    def __init__(self, coroutine: Any, ns: dict[str, int], name: str) -> None:
        self._coroutine, self._ns, self._name = coroutine, ns, name

    def __await__(self) -> Any:
        value: Any = None
        error: BaseException | None = None
        while True:
            start = time.thread_time_ns()
            try:
                if error is None:
                    yielded = self._coroutine.send(value)
                else:
                    yielded = self._coroutine.throw(error)
            except StopIteration as stop:
                self._ns[self._name] += time.thread_time_ns() - start
                return stop.value
            self._ns[self._name] += time.thread_time_ns() - start
            try:
                value, error = (yield yielded), None
            except BaseException as thrown:  # cancellation, passed on to the coroutine
                value, error = None, thrown


class FakeTwilio:
    """The provider side of one call: caller frames in, bot audio played, marks echoed."""

    def __init__(self, index: int, payloads: list[str], hooks: Hooks) -> None:
        self._sid = f"MZ{index:032d}"
        self._call_sid = f"CA{index:032d}"
        self._payloads = payloads
        self._hooks = hooks
        self._index = index
        self._frame = -2  # connected, start, then media frames
        self._pending: deque[str] = deque()
        self._queued = 0
        self._played = 0
        self._marks: deque[tuple[int, str]] = deque()
        self.sent = 0
        #: The call ends with Twilio's stop message, never by the socket closing.
        self.peer_close: str | None = None

    async def receive(self) -> str | None:
        """The next provider message; yields to the loop once per media frame, as a socket does."""
        if self._pending:
            return self._pending.popleft()
        if self._frame >= 0:
            await asyncio.sleep(0)
        message = self._hooks.make(self._next)()
        return message

    def _next(self) -> str | None:
        self._frame += 1
        if self._frame == -1:
            return '{"event":"connected","protocol":"Call","version":"1.0.0"}'
        if self._frame == 0:
            self._hooks.started(self._index)
            return self._start()
        if self._frame == 1:
            self._hooks.first_media(self._index)
        if self._frame > len(self._payloads):
            return None
        at_ms = (self._frame - 1) * FRAME_MS
        if at_ms == MEMORY_AT_MS:
            self._hooks.mid_call(self._index)
        self._play()
        media = (
            f'{{"event":"media","sequenceNumber":"{self._frame + 2}","streamSid":"{self._sid}",'
            f'"media":{{"track":"inbound","chunk":"{self._frame}","timestamp":"{at_ms}",'
            f'"payload":"{self._payloads[self._frame - 1]}"}}}}'
        )
        if self._pending:
            self._pending.append(media)
            return self._pending.popleft()
        return media

    def _start(self) -> str:
        start = {
            "event": "start",
            "sequenceNumber": "1",
            "streamSid": self._sid,
            "start": {
                "accountSid": "AC0",
                "streamSid": self._sid,
                "callSid": self._call_sid,
                "tracks": ["inbound"],
                "customParameters": {},
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            },
        }
        return json.dumps(start)

    def _play(self) -> None:
        self._played = min(self._queued, self._played + FRAME_BYTES)
        self._echo()

    def _echo(self) -> None:
        while self._marks and self._marks[0][0] <= self._played:
            _, name = self._marks.popleft()
            self._pending.append(
                f'{{"event":"mark","streamSid":"{self._sid}","mark":{{"name":"{name}"}}}}'
            )

    async def send(self, message: str | bytes) -> None:
        """Take one gateway message."""
        self._hooks.make(self._take)(message)

    def _take(self, message: str | bytes) -> None:
        self.sent += 1
        data = json.loads(message)
        match data["event"]:
            case "media":
                self._queued += len(data["media"]["payload"]) * 3 // 4
            case "mark":
                self._marks.append((self._queued, data["mark"]["name"]))
            case "clear":
                self._played = self._queued
                self._echo()

    async def close(self, code: int, reason: str) -> None:
        """Nothing to close in process."""


class Hooks:
    """Where the harness measures: optional timers around its own work, mid-call samples."""

    def __init__(self, stages: Stages | None = None, on_mid_call: Callable[[], None] | None = None):
        self._stages = stages
        self._on_mid_call = on_mid_call
        self.start_marks: dict[int, tuple[int, int, int]] = {}
        self.start_costs: list[tuple[int, int, int]] = []

    def make(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The harness's own work, timed as ``harness`` when stages are measured."""
        return fn if self._stages is None else self._stages.timed("harness", fn)

    def started(self, index: int) -> None:
        """The start message is handed over."""
        self.start_marks[index] = _clocks()

    def first_media(self, index: int) -> None:
        """The session processed the start and asks for media."""
        cpu, thread, wall = _clocks()
        cpu0, thread0, wall0 = self.start_marks[index]
        self.start_costs.append((cpu - cpu0, thread - thread0, wall - wall0))

    def mid_call(self, index: int) -> None:
        """All calls run in lock step: the first call at MEMORY_AT_MS means all are there."""
        if index == 0 and self._on_mid_call is not None:
            self._on_mid_call()


def _clocks() -> tuple[int, int, int]:
    return time.process_time_ns(), time.thread_time_ns(), time.perf_counter_ns()


def instrument(runner: SessionRunner, stages: Stages) -> tuple[SessionRunner, Callable[[], None]]:
    """A runner whose calls time every media stage; and an undo for the module patches."""
    services = runner.services
    media, stt = services.media, services.stt

    class TimedMedia:
        sample_rate = media.sample_rate

        def open(self, *args: Any, **kwargs: Any) -> Any:
            opened = media.open(*args, **kwargs)
            opened.inbound = stages.timed("media_inbound", opened.inbound)
            opened.detect_now = stages.timed("vad_detect", opened.detect_now)
            opened.detect_held = stages.timed_steps("vad_detect", opened.detect_held)
            return opened

        def __getattr__(self, name: str) -> Any:
            return getattr(media, name)

    class TimedStt:
        def open(self, *args: Any, **kwargs: Any) -> Any:
            stream = stt.open(*args, **kwargs)
            stream.push = stages.timed("stt_push", stream.push)
            return stream

        def __getattr__(self, name: str) -> Any:
            return getattr(stt, name)

    class TimedTurns:
        """Each call's tracker with the echo gate's own work timed (the end-of-turn machine not)."""

        def open(self, *args: Any, **kwargs: Any) -> Any:
            tracker = services.turns.open(*args, **kwargs)
            tracker._gate_frame = stages.timed("echo_gate", tracker._gate_frame)
            tracker.played = stages.timed("echo_gate", tracker.played)
            tracker.flushed = stages.timed("echo_gate", tracker.flushed)
            return tracker

    real_step, real_playout = bargein.step, wiring.Playout

    def timed_playout(*args: Any, **kwargs: Any) -> Any:
        playout = real_playout(*args, **kwargs)
        playout.release = stages.timed("playout_release", playout.release)
        return playout

    batcher = media.batcher
    if batcher is not None:  # the batched Silero inferences run in a loop callback of their own
        batcher._flush = stages.timed("vad_silero_batches", batcher._flush)  # type: ignore[method-assign]
    bargein.step = stages.timed("bargein_step", real_step)  # type: ignore[assignment]
    wiring.Playout = timed_playout  # type: ignore[assignment,misc]

    def undo() -> None:
        if batcher is not None:
            del batcher._flush
        bargein.step = real_step  # type: ignore[assignment]
        wiring.Playout = real_playout  # type: ignore[misc]

    timed = replace(services, media=TimedMedia(), stt=TimedStt(), turns=TimedTurns())  # type: ignore[arg-type]
    return SessionRunner(timed, runner._settings), undo


def timed_codec(stages: Stages | None) -> TwilioCodec:
    """A Twilio codec, with receive and send timed when stages are measured."""
    codec = TwilioCodec()
    if stages is not None:
        codec.receive = stages.timed("codec_receive", codec.receive)  # type: ignore[method-assign]
        codec.send = stages.timed("codec_send", codec.send)  # type: ignore[method-assign]
    return codec


class OpenGate:
    """Admits every call (the gateway's admission is not what this bench measures)."""

    def __init__(self, index: int) -> None:
        self.call_id = f"bench-{index}"

    def started(self, call: CallStarted) -> Refusal | None:
        """Always a slot."""
        return None

    def record(self, record: dict[str, Any]) -> None:
        """No call log: the bench measures the media path."""


async def run_calls(
    runner: SessionRunner, payloads: list[str], count: int, hooks: Hooks, stages: Stages | None
) -> list[FakeTwilio]:
    """``count`` calls at once, in lock step (each yields to the loop once per frame)."""
    fakes = [FakeTwilio(i, payloads, hooks) for i in range(count)]
    async with asyncio.TaskGroup() as group:
        for fake in fakes:
            group.create_task(runner(fake, timed_codec(stages), OpenGate(fake._index)))
    return fakes


#: Runs a coroutine to its end on a fresh event loop (the shape of ``asyncio.run``).
Run = Callable[[Coroutine[Any, Any, Any]], Any]


def loop_runner(loop: str) -> Run:
    """``asyncio.run`` on uvloop (what ``voicegate serve`` runs by default) or asyncio's loop."""
    factory = uvloop.new_event_loop if loop == "uvloop" else None

    def run(main: Coroutine[Any, Any, Any]) -> Any:
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(main)

    return run


def rss_bytes() -> int:
    """Resident set size now (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def total_pass(
    runner: SessionRunner, payloads: list[str], calls: int, run: Run = asyncio.run
) -> dict[str, float]:
    """Uninstrumented: CPU per call-second, and RSS growth per live call."""
    gc.collect()
    rss: list[int] = [rss_bytes()]
    hooks = Hooks(on_mid_call=lambda: rss.append(rss_bytes()))
    cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
    fakes = run(run_calls(runner, payloads, calls, hooks, None))
    cpu, wall = time.process_time_ns() - cpu0, time.perf_counter_ns() - wall0
    call_seconds = calls * len(payloads) * FRAME_MS / 1000
    return {
        "cpu_us_per_call_second": cpu / 1000 / call_seconds,
        "wall_us_per_call_second": wall / 1000 / call_seconds,
        "rss_bytes_per_call": (rss[-1] - rss[0]) / calls,
        "messages_sent_per_call_second": sum(f.sent for f in fakes) / call_seconds,
    }


def stage_pass(
    runner: SessionRunner, payloads: list[str], calls: int, run: Run = asyncio.run
) -> dict[str, float]:
    """Instrumented: CPU µs per call-second of each stage, timer cost taken out."""
    inside, whole = Stages.calibrate()
    stages = Stages()
    timed_runner, undo = instrument(runner, stages)
    hooks = Hooks(stages)
    try:
        cpu0 = time.process_time_ns()
        run(run_calls(timed_runner, payloads, calls, hooks, stages))
        cpu = time.process_time_ns() - cpu0
    finally:
        undo()
    call_seconds = calls * len(payloads) * FRAME_MS / 1000
    wrapped = sum(stages.calls.values())
    split = {
        name: (ns - stages.calls[name] * inside) / 1000 / call_seconds
        for name, ns in stages.ns.items()
    }
    rest = cpu - sum(stages.ns.values()) - wrapped * (whole - inside)
    split["session_and_loop"] = rest / 1000 / call_seconds
    return split


def memory_pass(
    runner: SessionRunner, payloads: list[str], calls: int, run: Run = asyncio.run
) -> dict[str, float]:
    """tracemalloc growth per live call, mid-call."""
    gc.collect()
    samples: list[int] = []
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        hooks = Hooks(on_mid_call=lambda: samples.append(tracemalloc.get_traced_memory()[0]))
        run(run_calls(runner, payloads, calls, hooks, None))
    finally:
        tracemalloc.stop()
    return {"tracemalloc_bytes_per_call": (samples[0] - base) / calls}


def start_pass(
    runner: SessionRunner, payloads: list[str], starts: int, run: Run = asyncio.run
) -> dict[str, float]:
    """Calls started one at a time: CPU (all threads, loop thread) and wall ms per start."""
    hooks = Hooks()

    async def one_by_one() -> None:
        for index in range(starts):
            await runner(FakeTwilio(index, payloads[:1], hooks), TwilioCodec(), OpenGate(index))

    run(one_by_one())
    cpu, thread, wall = zip(*hooks.start_costs, strict=True)
    return {
        "cpu_ms": statistics.median(cpu) / 1e6,
        "loop_thread_cpu_ms": statistics.median(thread) / 1e6,
        "wall_ms": statistics.median(wall) / 1e6,
        "first_call_wall_ms": wall[0] / 1e6,
    }


def median_of(results: list[dict[str, float]]) -> dict[str, float]:
    """Key-wise median of several runs, rounded."""
    return {key: round(statistics.median(r[key] for r in results), 1) for key in results[0]}


def main() -> None:
    """Print one JSON object with the per-call cost of the media path."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument(
        "--no-batch", action="store_true", help="score each call's Silero windows alone"
    )
    parser.add_argument("--end-of-turn", default=None, help="turns.end_of_turn.model, e.g. none")
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="the event loop: uvloop, as voicegate serve runs (server.uvloop), or asyncio's own",
    )
    args = parser.parse_args()
    os.chdir(ROOT)  # the config's paths (project, caller lines) are relative to the repository
    settings = load_settings(CONFIG)
    if args.end_of_turn is not None:
        end_of_turn = replace(settings.turns.end_of_turn, model=args.end_of_turn)
        settings = replace(settings, turns=replace(settings.turns, end_of_turn=end_of_turn))
    with tempfile.TemporaryDirectory() as data:
        # The calls run in lock step, far faster than real time: no pacing (issue 15) here.
        unpaced = replace(settings.limits, media_max_speed=1e6, media_burst_ms=10**9)
        settings = replace(
            settings, store=replace(settings.store, data_dir=Path(data)), limits=unpaced
        )
        cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
        runner = build_runner(settings)
        if args.no_batch:
            services = runner.services
            media = replace(services.media, batch_silero=False)
            runner = SessionRunner(replace(services, media=media), runner._settings)
        startup = {
            "cpu_ms": round((time.process_time_ns() - cpu0) / 1e6, 1),
            "wall_ms": round((time.perf_counter_ns() - wall0) / 1e6, 1),
        }
        payloads = caller_payloads()
        run = loop_runner(args.loop)
        starts = start_pass(runner, payloads, args.starts, run)
        run(run_calls(runner, payloads, 2, Hooks(), None))  # warm-up
        runs = range(args.runs)
        totals = median_of([total_pass(runner, payloads, args.calls, run) for _ in runs])
        split = median_of([stage_pass(runner, payloads, args.calls, run) for _ in runs])
        memory = memory_pass(runner, payloads, args.calls, run)
        timeline = runner.timeline(f"CA{args.calls - 1:032d}")
    harness = split.pop("harness", 0.0)
    events = [r["event"] for r in timeline.records] if timeline is not None else []
    report = {
        "benchmark": "media_cost",
        "config": str(CONFIG.relative_to(ROOT)),
        "calls": args.calls,
        "call_ms": CALL_MS,
        "runs": args.runs,
        "silero_batched": not args.no_batch,
        "loop": args.loop,
        "end_of_turn": settings.turns.end_of_turn.model,
        "gateway_cpu_us_per_call_second": round(totals["cpu_us_per_call_second"] - harness, 1),
        "total_cpu_us_per_call_second_incl_harness": totals["cpu_us_per_call_second"],
        "harness_us_per_call_second": harness,
        "stages_us_per_call_second": split,
        "call_start": {key: round(value, 2) for key, value in starts.items()},
        "startup": startup,
        "memory_per_call": {
            "tracemalloc_kb": round(memory["tracemalloc_bytes_per_call"] / 1024, 1),
            "rss_kb": round(totals["rss_bytes_per_call"] / 1024, 1),
        },
        "messages_sent_per_call_second": totals["messages_sent_per_call_second"],
        "last_call_events": {name: events.count(name) for name in sorted(set(events))},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
