"""``voicegate replay --provider NAME`` for the telephone providers added after Twilio.

Issue 16's bar: a replay of a caller barging into the bot's answer shows an interruption and
the provider's own flush verb in the timeline. The scenario's expectations (fixtures/calls)
are checked by the command itself: exit status 0 means all were met.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.replay_kit import CALLS, ROOT, read_jsonl
from voicegate.cli.main import main

FLUSH_VERBS = {
    "telnyx": "clear",
    "plivo": "clearAudio",
    "vonage": '{"action":"clear"}',
    "exotel": "clear",
    "jambonz": '{"type":"killAudio"}',
    "freeswitch": '{"type":"killAudio"}',
    "genesys": "event/barge_in",
    "asterisk": "FLUSH_MEDIA",
}
#: Providers with no playback acknowledgement: what was heard is the playout clock's estimate.
ESTIMATED = {"jambonz", "freeswitch", "genesys"}


@pytest.fixture(autouse=True)
def in_repository_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scenario's paths are relative to the repository root."""
    monkeypatch.chdir(ROOT)


def test_replay_help_lists_the_providers(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    help_text = capsys.readouterr().out
    for provider in ("twilio", "browser", "conversationrelay", *FLUSH_VERBS):
        assert provider in help_text


@pytest.mark.parametrize("provider", sorted(FLUSH_VERBS))
def test_a_barge_in_replays_with_the_providers_flush_verb(provider: str, tmp_path: Path) -> None:
    scenario = CALLS / "bargein_while_speaking.yml"
    argv = ["replay", str(scenario), "--provider", provider, "--out", str(tmp_path)]
    assert main([*argv, "--speed", "max"]) == 0
    timeline = read_jsonl(tmp_path / "timeline.jsonl")
    assert [r["event"] for r in timeline].count("interruption") == 1
    flushes = [r for r in timeline if r["event"] == "flush_sent"]
    assert [r["verb"] for r in flushes] == [FLUSH_VERBS[provider]]
    caller_side = [r["event"] for r in read_jsonl(tmp_path / "caller.jsonl")]
    assert "clear_received" in caller_side
    assert ("mark_echoed" in caller_side) is (provider not in ESTIMATED)
    heard = [r for r in timeline if r["event"] == "heard"]
    assert heard
    assert all(r.get("estimated", False) is (provider in ESTIMATED) for r in heard)
    # Every provider's hang-up ends the timeline's call, by a stop message or a socket close.
    assert [r["event"] for r in timeline].count("call_ended") == 1


def test_a_conversationrelay_barge_in_replays_with_twilios_interrupt(tmp_path: Path) -> None:
    # Twilio transcribes and speaks: the emulated Twilio sends the cues' transcripts as
    # prompts and interrupts the bot's speech when the caller talks over it.
    scenario = CALLS / "bargein_while_speaking.yml"
    argv = ["replay", str(scenario), "--provider", "conversationrelay", "--out", str(tmp_path)]
    assert main([*argv, "--speed", "4"]) == 0  # the scenario's expectations held
    timeline = read_jsonl(tmp_path / "timeline.jsonl")
    interruption = next(r for r in timeline if r["event"] == "interruption")
    assert interruption["reason"] == "interrupt"
    flushes = [r["verb"] for r in timeline if r["event"] == "flush_sent"]
    assert flushes == ["interrupt (Twilio stops its own speech)"]
    caller_side = [r["event"] for r in read_jsonl(tmp_path / "caller.jsonl")]
    assert caller_side.count("prompt_sent") == 2
    assert caller_side.count("interrupt_sent") == 1
