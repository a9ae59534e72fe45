"""Every scenario in fixtures/calls runs in process and meets its expectations.

Each runs once at speed 4 (shared by the tests below); one also runs at speed 1 to show the
events do not depend on the replay speed. Only what runs on media time is the same at every
speed, and two things do not:

- the slow_bank tool sleeps 1.5 s on the wall clock, 6 s of media at speed 4 instead of 1.5 s:
  bot audio then stops while the tool waits where at speed 1 it plays on, which adds and moves
  playout events (``bot_speaking``, ``bot_quiet``, ``mark_played``);
- any wall-clock delay (synthesis, scheduling, the loopback socket) lasts 4 times as much
  media at speed 4. A 30 ms hiccup is 120 ms of media, enough for a barge-in to cut the bot
  one word earlier or later, so the exact words heard of an interrupted turn may differ.

- interim transcripts reach the timeline through the session's transcript-reader task: when
  the gateway's loop is busy it works through several inbound frames before that task runs,
  so they can land after the ``speech_ended`` of their utterance.

So the comparison leaves out the playout events and the interim transcripts and compares
every other event, in order, by name and turn id; of what was heard, the words of completed
turns, and the interrupted turn's start (the segment whose mark came back before the barge-in).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.replay.replay_kit import CALLS
from voicegate.callers.scenario import load_scenario, scenario_paths
from voicegate.cli.replaying import ScenarioRun, replay_scenario

SCENARIOS = {path.stem: path for path in scenario_paths(CALLS)}
SLOW = "bargein_while_speaking"  # the scenario also played at speed 1
PLAYOUT_EVENTS = {"bot_speaking", "bot_quiet", "mark_played"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ScenarioRun]:
    """Every scenario at speed 4, one after the other, and ``SLOW`` at speed 1 meanwhile.

    At most two calls share the event loop: the one at speed 1 is light, and a loop kept busy
    by many fast calls stretches their wall-clock delays into media time (module docstring).
    """

    async def play(name: str, speed: float) -> ScenarioRun:
        scenario = load_scenario(SCENARIOS[name])
        return await replay_scenario(scenario, tmp_path_factory.mktemp("run"), speed=speed)

    async def play_all() -> dict[str, ScenarioRun]:
        slow = asyncio.create_task(play(SLOW, 1.0))
        played = {name: await play(name, 4.0) for name in SCENARIOS}
        played[f"{SLOW}@1"] = await slow
        return played

    return asyncio.run(play_all())


def tool_record(run: ScenarioRun) -> list[tuple[str, int]]:
    """What slow_bank's tool wrote about itself: (event, attempt) per line."""
    path = run.project_dir / "tool_record.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(fact["event"], fact["attempt"]) for fact in map(json.loads, lines)]


def deterministic(records: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """The events whose order does not depend on the wall clock, with their turn ids."""
    return [
        (r["event"], r.get("turn_id"))
        for r in records
        if r["event"] not in PLAYOUT_EVENTS and r.get("final") is not False
    ]


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


def test_the_same_events_at_speed_1_and_speed_4(runs: dict[str, ScenarioRun]) -> None:
    fast, slow = runs[SLOW], runs[f"{SLOW}@1"]
    assert (fast.speed, slow.speed) == (4, 1)
    assert slow.unmet() == []
    assert deterministic(slow.records) == deterministic(fast.records)
    assert len(deterministic(slow.records)) >= 25  # two turns, a barge-in, a re-run tool
    (t1_slow, t2_slow), (t1_fast, t2_fast) = heard(slow), heard(fast)
    assert t2_slow == t2_fast
    assert t1_slow[2]  # interrupted, at both speeds
    assert t1_fast[2]
    assert t1_slow[1].startswith("Sure.")  # its mark came back before the barge-in
    assert t1_fast[1].startswith("Sure.")
    assert len(slow.caller.clears) == len(fast.caller.clears) == 1
