"""What the durable store costs a call: SQLite (embedded) against Redis (issue 13).

Starts its own redis-server on a free loopback port (no persistence, like the tests) unless
``--redis-url`` names one, and a SQLite file in a temporary folder. Measures, on each backend:

- ``memory_write``: one ``context.memory.set`` as the engine writes it through, plain and
  ``fenced`` (the epoch check and the write in one step, as a claimed call writes);
- ``session_start``: ``ProjectEngine.open`` of a new call (claim, load memory, seed, first
  checkpoint) on the demo project;
- ``session_resume``: ``open`` of a call another engine saved after ``--turns`` turns (claim,
  restore the dialogue state and history, checkpoint).

    flock /tmp/voicegate-bench.lock python bench/store.py [--writes 2000] [--opens 200]

Prints one JSON object: per backend and measure, p50 and p99 in ms of wall time (the median
over ``--runs`` runs), and the client's CPU time per operation in µs. Redis round trips are
loopback here: on a LAN add the network's round trip to every Redis figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from voicegate.engine.llm.script import parse_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.loop.persistence import CallStateStore, ResumeOptions
from voicegate.engine.memory.redis_store import RedisOptions, RedisStore
from voicegate.engine.memory.sqlite_calls import SqliteCallStates
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.store import MemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.model import Project
from voicegate.engine.seam import CallInfo, Transcript

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "config" / "agent"
Stores = tuple[MemoryStore, CallStateStore]


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A redis-server on a free loopback port for the bench's duration; its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    args = ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir), "--save", ""]
    process = subprocess.Popen([binary, *args, "--appendonly", "no"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(400):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        process.terminate()
        process.wait(10)


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p99 of samples in seconds, in ms."""
    ordered = sorted(samples)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50_ms": round(at(0.50) * 1000, 3), "p99_ms": round(at(0.99) * 1000, 3)}


def timed(operations: list[Callable[[], Any]]) -> dict[str, float]:
    """Run each operation once; wall percentiles and mean CPU time per operation."""
    walls: list[float] = []
    cpu = time.process_time()
    for operation in operations:
        began = time.perf_counter()
        operation()
        walls.append(time.perf_counter() - began)
    cpu_us = (time.process_time() - cpu) / len(operations) * 1e6
    return {**percentiles(walls), "cpu_us": round(cpu_us, 1)}


def memory_writes(stores: Stores, writes: int, tag: str) -> dict[str, Any]:
    """Plain and fenced writes of one small value each (a claimed call's epoch for fenced)."""
    memory, calls = stores
    call = f"bench-{tag}"
    epoch, _ = calls.claim(call)
    plain = [lambda n=n: memory.save(call, "project", "visits", str(n)) for n in range(writes)]
    fenced = [
        lambda n=n: calls.save_memory(call, epoch, call, "project", "visits", str(n))
        for n in range(writes)
    ]
    return {"plain": timed(plain), "fenced": timed(fenced)}


def engine_on(project: Project, stores: Stores, turns: int) -> ProjectEngine:
    """The demo project's engine on ``stores``, its model saying one line per turn."""
    script = parse_script({"turns": [{"say": f"Line {n}."} for n in range(turns)]}, "<bench>")
    memory, calls = stores
    return ProjectEngine(
        project, lambda _: ScriptedLLM(script), memory, resume=ResumeOptions(calls)
    )


async def opens(engine: ProjectEngine, call_ids: list[str]) -> dict[str, float]:
    """``open`` of each call id (closed again between), timed."""
    walls: list[float] = []
    cpu = time.process_time()
    for call_id in call_ids:
        began = time.perf_counter()
        await engine.open(CallInfo(call_id))
        walls.append(time.perf_counter() - began)
        await engine.close(call_id)
    cpu_us = (time.process_time() - cpu) / len(call_ids) * 1e6
    return {**percentiles(walls), "cpu_us": round(cpu_us, 1)}


async def sessions(
    project: Project, make: Callable[[], Stores], count: int, turns: int, tag: str
) -> dict[str, Any]:
    """Start ``count`` new calls; then save ``count`` calls of ``turns`` turns on one engine
    and resume each on another (its own connections to the same backend)."""
    start = await opens(engine_on(project, make(), 1), [f"{tag}-new-{n}" for n in range(count)])
    first = engine_on(project, make(), turns)
    saved = [f"{tag}-saved-{n}" for n in range(count)]
    for call_id in saved:
        await first.open(CallInfo(call_id))
        for turn in range(turns):
            async with first.turn(call_id, Transcript(f"turn {turn}")) as stream:
                said = [event.text async for event in stream if hasattr(event, "text")]
            await first.heard(call_id, stream.turn_id, " ".join(said), interrupted=False)
        await first.close(call_id)
    resume = await opens(engine_on(project, make(), 1), saved)
    return {"session_start": start, "session_resume": resume}


def one_run(project: Project, backends: dict[str, Callable[[], Stores]], args: Any) -> Any:
    """Every measure on every backend, once."""
    figures: dict[str, Any] = {}
    for name, make in backends.items():
        tag = f"{name}-{time.monotonic_ns()}"
        figures[name] = {
            "memory_write": memory_writes(make(), args.writes, tag),
            **asyncio.run(sessions(project, make, args.opens, args.turns, tag)),
        }
    return figures


def median_of(runs: list[Any]) -> Any:
    """The per-figure median over runs (same nested keys in each)."""
    if isinstance(runs[0], dict):
        return {key: median_of([run[key] for run in runs]) for key in runs[0]}
    return round(statistics.median(runs), 3)


def main() -> None:
    """Run the bench and print its JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000, help="memory writes per kind")
    parser.add_argument("--opens", type=int, default=200, help="calls started and resumed")
    parser.add_argument("--turns", type=int, default=6, help="turns of a resumed call")
    parser.add_argument("--runs", type=int, default=3, help="runs (figures are medians)")
    parser.add_argument("--redis-url", help="an existing Redis (default: start one)")
    args = parser.parse_args()
    project = load_project(PROJECT)
    with tempfile.TemporaryDirectory() as folder, _redis(args, Path(folder)) as url:
        database = Path(folder) / "memory.sqlite3"

        def sqlite() -> Stores:
            return SqliteMemoryStore(database), SqliteCallStates(database)

        def redis_stores() -> Stores:
            store = RedisStore(url, RedisOptions("bench:agent"))
            return store, store

        backends = {"sqlite": sqlite, "redis": redis_stores}
        runs = [one_run(project, backends, args) for _ in range(args.runs)]
    settings = {"writes": args.writes, "opens": args.opens, "turns": args.turns, "runs": args.runs}
    print(json.dumps({"settings": settings, **median_of(runs)}, indent=2))


@contextmanager
def _redis(args: Any, workdir: Path) -> Iterator[str]:
    if args.redis_url:
        yield args.redis_url
        return
    with redis_server(workdir) as url:
        yield url


if __name__ == "__main__":
    main()
