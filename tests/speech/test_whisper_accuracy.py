"""Done-when of the speech issue: every real human recording, through the phone path, ≥ 90 %.

Each recording goes the way a caller's voice does: 8 kHz G.711 μ-law on the wire, decoded and
resampled to the 16 kHz session rate in 20 ms frames, pushed into the embedded recogniser's
stream as one utterance; the final transcript is scored against the label.
"""

from __future__ import annotations

from tests.speech.speech_kit import (
    human_recordings,
    next_final,
    phone_payload,
    say_utterance,
    session_frames,
)
from tests.speech.wordscore import Score, normalise
from voicegate.speech.embedded.whisper_model import WhisperRecognizer
from voicegate.speech.embedded.whisper_stt import StreamOptions, WhisperSpeechToText

MIN_ACCURACY = 0.90


async def test_every_human_recording_after_the_ulaw_round_trip(
    recognizer: WhisperRecognizer,
) -> None:
    stt = WhisperSpeechToText(recognizer, StreamOptions(interim_interval_ms=0))
    recordings = human_recordings()
    score, misses = Score(), []
    for recording in recordings:
        stream = stt.open(16000)
        say_utterance(stream, session_frames(phone_payload(recording.path)))
        heard = (await next_final(stream)).text
        await stream.aclose()
        before, score = score, score.add(recording.transcript, heard)
        if score.errors > before.errors:
            misses.append(f"{recording.path.name}: {recording.transcript!r} -> {heard!r}")
    stt.close()
    summary = (
        f"word accuracy {score.accuracy:.1%} over {len(recordings)} recordings "
        f"({score.words} words, {score.errors} errors); misses: {misses}"
    )
    print(summary)
    assert len(recordings) == 45  # 16 alsa (8 and 16 kHz), 20 asterisk, 9 pocketsphinx
    assert score.accuracy >= MIN_ACCURACY, summary


def test_the_scorer_spells_out_numbers_and_drops_punctuation() -> None:
    assert normalise("Go forward 10 meters.") == ["go", "forward", "ten", "meters"]
    assert normalise("Your balance is $1,250.75.") == (
        [
            "your",
            "balance",
            "is",
            "one",
            "thousand",
            "two",
            "hundred",
            "fifty",
            "point",
            "seven",
            "five",
            "dollars",
        ]
    )
    assert normalise("Front, right!") == ["front", "right"]
    assert normalise("We're 5 5") == ["were", "five", "five"]


def test_the_scorer_counts_substitutions_deletions_and_insertions() -> None:
    score = Score().add("four queen of clubs", "for queen of clubs now")
    assert (score.errors, score.words) == (2, 4)
    assert score.add("ten", "10").accuracy == 1 - 2 / 5
