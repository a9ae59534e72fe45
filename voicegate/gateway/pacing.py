"""Inbound media pacing: a peer may not send audio faster than real time (issue 12 item 4).

A token bucket on media time against wall time. Audio that runs ahead of the wall clock (at
``media_max_speed``) by more than ``media_burst_ms`` is dropped before it is decoded, so a
flood costs only the parse; once more than ``media_flood_ms`` has been dropped the sender is
clearly abusive and its call ends with 1008. Honest providers send 20 ms every 20 ms
(providers.md §b.1), so they never reach the bucket's edge; a network stall followed by a
catch-up burst is what ``media_burst_ms`` absorbs.

Messages that carry no audio (marks, DTMF, provider events, types the codec ignores,
ConversationRelay prompts) cost the gateway more than audio (a DTMF is a barge-in and a
``clear``; a prompt is an engine turn) and have no media clock to pace them: a token bucket
(:class:`ControlPacer`) closes a call that sends them faster than any provider does.
"""

from __future__ import annotations

from collections.abc import Callable

from voicegate.errors import PolicyViolationError
from voicegate.gateway.limits import Limits
from voicegate.gateway.ratelimit import TokenBucket


class InboundPacer:
    """Decides per audio message whether it is kept, dropped, or ends the call."""

    def __init__(self, limits: Limits, clock: Callable[[], float]) -> None:
        self._limits = limits
        self._clock = clock
        # Wall time runs from the connection, not from the first audio processed: a peer
        # cannot have sent before it connected, and audio that queued while this gateway was
        # busy (e.g. opening the call) is no burst of the peer's.
        self._began = clock()
        self._media_ms = 0.0
        self.dropped_ms = 0.0
        self.dropped_messages = 0

    def admit(self, duration_ms: float) -> bool:
        """True to keep ``duration_ms`` of audio, False to drop it; raises on a flood."""
        now = self._clock()
        limits = self._limits
        allowed = (now - self._began) * 1000.0 * limits.media_max_speed + limits.media_burst_ms
        if self._media_ms + duration_ms <= allowed:
            self._media_ms += duration_ms
            return True
        self.dropped_ms += duration_ms
        self.dropped_messages += 1
        if self.dropped_ms > limits.media_flood_ms:
            raise PolicyViolationError(
                f"audio sent faster than {limits.media_max_speed:g}x real time: over "
                f"{limits.media_flood_ms} ms dropped (limits.media_flood_ms)"
            )
        return False


class ControlPacer:
    """A token bucket on one call's messages without audio; an empty bucket ends the call."""

    def __init__(self, limits: Limits, clock: Callable[[], float]) -> None:
        self._rate = limits.control_messages_per_s * limits.media_max_speed
        self._burst = float(limits.control_messages_burst)
        self._clock = clock
        self._bucket = TokenBucket(self._rate, self._burst, clock())

    def admit(self) -> None:
        """Count one message; raises once the peer sends them faster than the limits allow."""
        if not self._bucket.take(self._clock()):
            raise PolicyViolationError(
                f"more than {self._burst:g} messages without audio at once, or over "
                f"{self._rate:g} a second (limits.control_messages_per_s)"
            )
