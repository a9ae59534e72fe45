"""Decode a short utterance through a short Whisper encoder window, when that is safe.

Whisper's encoder is trained on 30 s windows, and faster-whisper pads every input to one: a
3 s caller turn pays for 30 s of attention (~500 ms of one core for tiny.en here, ~90 % of the
decode). The encoder's positions are fixed sinusoids, so it also runs on the first N of them
(whisper.cpp's ``audio_ctx``). Measured on the 82 transcribed fixtures (8 kHz path,
bench/speech.py ``stt.window``): a 10 s window decodes ~6x faster with the same word error
rate (0.27 against 0.26, the differences mostly digits written as words). Shorter windows
make the decoder loop ("7. 7. 7. 7."): 8 s windows on 2 of the 82, windows of the utterance
plus 3 s on many; 10 s windows on none of them nor on 30 utterances of 4-7 s. So the window
stays 10 s (the default) and an utterance must leave :data:`MIN_TRAILING_S` of it silent.

A short decode that still looks degenerate (it fills its token budget, or repeats a phrase
three times running) is retried once on a window :data:`RETRY_EXTRA_S` longer: a loop
belongs to one padding, not to the audio. Measured on the fixtures' utterances cut at 60 %
(the pause decodes of a live call), the two that looped at 10 s ("0 0 0 0 0 0 0 0 0",
"5 5 5 ...") decoded as "0" and "5" at 12 s, in a third to a fifth of the full window's
time. The retry is taken only when it agrees with the loop collapsed to one repetition;
otherwise (a caller who did say "no, no, no", a retry that loops too)
:class:`ShortWindowDecoder` returns ``None`` and the caller decodes the full 30 s window, so
the worst case is two extra short decodes.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np
import numpy.typing as npt

#: Whisper's input rate and its log-mel hop (100 frames per second).
_RATE = 16000
_FRAMES_PER_S = 100
#: Silence the window must hold after the speech, so the decoder sees the audio end.
MIN_TRAILING_S = 3.0
#: Whisper's own encoder window (s), which faster-whisper pads every input to.
FULL_WINDOW_S = 30
#: The encoder window of short utterances (bench/speech.py ``stt.window``).
DEFAULT_WINDOW_S = 10.0
#: Token budget of a short decode: generous for speech (~4 tokens a second with
#: punctuation), so only a looping decoder reaches it.
_TOKENS_PER_S = 10
_EXTRA_TOKENS = 10
#: How much longer (s) the one retry of a looping short decode makes the window.
RETRY_EXTRA_S = 2.0
#: A phrase of up to this many words repeated three times running marks a looping decoder.
_LONGEST_LOOP_WORDS = 4
_LOOP_REPEATS = 3
#: faster-whisper's defaults for "this window holds no speech" (no_speech_threshold and
#: log_prob_threshold of ``WhisperModel.transcribe``), kept so both paths agree on silence.
_NO_SPEECH_PROB = 0.6
_LOW_AVG_LOGPROB = -1.0


class ShortWindowDecoder:
    """Greedy decodes of utterances that fit ``window_s`` with silence to spare.

    ``model`` is a loaded faster-whisper ``WhisperModel``; its CTranslate2 model, feature
    extractor and tokenizer are used directly (faster-whisper's ``transcribe`` always pads
    to 30 s). Safe from several threads at once, as the model is.
    """

    def __init__(self, model: Any, window_s: float, beam_size: int) -> None:
        tokenizer_module = importlib.import_module("faster_whisper.tokenizer")
        transcribe_module = importlib.import_module("faster_whisper.transcribe")
        self._storage_view = importlib.import_module("ctranslate2").StorageView
        self._model = model
        self._window_s = window_s
        self._beam_size = beam_size
        self._tokenizer = tokenizer_module.Tokenizer(
            model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en"
        )
        self._prompt = [*self._tokenizer.sot_sequence, self._tokenizer.no_timestamps]
        self._suppressed = list(transcribe_module.get_suppressed_tokens(self._tokenizer, [-1]))

    def fits(self, samples: int) -> bool:
        """Whether ``samples`` (16 kHz) leave the window its trailing silence."""
        return samples <= (self._window_s - MIN_TRAILING_S) * _RATE

    def decode(self, audio: npt.NDArray[np.float32]) -> str | None:
        """The text of ``audio`` (16 kHz, fits the window); None if untrusted (decode it whole)."""
        text, exhausted = self._generate(audio, self._window_s)
        if not (exhausted or loops(text)):
            return text
        retry_s = min(self._window_s + RETRY_EXTRA_S, FULL_WINDOW_S)
        retry, retry_exhausted = self._generate(audio, retry_s)
        if retry_exhausted or loops(retry) or _words(retry) != collapsed_words(text):
            return None
        return retry

    def _generate(self, audio: npt.NDArray[np.float32], window_s: float) -> tuple[str, bool]:
        """One greedy decode in a ``window_s`` window: its text, and whether it filled its
        token budget (only a looping decoder does)."""
        window = int(window_s * _RATE)
        padded = np.zeros(window, dtype=np.float32)
        padded[: len(audio)] = audio
        frames = int(window_s * _FRAMES_PER_S)
        features = self._model.feature_extractor(padded)[:, :frames]
        budget = math.ceil(len(audio) / _RATE * _TOKENS_PER_S) + _EXTRA_TOKENS
        storage = self._storage_view.from_array(
            np.ascontiguousarray(features[np.newaxis], dtype=np.float32)
        )
        result = self._model.model.generate(
            storage,
            [self._prompt],
            beam_size=self._beam_size,
            max_length=len(self._prompt) + budget,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=True,
            suppress_tokens=self._suppressed,
        )[0]
        tokens = [t for t in result.sequences_ids[0] if t < self._tokenizer.eot]
        text: str = self._tokenizer.decode(tokens).strip()
        if len(tokens) >= budget:
            return text, True
        # faster-whisper's average log-probability: the sum over the tokens and the end token.
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        if result.no_speech_prob > _NO_SPEECH_PROB and avg_logprob < _LOW_AVG_LOGPROB:
            return "", False
        return text, False


def _words(text: str) -> list[str]:
    """``text``'s words, lower case, without the punctuation around them."""
    return [word for word in (w.strip(".,!?;:").lower() for w in text.split()) if word]


def collapsed_words(text: str) -> list[str]:
    """``text``'s words with every run of a repeated phrase (1 to 4 words) kept once.

    "0 0 0 0" -> ["0"]; "thank you goodbye goodbye goodbye" -> ["thank", "you", "goodbye"].
    """
    words = _words(text)
    out: list[str] = []
    for word in words:
        out.append(word)
        for size in range(1, _LONGEST_LOOP_WORDS + 1):
            if len(out) >= 2 * size and out[-size:] == out[-2 * size : -size]:
                del out[-size:]
                break
    return out


def loops(text: str) -> bool:
    """Whether ``text`` repeats a phrase of 1 to 4 words three times running."""
    words = [word.strip(".,!?;:").lower() for word in text.split()]
    for size in range(1, _LONGEST_LOOP_WORDS + 1):
        span = size * _LOOP_REPEATS
        for start in range(len(words) - span + 1):
            phrase = words[start : start + size]
            if all(
                words[start + k * size : start + (k + 1) * size] == phrase
                for k in range(1, _LOOP_REPEATS)
            ):
                return True
    return False
