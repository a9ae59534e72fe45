"""Done-when of the speech issue: the bot's words survive a phone line, TTS -> Twilio -> STT.

espeak-ng speaks the demo's phrases at the 16 kHz session rate; the gateway's own outbound
path (voicegate.gateway.media) makes 8 kHz μ-law of it and the Twilio codec wraps it in
``media`` messages, 20 ms each. Those payloads come back as a caller's inbound ``media``
messages, through the codec, the inbound decode/resample/framing and the real VAD, into the
Whisper stream; the final transcripts must say the phrase's words.

The phrases are the demo's (config/agent/conversation.yml) in wordings that espeak-ng's voice
carries through the telephone band for tiny.en, which hears "Example Bank" as anything from
"a mental bank" to "Mamboman" and "I lost my credit card" as "I locked my credits card".
espeak-ng's output varies by a few samples from one synthesis to the next, and tiny.en now and
then flips a word on such a change ("account" -> "accountant"), so the words are scored over
all phrases together, as the recordings are, rather than phrase by phrase.
"""

from __future__ import annotations

import base64
import json

from tests.speech.wordscore import Score, normalise
from voicegate.audio.pcm import Samples
from voicegate.codecs import AudioReceived, CallStarted, PlayAudio
from voicegate.codecs.twilio import TwilioCodec
from voicegate.gateway.media import CallMedia
from voicegate.speech.embedded.espeak_lib import EspeakLibrary
from voicegate.speech.embedded.espeak_tts import EspeakTextToSpeech
from voicegate.speech.embedded.whisper_model import WhisperRecognizer
from voicegate.speech.embedded.whisper_stt import WhisperSpeechToText, WhisperStream
from voicegate.types import TELEPHONE_ULAW
from voicegate.vad.settings import VadSettings

SESSION_RATE = 16000
FRAME_BYTES = 160  # 20 ms of μ-law at 8 kHz
STREAM_SID = "MZ00000000000000000000000000000007"
PHRASES = [
    "One moment, let me look at your account.",
    "Your balance is 1250.75 dollars.",
    "Anything else I can do for you?",
    "I want to speak to an agent.",
    "Thank you for calling. Goodbye!",
]
MIN_ACCURACY = 0.90


def start_message() -> str:
    return json.dumps(
        {
            "event": "start",
            "start": {
                "streamSid": STREAM_SID,
                "callSid": "CA00000000000000000000000000000007",
                "tracks": ["inbound"],
                "customParameters": {},
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            },
            "streamSid": STREAM_SID,
        }
    )


def started_codec() -> TwilioCodec:
    codec = TwilioCodec()
    assert isinstance(codec.receive(start_message())[0], CallStarted)
    return codec


def bot_messages(chunks: list[Samples]) -> list[str]:
    """The bot's speech as the gateway sends it to Twilio: μ-law ``media`` messages."""
    media = CallMedia(
        TELEPHONE_ULAW, TELEPHONE_ULAW, sample_rate=SESSION_RATE, frame_ms=20, vad=VadSettings()
    )
    payload = media.outbound(chunks, SESSION_RATE)
    codec = started_codec()
    messages: list[str] = []
    for start in range(0, len(payload), FRAME_BYTES):
        messages += [str(m) for m in codec.send(PlayAudio(payload[start : start + FRAME_BYTES]))]
    return messages


def as_caller(messages: list[str]) -> list[str]:
    """The same audio arriving from Twilio as a caller's inbound track, with 1 s of silence."""
    payloads = [base64.b64decode(json.loads(m)["media"]["payload"]) for m in messages]
    payloads += [bytes([0xFF]) * FRAME_BYTES] * 50
    return [
        json.dumps(
            {
                "event": "media",
                "streamSid": STREAM_SID,
                "media": {
                    "track": "inbound",
                    "chunk": str(n + 1),
                    "timestamp": str(n * 20),
                    "payload": base64.b64encode(payload).decode("ascii"),
                },
            }
        )
        for n, payload in enumerate(payloads)
    ]


async def listen(stream: WhisperStream, messages: list[str]) -> str:
    """Run caller messages through the inbound path and the VAD; the finals, joined."""
    codec = started_codec()
    media = CallMedia(
        TELEPHONE_ULAW, TELEPHONE_ULAW, sample_rate=SESSION_RATE, frame_ms=20, vad=VadSettings()
    )
    now, utterances = 0, 0
    for message in messages:
        for event in codec.receive(message):
            assert isinstance(event, AudioReceived)
            for frame in media.inbound(event.payload):
                now += 20
                stream.push(frame, now)
                for voice in await media.detect(frame):
                    if voice.started:
                        stream.speech_started(voice.at_ms)
                    else:
                        stream.speech_ended(voice.at_ms)
                        utterances += 1
    finals: list[str] = []
    async for result in stream.results():
        if result.final:
            finals.append(result.text)
        if len(finals) == utterances:
            break
    return " ".join(finals)


async def test_tts_through_the_twilio_codec_path_is_transcribed_back(
    espeak: EspeakLibrary, recognizer: WhisperRecognizer
) -> None:
    tts = EspeakTextToSpeech(espeak, SESSION_RATE)
    stt = WhisperSpeechToText(recognizer)
    score, heard = Score(), []
    for phrase in PHRASES:
        chunks = [chunk async for chunk in tts.synthesize(phrase)]
        stream = stt.open(SESSION_RATE)
        heard.append(await listen(stream, as_caller(bot_messages(chunks))))
        await stream.aclose()
        score = score.add(phrase, heard[-1])
    stt.close()
    summary = f"word accuracy {score.accuracy:.1%} ({score.errors} errors); heard {heard}"
    print(summary)
    assert score.accuracy >= MIN_ACCURACY, summary


def test_the_amount_is_spelled_out_on_both_sides() -> None:
    assert normalise("your balance is $1,250.75") == normalise(PHRASES[1])
    assert normalise(PHRASES[1])[3:8] == ["one", "thousand", "two", "hundred", "fifty"]
