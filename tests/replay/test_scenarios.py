"""Every scenario in fixtures/calls runs in process and meets its expectations.

Each runs once on virtual time at ``--speed max`` (docs/replay.md, "Virtual time"), shared by
the tests below; one also runs at virtual speed 4, paced against the wall clock, to show that
the timeline does not depend on the replay speed: every record, ``t_ms`` included, is the
same, because the caller, the gateway, the engine and slow_bank's 1.5 s tool all run on the
one virtual clock (issue 19). Before virtual time these replays ran on the wall clock and only
the order of the events could be compared.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.replay.replay_kit import CALLS
from voicegate.callers.scenario import load_scenario, scenario_paths
from voicegate.cli.replaying import ScenarioRun, run_scenario

SCENARIOS = {path.stem: path for path in scenario_paths(CALLS)}
SLOW = "bargein_while_speaking"  # the scenario also played at speed 4


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ScenarioRun]:
    """Every scenario at virtual speed max, and ``SLOW`` again at virtual speed 4."""

    def play(name: str, speed: float) -> ScenarioRun:
        workdir = tmp_path_factory.mktemp("run")
        return run_scenario(SCENARIOS[name], speed=speed, workdir=workdir, virtual=True)

    played = {name: play(name, math.inf) for name in SCENARIOS}
    played[f"{SLOW}@4"] = play(SLOW, 4.0)
    return played


def tool_record(run: ScenarioRun) -> list[tuple[str, int]]:
    """What slow_bank's tool wrote about itself: (event, attempt) per line."""
    path = run.project_dir / "tool_record.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(fact["event"], fact["attempt"]) for fact in map(json.loads, lines)]


def timeline(run: ScenarioRun) -> list[dict[str, Any]]:
    """The gateway's records without the call id, which is fresh for every run."""
    return [{k: v for k, v in r.items() if k != "call_id"} for r in run.records]


def heard(run: ScenarioRun) -> list[tuple[str, str, bool]]:
    return [
        (r["turn_id"], r["text"], r["interrupted"]) for r in run.records if r["event"] == "heard"
    ]


def test_the_required_scenarios_exist() -> None:
    assert {"bargein_while_thinking", "bargein_while_speaking", "noise_while_speaking"} <= set(
        SCENARIOS
    )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_meets_its_expectations(runs: dict[str, ScenarioRun], name: str) -> None:
    run = runs[name]
    assert run.scenario.expect.counts, "a scenario without expectations checks nothing"
    assert run.unmet() == []


@pytest.mark.parametrize("name", ["bargein_while_thinking", "bargein_while_speaking"])
def test_a_barge_in_cancels_the_tool_which_runs_again(
    runs: dict[str, ScenarioRun], name: str
) -> None:
    run = runs[name]
    # CancelledError was raised inside the tool at its await; the next turn ran it again.
    assert tool_record(run) == [("started", 1), ("cancelled", 1), ("started", 2), ("finished", 2)]
    # The memory written before the cancel was kept: the re-run counted on from it.
    writes = [r for r in run.records if r["event"] == "memory_set"]
    assert [(r["turn_id"], r["value"]) for r in writes] == [("t1", 1), ("t2", 2)]
    # The flush went out with the interruption, and the caller received it.
    interruption = next(r for r in run.records if r["event"] == "interruption")
    flush = next(r for r in run.records if r["event"] == "flush_sent")
    assert flush["t_ms"] == interruption["t_ms"]
    assert len(run.caller.clears) == 1


def test_noise_leaves_the_tool_alone(runs: dict[str, ScenarioRun]) -> None:
    run = runs["noise_while_speaking"]
    assert tool_record(run) == [("started", 1), ("finished", 1)]
    assert not run.caller.clears


def test_speech_onsets_come_from_the_labels(runs: dict[str, ScenarioRun]) -> None:
    run = runs["bargein_while_speaking"]
    # please-try-again.wav's labelled onset is 93 ms (fixtures/audio/onsets.tsv), and the cue
    # starts 800 ms after the bot's audio started.
    bot_started = run.caller.bot_started_ms[0]
    assert run.speech_onsets_ms()[1] == bot_started + 800 + 93


def test_latencies_run_from_the_labelled_onset_of_the_interrupting_cue(
    runs: dict[str, ScenarioRun],
) -> None:
    run = runs["bargein_while_speaking"]
    interruption = next(r for r in run.records if r["event"] == "interruption")
    labelled = run.speech_onsets_ms()[1]  # "please try again", not "check my balance"
    (latency,) = run.labelled_latencies()
    assert latency["confirmed"] == interruption["t_ms"] - labelled
    assert latency["flush_sent"] is not None
    assert 0 < latency["confirmed"] <= latency["flush_sent"] < 1000
    assert runs["noise_while_speaking"].labelled_latencies() == []


def test_a_broken_expectation_is_reported(runs: dict[str, ScenarioRun]) -> None:
    run = runs["noise_while_speaking"]
    wrong = load_scenario(SCENARIOS["bargein_while_thinking"])
    swapped = ScenarioRun(
        wrong, run.speed, run.caller, run.records, run.caller_records, run.workdir
    )
    problems = swapped.unmet()
    assert "interruptions: expected 1, got 0" in problems
    assert "tool_cancelled: expected ['check_balance'], got []" in problems


def test_the_same_timeline_at_virtual_speed_4_and_max(runs: dict[str, ScenarioRun]) -> None:
    fast, paced = runs[SLOW], runs[f"{SLOW}@4"]
    assert (fast.speed, paced.speed) == (math.inf, 4)
    assert paced.unmet() == []
    assert timeline(paced) == timeline(fast)
    assert len(timeline(fast)) >= 40  # two turns, a barge-in, a re-run tool, playout
    (t1, t2) = heard(fast)
    assert t1[2]  # interrupted
    assert t1[1].startswith("Sure.")  # its mark came back before the barge-in
    assert not t2[2]
    assert paced.caller.tracks()[1].tolist() == fast.caller.tracks()[1].tolist()
    assert len(paced.caller.clears) == len(fast.caller.clears) == 1
