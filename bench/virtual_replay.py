"""Wall and CPU time of a 60 s recorded call replayed on virtual time, and its determinism.

A 60 s caller (six festival recordings, 10 s apart, fixtures/audio/synth/festival) is replayed
in process against the demo project at ``--speed max`` on virtual time (docs/replay.md). The
scripted model plays bench/virtual_replay.yml: six turns, with the demo's slow local tool and
its MCP server's tool, none hanging up (the demo's own conversation ends the call after two
turns). The call runs to its 70 s bound (``max_ms``). With

- ``scripted``: the scripted recogniser, the tone synthesiser, no end-of-turn model;
- ``scripted-local``: as ``scripted``, against a copy of the demo project without its MCP
  server (and the skill that imports from it), with bench/virtual_replay_local.yml's turns:
  what the gateway itself costs, apart from a third-party server's start;
- ``embedded``: config/voicegate.yml as shipped (Whisper tiny.en, espeak-ng, Smart Turn),
  whose decodes are real CPU time while virtual time stands still.

Prints, per variant, the median wall and CPU seconds of the replay (imports excluded; loading
the models and starting the demo's MCP server included), the media length, and whether every
run produced the same timeline (the call id, fresh per run, left out). Then the same wall time
in its phases: startup (until the gateway is ready for the call: the project, the models, the
demo's MCP server, whose interpreter spends about a second importing the ``mcp`` package),
the call itself (with its CPU seconds: the part the replay's speed is made of), and shutdown
(the MCP server exiting once its stdin closes, ~0.2 s of its own). Each run is a fresh
process: espeak-ng keeps state between utterances in its one instance per process, so the
second replay in a process is not the first one's twin (the n-th replays of two processes
are). Run it under ``flock /tmp/voicegate-bench.lock``.

    python bench/virtual_replay.py [--runs 3] [--variant scripted|scripted-local|embedded]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import multiprocessing
import shutil
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

# Imports are not timed. The demo's skills import MCP tools, so its replay imports the mcp
# package (cli/wiring.py loads it only for such a project): here, so it is not timed either.
import voicegate.mcp.runtime  # noqa: F401
from voicegate.audio.wav import read_wav
from voicegate.callers.script import CallerScript, Cue
from voicegate.cli.replaying import (
    Mark,
    Phases,
    new_caller,
    replay_in_process,
    run_replay,
    with_fresh_store,
)
from voicegate.config import Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent
#: Six model turns against the demo project (its own conversation hangs up after two).
CONVERSATION = Path(__file__).resolve().parent / "virtual_replay.yml"
#: The same turns for the demo project without its MCP server (``scripted-local``).
LOCAL_CONVERSATION = Path(__file__).resolve().parent / "virtual_replay_local.yml"
FESTIVAL = ROOT / "fixtures" / "audio" / "synth" / "festival"
CLIPS = ("balance", "cancel", "digits1", "agent", "digits2", "balance")
RATE = 8000


def caller_script() -> CallerScript:
    """Six recordings at 1 s, 11 s, ..., 51 s and silence to 60 s."""
    cues = [
        Cue(read_wav(FESTIVAL / f"{name}_8k.wav").samples, at_ms=1000 + 10_000 * index, label=name)
        for index, name in enumerate(CLIPS)
    ]
    cues.append(Cue(np.zeros(RATE // 50, dtype=np.int16), at_ms=59_980, label="end"))
    return CallerScript(cues, RATE)


def project_without_mcp(folder: Path) -> Path:
    """A copy of the demo project without its MCP server and the skill importing from it."""
    project = folder / "agent"
    shutil.copytree(
        ROOT / "config" / "agent",
        project,
        ignore=lambda where, names: [n for n in names if n in ("mcp", "branch_hours")],
    )
    integrations = project / "integrations.yml"
    data = yaml.safe_load(integrations.read_text("utf-8"))
    data.pop("mcp_servers")
    integrations.write_text(yaml.safe_dump(data), "utf-8")
    return project


def settings_for(variant: str, folder: Path) -> Settings:
    """The shipped settings, or with the scripted recogniser and the tone synthesiser."""
    base = load_settings(ROOT / "config" / "voicegate.yml")
    project, conversation = ROOT / "config" / "agent", CONVERSATION
    if variant == "scripted-local":
        project, conversation = project_without_mcp(folder), LOCAL_CONVERSATION
    engine = replace(base.engine, project_dir=project, llm=f"scripted:{conversation}")
    base = replace(base, engine=engine)
    if variant in ("scripted", "scripted-local"):
        lines = folder / "lines.txt"
        lines.write_text("".join(f"{name}\n" for name in CLIPS), "utf-8")
        speech = replace(base.speech, stt=f"scripted:{lines}", tts="tone")
        eot = replace(base.turns.end_of_turn, model="none")
        base = replace(base, speech=speech, turns=replace(base.turns, end_of_turn=eot))
    return with_fresh_store(base, folder / "data")


def figures(start: Mark, phases: Phases, end: Mark) -> dict[str, float]:
    """One run's seconds: in all, and in its phases (startup, the call, shutdown)."""
    return {
        "wall_s": end.wall - start.wall,
        "cpu_s": end.cpu - start.cpu,
        "startup_wall_s": phases.ready.wall - start.wall,
        "call_wall_s": phases.hung_up.wall - phases.ready.wall,
        "call_cpu_s": phases.hung_up.cpu - phases.ready.cpu,
        "shutdown_wall_s": end.wall - phases.hung_up.wall,
    }


def one_run(variant: str) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The :func:`figures` and the timeline (without the call id) of one replay."""
    with tempfile.TemporaryDirectory(prefix="voicegate-bench-") as folder:
        settings = settings_for(variant, Path(folder))
        script = caller_script()
        caller = new_caller("twilio", script, quiet_ms=3000)
        start = Mark.now()
        result = run_replay(
            replay_in_process(settings, "twilio", caller, script, speed=1.0, max_ms=70_000),
            speed=math.inf,
        )
        end = Mark.now()
    assert result.phases is not None  # in process
    timeline = [{k: v for k, v in r.items() if k != "call_id"} for r in result.records]
    return figures(start, result.phases, end), timeline


def in_fresh_process(variant: str) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """:func:`one_run` in a new interpreter."""
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        return pool.submit(one_run, variant).result()


def main() -> None:
    """Replay each variant ``--runs`` times and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--variant", choices=("scripted", "scripted-local", "embedded"), action="append"
    )
    args = parser.parse_args()
    report = {}
    for variant in args.variant or ["scripted", "embedded"]:
        runs = [in_fresh_process(variant) for _ in range(args.runs)]
        timelines = [json.dumps(timeline) for _, timeline in runs]
        medians = {
            f"{name}_median": round(statistics.median(run[name] for run, _ in runs), 3)
            for name in runs[0][0]
        }
        report[variant] = {
            "media_ms": runs[0][1][-1]["t_ms"],
            "events": len(runs[0][1]),
            "wall_s_median": medians.pop("wall_s_median"),
            "cpu_s_median": medians.pop("cpu_s_median"),
            "identical_timelines": len(set(timelines)) == 1,
            **medians,
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
