"""The playout ledger reports only what the caller heard (design §4 point 5)."""

from voicegate.gateway.ledger import PlayoutLedger, Segment, TurnHeard, truncate


def test_a_turn_played_to_the_end_is_heard_in_full() -> None:
    ledger = PlayoutLedger()
    first = ledger.enqueue("t1", "Your balance is", 1000, now_ms=0)
    second = ledger.enqueue("t1", "forty two dollars.", 1000, now_ms=10)
    assert ledger.close_turn("t1") is None
    assert ledger.acknowledge(first.mark, now_ms=1000) is None
    assert ledger.acknowledge(second.mark, now_ms=2000) == TurnHeard(
        "t1", "Your balance is forty two dollars.", interrupted=False
    )
    assert ledger.in_flight == ()


def test_a_turn_is_not_settled_before_it_is_closed() -> None:
    ledger = PlayoutLedger()
    only = ledger.enqueue("t1", "Hello.", 500, now_ms=0)
    assert ledger.acknowledge(only.mark, now_ms=500) is None
    assert ledger.close_turn("t1") == TurnHeard("t1", "Hello.", interrupted=False)


def test_a_turn_with_no_audio_is_heard_as_nothing() -> None:
    assert PlayoutLedger().close_turn("t1") == TurnHeard("t1", "", interrupted=False)


def test_flush_cuts_the_playing_segment_and_drops_the_rest() -> None:
    ledger = PlayoutLedger()
    first = ledger.enqueue("t1", "one two three four", 1000, now_ms=0)
    ledger.enqueue("t1", "five six seven eight", 1000, now_ms=0)
    ledger.enqueue("t1", "nine ten", 500, now_ms=0)
    assert ledger.acknowledge(first.mark, now_ms=1000) is None
    # The second segment started playing at 1000 ms and was cut half way through.
    assert ledger.flush(now_ms=1500) == [
        TurnHeard("t1", "one two three four five six", interrupted=True)
    ]
    assert ledger.in_flight == ()


def test_marks_echoed_for_flushed_audio_are_not_taken_as_played() -> None:
    ledger = PlayoutLedger()
    cut = ledger.enqueue("t1", "never heard", 1000, now_ms=0)
    ledger.flush(now_ms=0)
    # Twilio echoes the mark of audio discarded by `clear` (providers.md §b.1).
    assert ledger.acknowledge(cut.mark, now_ms=10) is None
    fresh = ledger.enqueue("t2", "Sure.", 400, now_ms=20)
    assert ledger.close_turn("t1") is None
    assert ledger.close_turn("t2") is None
    assert ledger.acknowledge(fresh.mark, now_ms=420) == TurnHeard("t2", "Sure.", False)


def test_a_late_mark_acknowledges_every_segment_before_it() -> None:
    ledger = PlayoutLedger()
    ledger.enqueue("t1", "a", 100, now_ms=0)
    last = ledger.enqueue("t1", "b", 100, now_ms=0)
    ledger.close_turn("t1")
    assert ledger.acknowledge(last.mark, now_ms=200) == TurnHeard("t1", "a b", False)


def test_unknown_marks_are_ignored() -> None:
    ledger = PlayoutLedger()
    ledger.enqueue("t1", "a", 100, now_ms=0)
    assert ledger.acknowledge("bogus", now_ms=5) is None
    assert len(ledger.in_flight) == 1


def test_flush_spanning_two_turns_settles_both() -> None:
    ledger = PlayoutLedger()
    ledger.enqueue("t1", "old words", 1000, now_ms=0)
    ledger.close_turn("t1")
    ledger.enqueue("t2", "new words", 1000, now_ms=0)
    heard = ledger.flush(now_ms=0)
    assert heard == [TurnHeard("t1", "", True), TurnHeard("t2", "", True)]


def test_truncate_keeps_whole_words_in_proportion() -> None:
    segment = Segment("m", "t", "a b c d", 1000)
    assert truncate(segment.text, 0, segment) == ""
    assert truncate(segment.text, 499, segment) == "a"
    assert truncate(segment.text, 500, segment) == "a b"
    assert truncate(segment.text, 5000, segment) == "a b c d"
