"""Ingress limits: how long a peer may wait, how fast it may send, how much a call may keep.

One frozen dataclass, the ``limits`` section of ``config/voicegate.yml`` (issue 15). The server
reads the socket and HTTP limits, each call session the timeouts, pacing and timeline caps.
Every limit that ends a call closes it with 1008 (RFC 6455 §7.4.1, policy violation) and a
reason that names the limit and its configuration key.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from voicegate.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Limits:
    """Timeouts, pacing, size and state limits for every connection and call."""

    # A WebSocket that sends no `start` within this many seconds is closed (1008).
    start_timeout_s: float = 10.0
    # A started call that sends no audio for this many seconds is closed (1008).
    idle_timeout_s: float = 30.0
    # A call is closed (1008) after this many seconds (Twilio's own maximum is 4 hours).
    max_call_s: float = 14400.0
    # A provider that echoes marks (Twilio `mark`, Plivo `playedStream`, ...) and has echoed
    # none for this many seconds after the audio before it should have played is closed
    # (1008): it reads none of what it is sent. Counted from the end of that audio, so what
    # the provider holds (playout.send_ahead_ms) is not part of it (gateway/playout.py).
    playback_ack_timeout_s: float = 10.0
    # A send to a peer that has read nothing for this many seconds (the socket's buffers
    # full: it stopped reading) ends its call (1008); what a provider without marks needs.
    send_timeout_s: float = 10.0
    # WebSocket ping interval: a ping goes out when nothing came in for a whole interval, and
    # a peer that sends nothing within half an interval after it is dropped (websocket.py).
    heartbeat_s: float = 20.0
    # An HTTP connection with no complete request for this long is closed (keep-alive idle,
    # silent sockets and half-sent headers alike); a body not all sent this long after its
    # headers is answered 408 (gateway/admission.py).
    http_idle_timeout_s: float = 15.0
    # Upgraded sockets waiting for their `start` at once (they hold no call slot) ...
    max_waiting_for_start: int = 100
    # ... and at most this many of them from one client address (a provider's socket sends
    # its `start` within milliseconds, so few wait at once even at 50 call starts a second).
    waiting_for_start_per_ip: int = 20
    # Largest WebSocket message accepted; bigger ones close the socket with 1009.
    max_frame_bytes: int = 1024 * 1024
    # Largest Twilio Media Streams message (a start with parameters is a few kB).
    max_twilio_message_bytes: int = 64 * 1024
    # Largest browser message (64 KiB: 680 ms of 48 kHz PCM16; clients send 20 ms frames).
    max_browser_message_bytes: int = 64 * 1024
    # Inbound audio may run ahead of the wall clock by at most this factor ...
    media_max_speed: float = 1.0
    # ... plus this much audio (ms) of jitter; audio beyond it is dropped and counted.
    media_burst_ms: int = 2000
    # A call whose dropped audio exceeds this many ms is closed (1008): it floods on purpose.
    media_flood_ms: int = 10000
    # Messages that carry no audio (marks, DTMF, events, unknown types, ConversationRelay
    # prompts) per second of one call, times media_max_speed ...
    control_messages_per_s: float = 100.0
    # ... and at once; beyond, the call is closed (1008). Providers send a few a second.
    # A peer's WebSocket pings have a bucket of their own with this rate and burst.
    control_messages_burst: int = 200
    # New requests (webhooks, upgrades, pages) per second from one client address ...
    requests_per_ip_per_s: float = 20.0
    # ... and at once; beyond, 429 with a reason. Twilio calls come from few addresses.
    requests_per_ip_burst: int = 200
    # WebSockets open at once from one client address; beyond, 429 with a reason.
    sockets_per_ip: int = 1000
    # A worker whose media loop was more than 50 ms late for over this share of the last 2 s
    # takes no more calls than 90 % of those it holds (1013, /readyz 503), and raises that
    # limit again as it recovers (gateway/overload.py): the calls already up keep real-time
    # audio instead of all degrading together.
    shed_late_share: float = 0.15
    # ... but never below this many calls.
    shed_min_calls: int = 10
    # Timeline records kept per call; later ones are counted in a "timeline_truncated" record.
    timeline_max_records: int = 5000
    # Longest peer- or engine-supplied string kept in a timeline record (longer ones are cut).
    timeline_max_chars: int = 500
    # Timelines of finished calls kept for the replay tool and operators ...
    kept_timelines: int = 100
    # ... and their total size in bytes (oldest dropped first).
    kept_timelines_bytes: int = 32 * 1024 * 1024

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not value > 0:
                raise ConfigError(f"limits.{item.name} must be positive, got {value}")
