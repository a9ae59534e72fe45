"""Barge-in latency of every fixture scenario, as medians over several replays.

Each scenario in fixtures/calls/ is replayed in process (the real server on loopback, real
VAD, an emulated provider with its own playout clock). For every interruption the script
reports the ms from the labelled speech onset of the interrupting recording (the labels in
fixtures/audio/onsets.tsv) to the interruption being confirmed, the turn cancelled, and the
flush sent; and, for scenarios that expect none, the false interruptions (noise).
All times are media time. The replays run on virtual time by default (docs/replay.md), where
every run gives the same figures; with ``--wall-clock`` they run paced by the real clock at
``--speed``, and the median over ``--runs`` replays guards against the odd wall-clock hiccup.

    python bench/bargein.py [--runs 3] [--speed 2] [--wall-clock]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from voicegate.callers.report import interruptions
from voicegate.callers.scenario import scenario_paths
from voicegate.cli.replaying import ScenarioRun, run_scenario

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "fixtures" / "calls"
STAGES = ("confirmed", "turn_cancelled", "flush_sent")


def median_or_none(values: list[int | None]) -> float | None:
    """Median of the values that exist."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarise(runs: list[ScenarioRun]) -> dict[str, Any]:
    """One scenario's figures over its replays."""
    expected = runs[0].scenario.expect.counts.get("interruptions")
    latencies = [lat for run in runs for lat in run.labelled_latencies()]
    counts = [len(interruptions(run.records)) for run in runs]
    report: dict[str, Any] = {
        "description": runs[0].scenario.description,
        "replays": len(runs),
        "interruptions_per_replay": counts,
        "expectations_unmet": sorted({m for run in runs for m in run.unmet()}),
        "ms_from_labelled_onset": {
            stage: median_or_none([lat[stage] for lat in latencies]) for stage in STAGES
        },
    }
    if expected == 0:
        report["false_interruptions"] = sum(counts)
    return report


def main() -> None:
    """Print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--speed", type=float, default=2.0)
    parser.add_argument("--wall-clock", action="store_true", help="not on virtual time")
    args = parser.parse_args()
    virtual = not args.wall_clock
    scenarios = {}
    for path in scenario_paths(SCENARIOS):
        runs = [run_scenario(path, speed=args.speed, virtual=virtual) for _ in range(args.runs)]
        scenarios[path.stem] = summarise(runs)
    report = {"benchmark": "bargein", "speed": args.speed, "virtual": virtual}
    print(json.dumps({**report, "scenarios": scenarios}, indent=2))


if __name__ == "__main__":
    main()
