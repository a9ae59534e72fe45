"""Concurrent real-time Twilio calls against ``voicegate serve``, measured from the outside.

The gateway is started as a user starts it, as a subprocess::

    voicegate serve --workers 2 --config <temp copy of fixtures/config/deterministic.yml>
                    --host 127.0.0.1 --port 0

(the demo project, scripted STT, tone TTS, default VAD; the temporary copy only points
``store.data_dir`` at a temporary directory and raises ``server.capacity`` and the per-address
ingress limits to the largest level, since every caller connects from 127.0.0.1). The port is
read from its ``voicegate listening on http://HOST:PORT`` banner. If
``serve`` rejects ``--workers``, it is started without it and the report says so. At the end
it gets SIGTERM and must exit 0 (``gateway.exit_codes``).

The callers run in ``--caller-processes`` separate processes (bench/callfleet.py), each running
many calls on one asyncio loop. Every call has its own CallSid, streams 20 ms μ-law frames at
real time, says "check my balance" once (balance_8k.wav at 400 ms), plays the bot's audio and
echoes marks as Twilio does (voicegate.callers.twilio.TwilioCaller), and hangs up (``stop``,
close 1000) after ``--call-seconds`` of media. For each level, ``calls`` callers start spread
evenly over ``--ramp-seconds``; levels run one after another on the same gateway, each after
the previous one has drained. Each level is bounded: calls that do not end are aborted.
A caller frame costs the callers about 25 µs of CPU on this machine, mostly the loopback
``send`` (one per message, as on a real network), i.e. ~1.3 ms per call-second: at 1,000 calls
the callers alone need more than a core of the two.

Per level (one JSON object on stdout):

- ``level`` (concurrent calls), ``calls_started`` (callers that reported), ``connected``
  (WebSocket open), ``ended_normally`` (close code 1000), ``closed_by_gateway`` (the gateway
  closed before the caller hung up), ``close_codes`` ("none": no close frame from the gateway
  within 10 s of the hang-up), ``errors`` (the five commonest, with counts);
- ``answered``: calls that received bot media after the caller's speech;
  ``answer_latency_ms`` p50/p95: send time of the caller's last speech frame -> arrival of the
  first bot media message, at the caller;
- ``choppy_calls``: calls with a playout gap > 100 ms while the bot was speaking. Each bot media
  message extends a play-out deadline by its own duration (the way the phone plays it, so a
  send-ahead burst followed by a pause is not a gap); a message arriving more than 100 ms past
  that deadline within one segment (no mark or clear in between) is a gap.
  ``playout_gap_ms`` p99/max over calls of each call's longest gap;
- ``loop_lag_ms``: per worker, p50/p99/max of the media loop's lag, from the difference of the
  cumulative histograms of ``GET /workers`` before and after the level (percentiles are bucket
  upper bounds; max is the highest non-empty bucket, or the worker's ``max_ms`` when that is the
  open last bucket, then p99 is null and ``p99_above_ms`` gives the bucket's lower bound).
  The monitor samples once per wake-up, so a long stall is one sample: look at ``max`` too.
  ``loop_lag_ms_steady``: the same over the steady window of ``steady_ms_per_call_s`` (every
  call up, none starting), so a level whose lag comes from the ramp (call starts, and the
  callers' speech and the bots' answers, which the ramp bunches together) shows it;
  ``null`` when the gateway has no ``/workers`` or did not answer it (see ``notes``);
- ``gateway_cpu``: ``ms_per_call_s`` = user+sys CPU of the serve process and all its descendants
  (workers, MCP servers; /proc/PID/stat incl. reaped children) over the level, divided by the
  call-seconds of media the callers sent; ``cores`` = the same CPU over the level's wall time;
  ``steady_ms_per_call_s``: the same between the end of the ramp and the first hang-up, when
  every call is up and none is starting (needs ``--call-seconds`` >= ramp + 2). The whole-level
  figure includes call set-up and teardown, so it depends on the call length;
- ``gateway_rss_mb``: RSS summed over the worker processes (from ``/workers``; without it the
  serve process and its non-MCP children): ``idle_at_start`` of the fresh gateway,
  ``before_level``, ``peak`` sampled every 0.2 s, ``per_call`` = (peak - idle_at_start) /
  calls. ``before_level`` above ``idle_at_start`` is memory earlier levels left behind (kept
  by the allocator or leaked), which inflates ``per_call``; ``--gateway-per-level`` starts a
  fresh gateway for each level;
- ``callers``: ``late_ticks_pct`` (caller ticks sent > 20 ms behind their schedule),
  ``worst_behind_ms``, ``cpu_pct`` per caller process (% of one core over the level);
  ``machine``: busy cores of the whole machine (/proc/stat) and ``other_cores``, what neither
  the gateway nor the callers used (other users of this machine), and ``saturated`` (above
  95 % busy: every process, the gateway's included, waited for a core). On a shared machine
  read a level's figures as the gateway's only when ``machine.saturated`` is false;
- ``callers_saturated``: the callers may have been the bottleneck: late ticks > 1 % or a caller
  process above 85 % of a core. Late caller frames reach the gateway in bursts and the bot's
  audio is paced by the caller's frames, so lag and gaps of such a level are not the gateway's
  alone;
- ``gateway.idle_cores``: the idle gateway's CPU before the first level (a busy-polling
  gateway would inflate every per-call figure);
- ``end_of_turn``: how the level's caller turns ended, from ``GET /metrics``
  (``voicegate_end_of_turns``, the difference over the level), as ``"reason / model": count``;
  e.g. ``silence timeout / shed`` is a turn the end-of-turn model had no CPU share for, which
  ends ~300 ms later than one it scored complete, so it explains slow answers under load;
  ``stages_p50_ms``: the same way, the median (bucket upper bound) of the gateway's own
  answer stages in media time: ``response`` (end of caller speech -> first bot audio sent),
  ``stt_final``, ``model_first_token``, ``tts_first_chunk``, ``tool``; set against
  ``answer_latency_ms`` (the caller's view) they say where a slow answer's time went;
- ``held``: every call ended normally, loop lag p99 < 20 ms in every worker (the p99 bucket's
  upper bound is at most 20 ms), no choppy call (``null`` when lag is unknown but the rest
  holds). ``highest_level_held`` closes the report.

Run (a few minutes; keep it short while developing)::

    .venv/bin/python bench/calls.py [--levels 100,300,600,1000] [--workers 2]
        [--call-seconds 10] [--ramp-seconds 5] [--caller-processes 3] [--gateway-per-level]
    .venv/bin/python bench/calls.py --levels 20,50 --call-seconds 6
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import multiprocessing
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, deque
from pathlib import Path
from typing import IO, Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
import callfleet

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
LAG_LIMIT_MS = 20.0
STARTUP_TIMEOUT_S = 60.0
IDLE_S = 2.0  # the idle gateway's CPU is measured over this long
#: The answer's stages, from the gateway's own histograms (docs/metrics.md), in media time.
STAGE_HISTOGRAMS = {
    "response": "voicegate_response_seconds",
    "stt_final": "voicegate_stt_final_seconds",
    "model_first_token": "voicegate_model_first_token_seconds",
    "tts_first_chunk": "voicegate_tts_first_chunk_seconds",
    "tool": "voicegate_tool_seconds",
}
#: Each histogram's bucket series, to its stage.
STAGE_OF_BUCKET = {name + "_bucket": stage for stage, name in STAGE_HISTOGRAMS.items()}


# --- small helpers -------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``values`` (None when empty)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def hist_percentile(uppers: list[float], counts: list[int], fraction: float) -> float | None:
    """The upper bound of the bucket holding the ``fraction`` quantile (inf: open bucket)."""
    total = sum(counts)
    if total <= 0:
        return None
    target, seen = fraction * total, 0
    for index, count in enumerate(counts):
        seen += count
        if seen >= target and count:
            return uppers[index] if index < len(uppers) else float("inf")
    return float("inf")


def rounded(value: float | None, digits: int = 1) -> float | None:
    """Round for the report; None (and an open bucket's ``inf``) stay None."""
    return None if value is None or math.isinf(value) else round(value, digits)


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (all its threads)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in task.read_text().split()]
    return found


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    tree, queue = [], deque([pid])
    while queue:
        current = queue.popleft()
        tree.append(current)
        queue.extend(children(current))
    return tree


def cpu_seconds(pids: list[int]) -> float:
    """user+sys CPU of ``pids``, including their reaped children (cutime+cstime)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    return total / CLK_TCK


def rss_bytes(pids: list[int]) -> int:
    """Summed resident set size of ``pids``."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    return total


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])
    return total - fields[3] - fields[4], total


def cmdline(pid: int) -> str:
    """The command line of ``pid`` ('' if gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _helper(command: str) -> bool:
    """A child of serve that is not a worker: an MCP server, multiprocessing's tracker."""
    return "mcp" in command or "resource_tracker" in command


# --- the gateway -------------------------------------------------------------------------------


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    """Copy the gateway's stdout lines into ``lines``, then None at the end."""
    for line in stream:
        lines.put(line)
    lines.put(None)


class UnresponsiveError(RuntimeError):
    """The gateway did not answer an HTTP request in time (or has exited)."""


class GatewayProcess:
    """``voicegate serve`` as a subprocess: start, read the banner, query, SIGTERM."""

    def __init__(self, workers: int, config: Path, capacity: int, tmp: Path) -> None:
        data = yaml.safe_load(config.read_text()) or {}
        data.setdefault("store", {})["data_dir"] = str(tmp / "data")
        data.setdefault("server", {})["capacity"] = capacity
        # Every caller connects from 127.0.0.1: the per-address limits (issue 15) are sized
        # for real providers, so the bench lifts them to the level it runs.
        limits = data.setdefault("limits", {})
        limits["sockets_per_ip"] = capacity
        limits["requests_per_ip_per_s"] = float(capacity)
        limits["requests_per_ip_burst"] = capacity
        limits["max_waiting_for_start"] = capacity
        self.config = tmp / "voicegate.yml"
        self.config.write_text(yaml.safe_dump(data))
        self.stderr_path = tmp / "serve.stderr"
        self.notes: list[str] = []
        self.idle_rss = 0  # the workers' RSS before the first call
        exe = Path(sys.executable).with_name("voicegate")
        self.base = [str(exe)] if exe.exists() else [sys.executable, "-m", "voicegate.cli.main"]
        self.argv = self._start(["--workers", str(workers)])
        self.workers_flag = True
        if self.argv is None and "unrecognized arguments: --workers" in self.stderr_tail():
            self.workers_flag = False
            self.notes.append(f"serve rejected --workers {workers}; the gateway ran as one process")
            self.argv = self._start([])
        if self.argv is None:
            raise RuntimeError(f"voicegate serve did not start: {self.stderr_tail()}")

    def _start(self, extra: list[str]) -> list[str] | None:
        argv = [*self.base, "serve", *extra, "--config", str(self.config)]
        argv += ["--host", "127.0.0.1", "--port", "0"]
        self.stderr = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=self.stderr, text=True
        )
        assert self.proc.stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(self.proc.stdout, lines), daemon=True).start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:  # serve exited
                self.proc.wait()
                return None
            if line.startswith("voicegate listening on http://"):
                self.host, port = line.split("http://", 1)[1].strip().rsplit(":", 1)
                self.port = int(port)
                return argv
        self.proc.kill()
        self.proc.wait()
        raise RuntimeError(f"voicegate serve printed no banner in {STARTUP_TIMEOUT_S} s")

    def stderr_tail(self, lines: int = 5) -> str:
        """The last lines the gateway logged."""
        return "\n".join(self.stderr_path.read_text().splitlines()[-lines:])

    @property
    def url(self) -> str:
        """The Twilio media stream URL."""
        return f"ws://{self.host}:{self.port}/twilio"

    def get(self, path: str, attempts: int = 6) -> Any:
        """GET ``path``'s JSON body (also of a 503); None on 404.

        A busy worker may sit on the request (any worker can take the connection), so each
        attempt waits 5 s and a new connection is tried; :class:`UnresponsiveError` after the last.
        """
        for _ in range(attempts):
            try:
                url = f"http://{self.host}:{self.port}{path}"
                with urllib.request.urlopen(url, timeout=5) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    return None
                if error.code == 503:
                    return json.loads(error.read())
                raise
            except (TimeoutError, urllib.error.URLError, ConnectionError):
                if self.proc.poll() is not None:
                    break
        raise UnresponsiveError(f"GET {path}: no answer in {attempts} x 5 s")

    def metrics(self) -> Counter[str] | None:
        """``GET /metrics`` as a flat count per series (None: no answer).

        Keys: ``end_of_turn:REASON / MODEL`` (``voicegate_end_of_turns``) and
        ``STAGE:LE`` for the cumulative bucket counts of each histogram in
        :data:`STAGE_HISTOGRAMS` (all label values added up).
        """
        try:
            url = f"http://{self.host}:{self.port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as response:
                text = response.read().decode()
        except (TimeoutError, urllib.error.URLError, ConnectionError):
            return None
        counts: Counter[str] = Counter()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "voicegate_end_of_turns_total":
                    key = f"{sample.labels['reason']} / {sample.labels['model']}"
                    counts[f"end_of_turn:{key}"] += int(sample.value)
                elif (stage := STAGE_OF_BUCKET.get(sample.name)) is not None:
                    counts[f"{stage}:{sample.labels['le']}"] += int(sample.value)
        return counts

    def workers_snapshot(self) -> Any:
        """``GET /workers``, or None (missing, or no answer: the note says which)."""
        try:
            return self.get("/workers")
        except UnresponsiveError as error:
            self.notes.append(str(error))
            return None

    def worker_pids(self, snapshot: dict[str, Any] | None) -> list[int]:
        """The worker processes: from ``/workers``, else serve and its non-MCP children."""
        if snapshot is not None:
            return [w["pid"] for w in snapshot["workers"] if w.get("alive", True)]
        kids = [p for p in children(self.proc.pid) if not _helper(cmdline(p))]
        return kids or [self.proc.pid]

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM, wait; the exit code (None if it had to be killed)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.stderr.close()


# --- one level ---------------------------------------------------------------------------------


def run_callers(gateway: GatewayProcess, calls: int, args: argparse.Namespace) -> Any:
    """Start the caller processes for ``calls`` calls and wait until they are ready."""
    context = multiprocessing.get_context("spawn")
    count = max(1, min(args.caller_processes, calls))
    run = os.urandom(4).hex()
    plans = [callfleet.Plan(gateway.url, run, [], args.call_seconds * 1000) for _ in range(count)]
    for index in range(calls):
        plans[index % count].calls.append((index, args.ramp_seconds * index / calls))
    processes, pipes = [], []
    for plan in plans:
        ours, theirs = context.Pipe()
        process = context.Process(target=callfleet.caller_process, args=(theirs, plan))
        process.start()
        processes.append(process)
        pipes.append(ours)
    for pipe in pipes:
        if not pipe.poll(60) or pipe.recv() != ("ready",):
            raise RuntimeError("a caller process did not get ready")
    return processes, pipes


def measure_level(gateway: GatewayProcess, calls: int, args: argparse.Namespace) -> dict[str, Any]:
    """Run one level and summarise it."""
    processes, pipes = run_callers(gateway, calls, args)
    metrics_before = gateway.metrics()
    before = gateway.workers_snapshot()
    pids = gateway.worker_pids(before)
    idle_rss = rss_bytes(pids)
    t0 = time.time() + 0.5
    for pipe in pipes:
        pipe.send(t0)
    time.sleep(max(0.0, t0 - time.time()))
    cpu0, machine0, wall0 = cpu_seconds(process_tree(gateway.proc.pid)), machine_ticks(), t0
    peak_rss, done, pending = idle_rss, [], dict(enumerate(pipes))
    deadline = t0 + args.ramp_seconds + args.call_seconds + 60
    window = (t0 + args.ramp_seconds + 0.5, t0 + args.call_seconds - 0.2)  # every call is up
    steady: list[tuple[float, float]] = []  # (time, gateway CPU) at the window's ends
    steady_lag: list[Any] = []  # GET /workers at the window's ends
    while pending and time.time() < deadline:
        peak_rss = max(peak_rss, rss_bytes(pids))
        if window[1] - window[0] >= 1 and len(steady) < 2 and time.time() >= window[len(steady)]:
            steady.append((time.time(), cpu_seconds(process_tree(gateway.proc.pid))))
            steady_lag.append(gateway.workers_snapshot())
        for key, pipe in list(pending.items()):
            if pipe.poll(0.2 / len(pending)):
                done.append(pipe.recv())
                del pending[key]
    wall = time.time() - wall0
    cpu = cpu_seconds(process_tree(gateway.proc.pid)) - cpu0
    machine1 = machine_ticks()
    after = gateway.workers_snapshot()
    metrics_after = gateway.metrics()
    for process in processes:
        process.join(5)
        if process.is_alive():
            process.kill()
    busy_share = (machine1[0] - machine0[0]) / max(1, machine1[1] - machine0[1])
    busy_cores = busy_share * (os.cpu_count() or 1)
    figures = summarise(calls, done, wall, cpu, busy_cores)
    if len(steady) == 2 and figures["connected"]:
        steady_call_s = figures["connected"] * (steady[1][0] - steady[0][0])
        steady_ms = 1000 * (steady[1][1] - steady[0][1]) / steady_call_s
        figures["gateway_cpu"]["steady_ms_per_call_s"] = round(steady_ms, 2)
    figures["gateway_rss_mb"] = {
        "idle_at_start": round(gateway.idle_rss / 2**20, 1),
        "before_level": round(idle_rss / 2**20, 1),
        "peak": round(peak_rss / 2**20, 1),
        "per_call": round((peak_rss - gateway.idle_rss) / 2**20 / calls, 3),
    }
    figures["loop_lag_ms"] = lag_per_worker(before, after)
    if len(steady_lag) == 2:
        figures["loop_lag_ms_steady"] = lag_per_worker(*steady_lag)
    if metrics_before is not None and metrics_after is not None:
        figures.update(metric_figures(metrics_after - metrics_before))
    if pending:
        figures["errors"]["caller process did not report in time"] = len(pending)
    figures["held"] = held(figures, calls)
    return figures


def summarise(calls: int, done: list[Any], wall: float, cpu: float, busy: float) -> dict[str, Any]:
    """The caller-side figures of one level."""
    results = [r for message in done for r in message[1]]
    ticks = sum(m[2]["ticks"] for m in done)
    late = sum(m[2]["late"] for m in done)
    caller_cpu = [100 * m[3] / m[4] for m in done if m[4] > 0]
    codes = Counter(str(r["close_code"] or "none") for r in results if r["connected"])
    answers = [r["answer_ms"] for r in results if r["answer_ms"] is not None]
    gaps = [r["max_gap_ms"] for r in results if r["answered"]]
    call_s = sum(r["media_ms"] for r in results) / 1000
    late_pct = 100 * late / ticks if ticks else 0.0
    caller_cores = sum(m[3] for m in done) / wall
    saturated = late_pct > 1 or max(caller_cpu, default=0) > 85
    return {
        "level": calls,
        "calls_started": len(results),
        "connected": sum(r["connected"] for r in results),
        "ended_normally": sum(r["close_code"] == 1000 for r in results),
        "closed_by_gateway": sum(r["closed_by_gateway"] for r in results),
        "close_codes": dict(codes),
        "answered": len(answers),
        "answer_latency_ms": {
            "p50": rounded(percentile(answers, 0.5), 0),
            "p95": rounded(percentile(answers, 0.95), 0),
        },
        "choppy_calls": sum(g > callfleet.GAP_MS for g in gaps),
        "playout_gap_ms": {
            "p99": rounded(percentile(gaps, 0.99)),
            "max": rounded(max(gaps, default=None)),
        },
        "gateway_cpu": {
            "ms_per_call_s": round(1000 * cpu / call_s, 2) if call_s else None,
            "cores": round(cpu / wall, 2),
            "call_seconds": round(call_s, 1),
        },
        "callers": {
            "processes": len(done),
            "late_ticks_pct": round(late_pct, 2),
            "worst_behind_ms": round(max((m[2]["worst_behind_ms"] for m in done), default=0)),
            "cpu_pct": [round(c) for c in caller_cpu],
        },
        "machine": {
            "busy_cores": round(busy, 2),
            "other_cores": round(max(0.0, busy - cpu / wall - caller_cores), 2),
            "saturated": busy > 0.95 * (os.cpu_count() or 1),
        },
        "callers_saturated": saturated,
        "wall_s": round(wall, 1),
        "errors": dict(Counter(r["error"] for r in results if r["error"]).most_common(5)),
    }


def lag_per_worker(before: Any, after: Any) -> list[dict[str, Any]] | None:
    """Per worker p50/p99/max of loop lag over the level, from the histogram difference."""
    if before is None or after is None:
        return None
    old = {w["index"]: w for w in before["workers"]}
    report = []
    for worker in after["workers"]:
        lag = worker["loop_lag"]
        counts = lag["counts"]
        previous = old.get(worker["index"])
        restarted = True  # a new process: its counts started at zero
        if previous is not None and previous["pid"] == worker["pid"]:
            old_counts = previous["loop_lag"]["counts"]
            diff = [a - b for a, b in zip(counts, old_counts, strict=True)]
            restarted = any(c < 0 for c in diff)
            counts = counts if restarted else diff
        uppers = lag["bucket_upper_ms"]
        top = max((i for i, c in enumerate(counts) if c > 0), default=None)
        if top is None:
            worst = None
        elif top < len(uppers) and uppers[top] != float("inf"):
            worst = uppers[top]
        else:
            worst = lag["max_ms"]
        entry = {
            "worker": worker["index"],
            "pid": worker["pid"],
            "samples": sum(counts),
            "p50": rounded(hist_percentile(uppers, counts, 0.5), 2),
            "p99": rounded(hist_percentile(uppers, counts, 0.99), 2),
            "max": rounded(worst, 2),
            "restarted": restarted or worker["restarts"] != (previous or {}).get("restarts"),
        }
        if hist_percentile(uppers, counts, 0.99) == float("inf"):
            entry["p99_above_ms"] = uppers[-1]  # in the open last bucket: p99 is null
        report.append(entry)
    return report


def metric_figures(delta: Counter[str]) -> dict[str, Any]:
    """``end_of_turn`` counts and ``stages_p50_ms`` from a level's ``/metrics`` difference."""
    turns = {k.split(":", 1)[1]: n for k, n in delta.most_common() if k.startswith("end_of_turn:")}
    stages: dict[str, float | None] = {}
    for stage in STAGE_HISTOGRAMS:
        buckets = sorted(
            (float(k.split(":", 1)[1]), n) for k, n in delta.items() if k.startswith(stage + ":")
        )
        counts = [n - (buckets[i - 1][1] if i else 0) for i, (_, n) in enumerate(buckets)]
        upper = hist_percentile([1000 * le for le, _ in buckets], counts, 0.5)
        stages[stage] = None if upper is None else rounded(upper, 0)
    return {"end_of_turn": turns, "stages_p50_ms": stages}


def held(figures: dict[str, Any], calls: int) -> bool | None:
    """All ended normally, no choppy call, every worker's lag p99 bucket bound <= 20 ms (None:
    lag unknown)."""
    if figures["ended_normally"] < calls or figures["choppy_calls"]:
        return False
    lags = figures["loop_lag_ms"]
    if lags is None:
        return None
    return all(w["p99"] is not None and w["p99"] <= LAG_LIMIT_MS for w in lags)


def wait_drained(gateway: GatewayProcess, timeout_s: float) -> bool:
    """Wait until ``/readyz`` counts no active call."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        with contextlib.suppress(UnresponsiveError):
            if (gateway.get("/readyz", attempts=1) or {}).get("active_calls") == 0:
                return True
        time.sleep(0.5)
    return False


# --- main --------------------------------------------------------------------------------------


def run_levels(args: argparse.Namespace, levels: list[int], tmp: Path) -> dict[str, Any]:
    """Every level against one gateway (or a fresh one per level); the report's body."""
    capacity = max(levels) + max(levels) // 5 + 10
    notes: list[str] = []
    results: list[dict[str, Any]] = []
    exit_codes: list[int | None] = []
    groups = [[n] for n in levels] if args.gateway_per_level else [levels]
    for group in groups:
        gateway = GatewayProcess(args.workers, args.config, capacity, tmp)
        try:
            first = gateway.get("/workers")
            gateway.idle_rss = rss_bytes(gateway.worker_pids(first))
            idle_cpu = cpu_seconds(process_tree(gateway.proc.pid))
            time.sleep(IDLE_S)
            idle_cores = (cpu_seconds(process_tree(gateway.proc.pid)) - idle_cpu) / IDLE_S
            for calls in group:
                if not wait_drained(gateway, 60):
                    notes.append(f"calls were still active before level {calls}")
                results.append(measure_level(gateway, calls, args))
                if gateway.proc.poll() is not None:
                    notes.append(f"serve exited during level {calls}; later levels not run")
                    break
        finally:
            exit_codes.append(gateway.stop())
        if exit_codes[-1] != 0:
            notes.append(f"serve exited {exit_codes[-1]}: {gateway.stderr_tail()}")
    notes[:0] = gateway.notes
    workers = len(first["workers"]) if first else None
    if first is None:
        notes.append("the gateway has no GET /workers: loop lag is null, held is null")
    elif gateway.workers_flag and workers != args.workers:
        notes.append(f"asked for {args.workers} workers, /workers lists {workers}")
    return {
        "gateway": {
            "argv": gateway.argv,
            "workers_flag_accepted": gateway.workers_flag,
            "workers": workers,
            "capacity": capacity,
            "idle_cores": round(idle_cores, 3),
            "exit_codes": exit_codes,
        },
        "levels": results,
        "highest_level_held": max((r["level"] for r in results if r["held"]), default=None),
        "notes": notes,
    }


def main() -> None:
    """Print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="100,300,600,1000", help="concurrent calls per level")
    parser.add_argument("--workers", type=int, default=2, help="voicegate serve --workers")
    parser.add_argument("--call-seconds", type=int, default=10, help="media per call")
    parser.add_argument("--ramp-seconds", type=float, default=5.0, help="spread of call starts")
    parser.add_argument("--caller-processes", type=int, default=3)
    parser.add_argument("--config", type=Path, default=ROOT / "fixtures/config/deterministic.yml")
    parser.add_argument(
        "--gateway-per-level",
        action="store_true",
        help="start a fresh gateway for each level (idle RSS not inflated by earlier levels)",
    )
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    if not callfleet.message_matches_reference():
        raise SystemExit("the pre-encoded media message differs from TwilioCaller's")
    options = vars(args) | {"levels": levels, "config": str(args.config)}
    with tempfile.TemporaryDirectory(prefix="voicegate-bench-") as tmp:
        body = run_levels(args, levels, Path(tmp))
    print(json.dumps({"benchmark": "calls", "options": options, **body}, indent=2))


if __name__ == "__main__":
    main()
