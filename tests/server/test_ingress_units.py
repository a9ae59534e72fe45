"""The pure parts of the ingress limits: pacing, rate limits, tokens, bounds, close reasons."""

from __future__ import annotations

import pytest

from voicegate.codecs import TwilioCodec
from voicegate.errors import ConfigError, PolicyViolationError, RemoteProtocolError
from voicegate.gateway.auth import (
    STREAM_TOKEN_PARAMETER,
    bearer_valid,
    issue_stream_token,
    origin_allowed,
    stream_token_problem,
)
from voicegate.gateway.limits import Limits
from voicegate.gateway.pacing import ControlPacer, InboundPacer
from voicegate.gateway.ratelimit import MAX_ADDRESSES, RateLimiter, SocketCounter
from voicegate.gateway.timeline import Timeline
from voicegate.gateway.twiml import signature_valid
from voicegate.gateway.websocket import MAX_CLOSE_REASON_BYTES, close_reason


class FakeClock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_real_time_audio_is_kept_and_audio_ahead_of_it_dropped_then_refused() -> None:
    clock = FakeClock()
    pacer = InboundPacer(Limits(media_burst_ms=100, media_flood_ms=1000), clock)
    for n in range(1, 51):  # one second of 20 ms frames, in real time
        clock.now = 100.0 + n / 50
        assert pacer.admit(20)
    assert [pacer.admit(20) for _ in range(6)] == [True] * 5 + [False]  # the burst, then drop
    assert (pacer.dropped_messages, pacer.dropped_ms) == (1, 20)
    clock.now += 1.0  # time passing makes room again
    assert pacer.admit(20)
    with pytest.raises(PolicyViolationError, match=r"limits\.media_flood_ms"):
        flood(pacer)
    assert pacer.dropped_ms > 1000


def flood(pacer: InboundPacer) -> None:
    """Send 20 ms frames without the clock moving (bounded)."""
    for _ in range(1000):
        pacer.admit(20)


def test_messages_without_audio_get_a_burst_then_a_rate_then_the_call_is_closed() -> None:
    clock = FakeClock()
    pacer = ControlPacer(Limits(control_messages_per_s=10, control_messages_burst=5), clock)
    for _ in range(5):
        pacer.admit()  # the burst
    clock.now += 0.25  # 2.5 messages' worth of refill
    pacer.admit()
    pacer.admit()
    with pytest.raises(PolicyViolationError, match=r"limits\.control_messages_per_s"):
        pacer.admit()
    start = clock.now
    for second in range(1, 21):  # ten a second, steadily, is fine
        for tenth in range(10):
            clock.now = start + second + tenth / 10
            pacer.admit()


def test_a_bucket_per_address_refills_with_time_and_the_table_is_bounded() -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate=2.0, burst=2, clock=clock)
    assert [limiter.allow("a") for _ in range(3)] == [True, True, False]
    assert limiter.allow("b")
    clock.now += 0.5
    assert limiter.allow("a")
    assert not limiter.allow("a")
    for n in range(MAX_ADDRESSES + 10):
        limiter.allow(f"10.0.{n}")
    assert len(limiter._buckets) == MAX_ADDRESSES
    sockets = SocketCounter(limit=1)
    assert sockets.acquire("a")
    assert not sockets.acquire("a")
    sockets.release("a")
    assert sockets.acquire("a")


def test_stream_tokens_bind_a_call_and_expire() -> None:
    token = issue_stream_token("secret", "CA1", now=1000.0, ttl_s=60)
    params = {STREAM_TOKEN_PARAMETER: token}
    assert stream_token_problem("secret", "CA1", params, now=1030.0) is None
    assert stream_token_problem("secret", "CA1", params, now=1061.0) == "expired stream token"
    assert stream_token_problem("secret", "CA2", params, now=1030.0) is not None
    assert stream_token_problem("other", "CA1", params, now=1030.0) is not None
    forged = {STREAM_TOKEN_PARAMETER: "9999999999." + token.partition(".")[2]}
    assert stream_token_problem("secret", "CA1", forged, now=1030.0) is not None
    assert stream_token_problem("secret", "CA1", {STREAM_TOKEN_PARAMETER: "\ud800"}, 0) == (
        "malformed stream token"
    )


def test_origins_and_keys() -> None:
    assert origin_allowed(None, "gw:8080", ())
    assert origin_allowed("http://gw:8080", "gw:8080", ())
    assert not origin_allowed("http://evil", "gw:8080", ())
    assert origin_allowed("https://app", "gw:8080", ("https://app",))
    assert bearer_valid("Bearer k", "k")
    assert not bearer_valid("Bearer k\u00e9", "k")
    assert not bearer_valid("Basic k", "k")


def test_a_non_ascii_signature_is_a_mismatch_not_an_error() -> None:
    assert not signature_valid("token", "https://x/twilio/voice", {}, "\udcc3\udca9")
    assert not signature_valid("token", "https://x/twilio/voice", {}, "é")


def test_close_reasons_survive_any_peer_text() -> None:
    for text in ("a\ud800b", "\x00\x1b[2J", "é" * 200, "\U0001f600" * 50):
        reason = close_reason(text)
        assert len(reason) <= MAX_CLOSE_REASON_BYTES
        assert reason.decode("utf-8").isprintable()


def test_lone_surrogates_are_a_protocol_error_of_the_codec() -> None:
    codec = TwilioCodec()
    with pytest.raises(RemoteProtocolError, match="lone UTF-16 surrogate"):
        codec.receive('{"event": "connected", "protocol": "\\ud800"}')
    codec.receive('{"event": "connected", "protocol": "\\ud83d\\ude00"}')  # a pair is fine


def test_a_timeline_keeps_bounded_records_and_counts_the_rest() -> None:
    timeline = Timeline(max_records=3, max_chars=5)
    for n in range(10):
        timeline.emit(n, "mark_played", name="x" * 100, extra={str(k): k for k in range(100)})
    records = timeline.records
    assert len(records) == 3
    assert records[0]["name"] == "xxxxx..."
    assert len(records[0]["extra"]) == 32
    assert records[-1] == {"t_ms": 2, "event": "timeline_truncated", "dropped": 8, "last_ms": 9}


def test_every_limit_must_be_positive() -> None:
    with pytest.raises(ConfigError, match=r"limits\.idle_timeout_s"):
        Limits(idle_timeout_s=0)
