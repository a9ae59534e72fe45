"""Recorded callers: a WAV file, raw μ-law, or the messages of a recorded Twilio stream.

``voicegate replay`` streams one of these as the caller's side of a call:

- ``*.wav``: any WAV :func:`voicegate.audio.wav.read_wav` reads, at any rate: its channels
  averaged, or the one channel chosen (the caller's side of a dual-channel call recording);
- ``*.ulaw`` (or ``*.mulaw``, ``*.ul``): headerless G.711 μ-law at 8 kHz, as telephony
  captures are; ``*.alaw`` (``*.al``) the same in A-law; ``*.sln`` (``*.sln16``, ...)
  Asterisk's headerless 16-bit linear PCM at 8 kHz (16, ...);
- ``*.jsonl``: Twilio Media Streams messages, one per line (``connected``, ``start``, ``media``,
  ``stop``; providers.md §b.1). The inbound ``media`` payloads are the caller's audio, placed at
  their ``timestamp`` (a gap is silence, a message out of order goes back in its place, one
  written twice with the same ``chunk`` number counts once); the ``start`` message's
  ``callSid`` and ``customParameters`` are kept so the replay presents itself as the recorded
  call did.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from voicegate.audio.g711 import alaw_bytes_to_samples, ulaw_bytes_to_samples
from voicegate.audio.pcm import Samples, pcm16le_to_samples
from voicegate.audio.resample import SUPPORTED_RATES, resample_all
from voicegate.audio.wav import read_wav
from voicegate.errors import AudioFormatError

ULAW_RATE = 8000
ULAW_SUFFIXES = (".ulaw", ".mulaw", ".ul")
#: Headerless A-law at 8 kHz: the G.711 law of telephone networks outside North America/Japan.
ALAW_SUFFIXES = (".alaw", ".al")
#: Asterisk's headerless signed linear recordings (s16le): ``.sln`` at 8 kHz, ``.slnNN`` at
#: NN kHz (Asterisk's format names, e.g. ``Record(file.sln16)``).
SLIN_RATES = {".sln": 8000, ".sln16": 16000, ".sln24": 24000, ".sln48": 48000}
_SAMPLES_PER_MS = ULAW_RATE // 1000
#: The suffixes of the recordings that are not WAV files (the suffix says which format).
RAW_SUFFIXES = frozenset((*ULAW_SUFFIXES, *ALAW_SUFFIXES, *SLIN_RATES, ".jsonl"))
#: The longest silence a recorded stream's timestamps may leave before or between payloads:
#: Twilio sends media every 20 ms, silence included, so a longer jump is damage or another
#: clock, and laying it out as silence would take gigabytes (an epoch ms timestamp: 14 TB).
MAX_GAP_MS = 600_000
#: The shortest recording worth a call: one media frame (every provider frames at >= 20 ms).
MIN_RECORDING_MS = 20


@dataclass(frozen=True, slots=True)
class Recording:
    """A recorded caller: mono samples, their rate, and the call identity it came with."""

    samples: Samples
    sample_rate: int
    call_id: str = ""
    parameters: Mapping[str, str] = field(default_factory=dict)
    #: What reading it changed that a listener should know (channels mixed, ...).
    notes: tuple[str, ...] = ()

    @property
    def duration_ms(self) -> int:
        """Length in whole milliseconds."""
        return len(self.samples) * 1000 // self.sample_rate

    def at_rate(self, rate: int) -> Samples:
        """The samples converted to ``rate``."""
        if rate == self.sample_rate:
            return self.samples
        if self.sample_rate in SUPPORTED_RATES and rate in SUPPORTED_RATES:
            return resample_all(self.samples, self.sample_rate, rate)
        # Rates the gateway never streams at (44.1 kHz, 22.05 kHz, ...) only occur in files;
        # one whole-file conversion is all they need.
        converted = soxr.resample(self.samples, self.sample_rate, rate)
        return np.asarray(converted, dtype=np.int16)


def load_recording(path: Path, channel: int | None = None, verb: str = "replay") -> Recording:
    """Read a recorded caller, choosing the format by the file's suffix; ``channel`` picks
    one channel of a WAV file (1-based; None averages them), as :func:`read_wav` does.
    One shorter than a frame is refused: there is nothing to ``verb``."""
    recording = _load(path, channel)
    require_audio(path, recording.samples, recording.sample_rate, verb, recording.notes)
    return recording


def require_audio(
    path: Path, samples: Samples, sample_rate: int, verb: str, notes: tuple[str, ...] = ()
) -> None:
    """Refuse a recording shorter than one media frame: there is nothing to ``verb``.

    ``notes`` (a file cut short, ...) are added to the message: they may say why.
    """
    # A header alone (or a stray sample) would replay as a silent call that runs to --max-ms
    # and reports only "turns: 0", and analyse as "no speech": say instead that it is empty.
    duration_ms = len(samples) * 1000 // sample_rate
    if duration_ms < MIN_RECORDING_MS:
        raise AudioFormatError(
            f"{path}: {duration_ms} ms of audio ({len(samples)} at {sample_rate} Hz), less "
            f"than one {MIN_RECORDING_MS} ms frame: nothing to {verb}"
            + "".join(f"; {note}" for note in notes)
        )


def _load(path: Path, channel: int | None) -> Recording:
    suffix = path.suffix.lower()
    if suffix == ".wav":
        wav = read_wav(path, channel)
        # Copies of one channel (a "stereo" phone recording) average to it: nothing to say.
        notes = _channel_notes(wav.channels) if wav.channels_differ else ()
        return Recording(wav.samples, wav.sample_rate, notes=wav.notes() + notes)
    if channel is not None:
        # The other inputs hold one voice: raw captures are mono, and a Twilio recording's
        # caller is its inbound track whatever else it carries.
        raise AudioFormatError(f"{path}: only a WAV file has channels to choose from")
    if suffix in ULAW_SUFFIXES:
        return Recording(ulaw_bytes_to_samples(_read_bytes(path)), ULAW_RATE)
    if suffix in ALAW_SUFFIXES:
        return Recording(alaw_bytes_to_samples(_read_bytes(path)), ULAW_RATE)
    if suffix in SLIN_RATES:
        data = _read_bytes(path)
        # A capture cut mid-sample keeps its whole samples, as read_wav does.
        return Recording(pcm16le_to_samples(data[: len(data) // 2 * 2]), SLIN_RATES[suffix])
    if suffix == ".jsonl":
        return twilio_recording(path)
    raise AudioFormatError(
        f"{path}: cannot tell the format from the suffix {suffix!r}; use .wav, "
        f"{', '.join(ULAW_SUFFIXES)} (μ-law at 8 kHz), {', '.join(ALAW_SUFFIXES)} (A-law at "
        f"8 kHz), {', '.join(SLIN_RATES)} (Asterisk's signed linear) or .jsonl (Twilio messages), "
        "and convert anything else (MP3, FLAC, ...) to WAV, e.g. with `ffmpeg -i IN OUT.wav`"
    )


def _channel_notes(channels: int) -> tuple[str, ...]:
    if channels == 1:
        return ()
    # A dual-channel call recording (caller on one side, agent on the other) mixed down makes
    # the agent a second caller: say so rather than replay it silently.
    return (
        f"the recording has {channels} channels, averaged to mono: if they hold different "
        f"speakers (a dual-channel call recording), replay only the caller's with --channel N "
        f"(1 to {channels})",
    )


def twilio_recording(path: Path) -> Recording:
    """The caller's audio and identity from a file of Twilio Media Streams messages."""
    call_id, parameters = "", dict[str, str]()
    chunks: dict[int | str, tuple[int, bytes]] = {}  # chunk number (or line) -> (ms, payload)
    messages, cut = _messages(path)
    for number, message in messages:
        where = f"{path}:{number}"
        event = message.get("event")
        if event == "start":
            call_id, parameters = _start_fields(message, where)
        elif event == "media" and _inbound(message):
            payload, at_ms, chunk = _media_fields(message, where)
            # A logger that wrote a message twice repeats its chunk number: keep one copy.
            chunks.setdefault(f"line {number}" if chunk is None else chunk, (at_ms, payload))
    if not chunks:
        raise AudioFormatError(f"{path}: no inbound media messages")
    samples, notes = _place(path, chunks.values())
    return Recording(samples, ULAW_RATE, call_id, parameters, cut + notes)


def _place(path: Path, chunks: Iterable[tuple[int, bytes]]) -> tuple[Samples, tuple[str, ...]]:
    """The payloads laid out on the stream's clock, in timestamp order, and notes on it."""
    # sorted() is stable: payloads with one timestamp keep the order they were written in.
    ordered = sorted(chunks, key=lambda chunk: chunk[0])
    # Twilio counts ms from the stream's start; a logger that wrote its own clock (epoch ms)
    # starts days in: place the audio from its first payload instead.
    origin = ordered[0][0] if ordered[0][0] > MAX_GAP_MS else 0
    audio, last_ms = bytearray(), origin
    for at_ms, payload in ordered:
        if at_ms - last_ms > MAX_GAP_MS:
            raise AudioFormatError(
                f"{path}: the media timestamps jump from {last_ms} ms to {at_ms} ms; a stream "
                f"leaves no gap over {MAX_GAP_MS // 60_000} minutes (Twilio sends silence too)"
            )
        # Twilio timestamps media on the stream's clock; a jump means the caller's audio
        # was missing there, which a replay renders as silence. A payload that starts a few
        # ms before the previous one ended (timestamp jitter) follows it without a gap.
        gap = (at_ms - origin) * _SAMPLES_PER_MS - len(audio)
        audio += b"\xff" * max(0, gap) + payload
        last_ms = at_ms
    notes = (f"the media timestamps start at {origin} ms: placed from the first",) if origin else ()
    return ulaw_bytes_to_samples(audio), notes


def _messages(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], tuple[str, ...]]:
    """Each message with its line number, and a note when the last line was cut short."""
    messages: list[tuple[int, dict[str, Any]]] = []
    text = _read_bytes(path).decode("utf-8", errors="replace")
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines) and not text.endswith("\n"):
                # A logger stopped mid-line (killed, or the disk filled): keep the rest.
                return messages, (f"the last line ({number}) is cut short: left out",)
            raise AudioFormatError(f"{path}:{number}: not JSON ({error})") from error
        if not isinstance(message, dict):
            raise AudioFormatError(f"{path}:{number}: a Twilio message must be a JSON object")
        messages.append((number, message))
    return messages, ()


def _start_fields(message: dict[str, Any], where: str) -> tuple[str, dict[str, str]]:
    start = message.get("start")
    if not isinstance(start, dict):
        raise AudioFormatError(f"{where}: 'start' message without a start object")
    media_format = start.get("mediaFormat", {})
    encoding = media_format.get("encoding") if isinstance(media_format, dict) else None
    if encoding not in (None, "audio/x-mulaw"):
        raise AudioFormatError(f"{where}: media encoding {encoding!r}; Twilio streams μ-law")
    parameters = start.get("customParameters") or {}
    if not isinstance(parameters, dict):
        raise AudioFormatError(f"{where}: customParameters must be an object")
    return str(start.get("callSid", "")), {str(k): str(v) for k, v in parameters.items()}


def _inbound(message: dict[str, Any]) -> bool:
    # A `both_tracks` fork also carries what the call played to the caller, as `track:
    # outbound` (providers.md, Twilio `media`): that is never the caller's voice.
    media = message.get("media")
    return not isinstance(media, dict) or media.get("track", "inbound") == "inbound"


def _media_fields(message: dict[str, Any], where: str) -> tuple[bytes, int, int | None]:
    """A media message's payload, timestamp and chunk number (None when it has none)."""
    media = message.get("media")
    if not isinstance(media, dict):
        raise AudioFormatError(f"{where}: 'media' message without a media object")
    try:
        payload = base64.b64decode(media["payload"], validate=True)
        at_ms = int(media.get("timestamp", 0))
        chunk = None if media.get("chunk") is None else int(media["chunk"])
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        raise AudioFormatError(
            f"{where}: bad media payload, timestamp or chunk ({error})"
        ) from error
    return payload, at_ms, chunk


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise AudioFormatError(f"{path}: cannot read ({error.strerror})") from error
