"""Playout paces bot audio on media time, marks each segment and drops stale epochs."""

from voicegate.codecs import ClearAudio, PausePlayback, PlayAudio, ResumePlayback, SetMark
from voicegate.gateway.ledger import TurnHeard
from voicegate.gateway.playout import Playout, QueuedSegment, provider_pace
from voicegate.gateway.session.settings import SessionSettings

ULAW_BYTES_PER_MS = 8


def segment(text: str, ms: int, epoch: int = 0, turn: str = "t1") -> QueuedSegment:
    return QueuedSegment(epoch, turn, text, bytes([0xFF]) * (ms * ULAW_BYTES_PER_MS))


def audio_ms(commands: list[object]) -> int:
    return sum(len(c.payload) for c in commands if isinstance(c, PlayAudio)) // ULAW_BYTES_PER_MS


def test_release_keeps_at_most_the_send_ahead_in_flight() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=100)
    playout.enqueue(segment("hello there", 1000))
    commands, news = playout.release(now_ms=0)
    assert news.started
    assert audio_ms(commands) == 100
    assert all(len(c.payload) == 160 for c in commands if isinstance(c, PlayAudio))
    for now in range(20, 2000, 20):
        commands, news = playout.release(now_ms=now)
        assert not news.started
        assert audio_ms(commands) <= 20
    assert playout.ledger.in_flight  # the mark has not come back yet


def test_every_segment_ends_with_its_mark() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=1000)
    playout.enqueue(segment("one", 100))
    playout.enqueue(segment("two", 100))
    commands, _ = playout.release(now_ms=0)
    marks = [c.name for c in commands if isinstance(c, SetMark)]
    assert marks == [s.mark for s in playout.ledger.in_flight]
    assert isinstance(commands[-1], SetMark)
    assert audio_ms(commands) == 200


def test_marks_settle_what_was_heard_and_report_drain() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=1000)
    playout.enqueue(segment("all of it", 200))
    commands, _ = playout.release(now_ms=0)
    assert playout.ledger.close_turn("t1") is None
    mark = next(c.name for c in commands if isinstance(c, SetMark))
    heard, news = playout.mark_reached(mark, now_ms=200)
    assert heard == TurnHeard("t1", "all of it", interrupted=False)
    assert news.drained
    assert playout.idle


def test_pause_holds_audio_and_resume_continues() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=40)
    playout.enqueue(segment("a b c d", 400))
    first, _ = playout.release(now_ms=0)
    playout.pause()
    held, _ = playout.release(now_ms=200)
    assert held == []
    playout.resume()
    resumed, _ = playout.release(now_ms=220)
    assert audio_ms(first) + audio_ms(resumed) == 40 + 40


def test_flush_clears_the_provider_and_drops_the_old_epoch() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=100)
    playout.enqueue(segment("one two three four", 1000))
    playout.release(now_ms=0)
    commands, heard = playout.flush(new_epoch=1, now_ms=500)
    assert commands == [ClearAudio()]
    assert heard == [TurnHeard("t1", "one two", interrupted=True)]
    # Audio the interrupted turn still produces is dropped before the codec.
    playout.enqueue(segment("stale", 500, epoch=0))
    commands, news = playout.release(now_ms=520)
    assert commands == []
    assert not news.started
    playout.enqueue(segment("fresh", 100, epoch=1, turn="t2"))
    commands, news = playout.release(now_ms=540)
    assert news.started
    assert audio_ms(commands) == 100


def test_chunks_halve_the_messages_within_the_same_flush_budget() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=100, chunk_ms=40)
    playout.enqueue(segment("a long answer", 2000))
    sent_ms, messages = 0, 0
    for now in range(0, 2000, 20):
        commands, _ = playout.release(now_ms=now)
        chunks = [c for c in commands if isinstance(c, PlayAudio)]
        assert all(len(c.payload) <= 40 * ULAW_BYTES_PER_MS for c in chunks)
        messages += len(chunks)
        sent_ms += audio_ms(commands)
        held = sent_ms - now  # what the provider still has to play
        assert held <= 100  # never more to flush than with 20 ms frames
        if sent_ms < 2000:
            assert held >= 100 - 40 - 20  # and it never runs dry between two frames
    assert sent_ms == 2000
    assert messages == 2000 // 40


def test_the_chunk_never_exceeds_half_the_send_ahead() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=40, chunk_ms=100)
    playout.enqueue(segment("short budget", 400))
    commands, _ = playout.release(now_ms=0)
    assert [len(c.payload) for c in commands if isinstance(c, PlayAudio)] == [160, 160]


def test_without_acknowledgements_marks_fall_due_on_the_playout_clock() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=100, estimate_acks=True)
    playout.enqueue(segment("one", 100))
    playout.enqueue(segment("two", 100))
    sent = []
    due: dict[int, list[str]] = {}
    for now in range(0, 400, 20):
        due[now] = playout.due_marks(now)
        commands, _ = playout.release(now_ms=now)
        sent += [c.name for c in commands if isinstance(c, SetMark)]
    # Each mark is due once the audio sent before it has had time to play: 100 ms, 200 ms.
    assert [now for now, names in due.items() if names] == [100, 200]
    assert [name for names in due.values() for name in names] == sent
    # A cut settles the flight itself: nothing falls due for audio the provider dropped.
    playout.enqueue(segment("three", 300))
    playout.release(now_ms=400)
    playout.cut(now_ms=420)
    assert playout.due_marks(2000) == []


def test_acknowledged_providers_never_get_estimated_marks() -> None:
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=1000)
    playout.enqueue(segment("one", 100))
    playout.release(now_ms=0)
    assert playout.due_marks(10_000) == []


def test_a_provider_wanting_big_chunks_gets_them_with_two_in_flight() -> None:
    # Exotel's 3.2 kB minimum: 200 ms at 8 kHz PCM16, 100 ms at 16 kHz, 80 ms at 24 kHz.
    pace = {rate: (rate // 1000 * 2) for rate in (8000, 16000, 24000)}
    lifted = {
        rate: provider_pace(40, 100, frame_ms=20, min_bytes=3200, bytes_per_ms=per_ms)
        for rate, per_ms in pace.items()
    }
    assert lifted == {8000: (200, 400), 16000: (100, 200), 24000: (80, 160)}
    assert provider_pace(40, 100, frame_ms=20, min_bytes=1, bytes_per_ms=8) == (40, 100)


def released_ms(playout: Playout, start_ms: int, end_ms: int) -> int:
    """Audio released by calling release every 20 ms in [start_ms, end_ms), as the session does."""
    return sum(audio_ms(playout.release(now)[0]) for now in range(start_ms, end_ms, 20))


def test_a_provider_that_can_pause_is_held_and_continued_not_cleared() -> None:
    # Asterisk (capabilities.pause): detection pauses it (PAUSE_MEDIA) and keeps its queue; a
    # false alarm continues it (CONTINUE_MEDIA) with nothing re-sent, so every sample of the
    # segment is sent exactly once however long the pause.
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=100, provider_pause=True)
    playout.enqueue(segment("one two three four", 1000))
    before = released_ms(playout, 0, 220)
    assert playout.cut(now_ms=220) == [PausePlayback()]
    assert released_ms(playout, 220, 700) == 0
    assert playout.unplayed_ms(now_ms=700) == 1000 - 220  # nothing played while paused
    assert playout.resume(now_ms=700) == [ResumePlayback()]
    assert before + released_ms(playout, 700, 2000) == 1000
    assert playout.resume(now_ms=2000) == []  # not paused at the provider: nothing to send


def test_a_flush_after_a_provider_pause_counts_only_what_played_before_it() -> None:
    # 500 ms of a 1 s segment played, then 600 ms paused at the provider, then confirmed:
    # the caller heard half of it, not all of it as the wall clock since it began would say.
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=100, provider_pause=True)
    playout.enqueue(segment("one two three four five six seven eight nine ten", 1000))
    released_ms(playout, 0, 520)
    assert playout.cut(now_ms=500) == [PausePlayback()]
    commands, heard = playout.flush(new_epoch=1, now_ms=1100)
    assert commands == [ClearAudio()]  # FLUSH_MEDIA, which also ends Asterisk's pause
    assert heard == [TurnHeard("t1", "one two three four five", interrupted=True)]


def test_the_default_send_ahead_rides_out_a_300_ms_stall_of_the_media_loop() -> None:
    # A stalled loop releases nothing until it runs again (bench/calls.py saw 100-500 ms
    # stalls at 150 calls on 2 cores): the provider must still hold audio to play meanwhile.
    defaults = SessionSettings()
    playout = Playout(
        bytes_per_ms=ULAW_BYTES_PER_MS,
        send_ahead_ms=defaults.send_ahead_ms,
        chunk_ms=defaults.chunk_ms,
    )
    playout.enqueue(segment("a long answer", 3000))
    sent_ms = 0
    for now in range(0, 1000, 20):
        sent_ms += audio_ms(playout.release(now_ms=now)[0])
    stall_ends = 980 + 300
    assert sent_ms - stall_ends > 0  # the caller still had audio when the loop came back
    sent_ms += audio_ms(playout.release(now_ms=stall_ends)[0])
    assert sent_ms - stall_ends <= defaults.send_ahead_ms  # and no more than the send-ahead


def test_a_mark_is_late_only_after_its_audio_was_due_to_play() -> None:
    # 400 ms sent ahead: the mark of a 200 ms segment sent at 0 is due at 200, when its audio
    # has played; lateness counts from there, so the send-ahead is never counted as late.
    playout = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=400)
    playout.enqueue(segment("one", 200))
    playout.enqueue(segment("two", 200))
    commands, _ = playout.release(now_ms=0)
    first, second = [c.name for c in commands if isinstance(c, SetMark)]
    assert playout.due  # checked on every frame while a mark is awaited
    assert playout.ack_late_ms(now_ms=200) == 0
    assert playout.ack_late_ms(now_ms=900) == 700
    playout.mark_reached(first, now_ms=900)
    assert playout.ack_late_ms(now_ms=900) == 500  # the second was due at 400
    playout.mark_reached(second, now_ms=900)
    assert playout.ack_late_ms(now_ms=5000) == 0
    assert not playout.due


def test_a_cut_or_a_provider_pause_makes_no_mark_late() -> None:
    cleared = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=400)
    cleared.enqueue(segment("one", 200))
    cleared.release(now_ms=0)
    cleared.cut(now_ms=100)  # the provider echoes the cleared mark, ignored
    assert cleared.ack_late_ms(now_ms=5000) == 0
    held = Playout(bytes_per_ms=ULAW_BYTES_PER_MS, send_ahead_ms=400, provider_pause=True)
    held.enqueue(segment("one", 200))
    held.release(now_ms=0)
    held.cut(now_ms=100)  # PAUSE_MEDIA: nothing plays, so nothing is late
    assert held.ack_late_ms(now_ms=5000) == 0
    held.resume(now_ms=5000)  # 4.9 s held: the mark now falls due at 5100
    assert held.ack_late_ms(now_ms=5100) == 0
    assert held.ack_late_ms(now_ms=5300) == 200
