"""Sans-I/O provider dialects: ``receive(message) -> events``, ``send(command) -> messages``.

One module per dialect (``twilio``, ``browser``, ``telnyx``, ``plivo``, ``vonage``,
``exotel``, ``jambonz``, ``freeswitch``, ``genesys``, ``asterisk``), each a small class
holding one call's protocol state; the events, commands and capabilities they share live in
``events``, ``commands`` and ``base``, the per-call bookkeeping of the telephony dialects in
``stream``, the mod_audio_fork socket Jambonz and FreeSWITCH share in ``audio_fork``. Codecs
never do I/O and never transcode audio (design §3).
"""

from voicegate.codecs.asterisk import AsteriskCodec
from voicegate.codecs.base import CallPhase, Capabilities, Codec, FrameLimits
from voicegate.codecs.browser import BrowserCodec
from voicegate.codecs.commands import (
    AcceptCall,
    ClearAudio,
    Command,
    Hangup,
    PausePlayback,
    PlayAudio,
    PublishEvent,
    ResumePlayback,
    SetMark,
)
from voicegate.codecs.events import (
    AudioReceived,
    CallEnded,
    CallStarted,
    DtmfReceived,
    Event,
    MarkReached,
    ProtocolReply,
)
from voicegate.codecs.exotel import ExotelCodec
from voicegate.codecs.freeswitch import FreeSwitchCodec
from voicegate.codecs.genesys import GenesysCodec
from voicegate.codecs.jambonz import JambonzCodec
from voicegate.codecs.plivo import PlivoCodec
from voicegate.codecs.telnyx import TelnyxCodec
from voicegate.codecs.twilio import TwilioCodec
from voicegate.codecs.vonage import VonageCodec

__all__ = [
    "AcceptCall",
    "AsteriskCodec",
    "AudioReceived",
    "BrowserCodec",
    "CallEnded",
    "CallPhase",
    "CallStarted",
    "Capabilities",
    "ClearAudio",
    "Codec",
    "Command",
    "DtmfReceived",
    "Event",
    "ExotelCodec",
    "FrameLimits",
    "FreeSwitchCodec",
    "GenesysCodec",
    "Hangup",
    "JambonzCodec",
    "MarkReached",
    "PausePlayback",
    "PlayAudio",
    "PlivoCodec",
    "ProtocolReply",
    "PublishEvent",
    "ResumePlayback",
    "SetMark",
    "TelnyxCodec",
    "TwilioCodec",
    "VonageCodec",
]
