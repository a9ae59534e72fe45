"""The seam between the server (sockets) and a call session (protocol and dialogue).

The server adapts each accepted WebSocket to a :class:`Transport` and hands it, with a fresh
codec for the route's dialect and a :class:`CallGate`, to a :class:`CallRunner`, which runs the
call to its end. The session never sees aiohttp; tests and the replay tool can drive a session
over any transport.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from voicegate.codecs import CallStarted, Codec
from voicegate.errors import PolicyViolationError, RemoteProtocolError

#: WebSocket close codes (RFC 6455 §7.4.1) the gateway uses.
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001  # the gateway is shutting down
#: Never sent: how a connection that ended without a close frame is reported (RFC 6455
#: §7.1.5), in the logs, the metrics and the call log.
CLOSE_ABNORMAL = 1006
CLOSE_PROTOCOL_ERROR = 1002  # the peer sent a malformed message (RemoteProtocolError)
CLOSE_INVALID_DATA = 1007  # a text frame that is not UTF-8
CLOSE_POLICY_VIOLATION = 1008  # the peer broke a limit (PolicyViolationError)
CLOSE_TOO_BIG = 1009  # a message over the size limit
CLOSE_INTERNAL_ERROR = 1011  # the call crashed; other calls are untouched
CLOSE_TRY_AGAIN_LATER = 1013  # the gateway is at capacity
#: ``Transport.peer_close`` of a connection that dropped (a reset, a lost peer, TCP closed
#: without a close frame).
CONNECTION_LOST = "the connection was lost"


def close_code_for(error: RemoteProtocolError) -> int:
    """The close code a peer's fault earns: 1008 for a broken limit, else 1002."""
    return (
        CLOSE_POLICY_VIOLATION if isinstance(error, PolicyViolationError) else CLOSE_PROTOCOL_ERROR
    )


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a call is not taken, as the WebSocket close it gets."""

    code: int
    reason: str


class Transport(Protocol):
    """One peer's message channel: text frames as ``str``, binary frames as ``bytes``."""

    async def receive(self) -> str | bytes | None:
        """The next message, or None once the peer has closed the connection."""
        ...

    async def send(self, message: str | bytes) -> None:
        """Send one message (a no-op once the connection is closed)."""
        ...

    async def close(self, code: int, reason: str) -> None:
        """Close the connection with a WebSocket close code and a human-readable reason."""
        ...

    @property
    def peer_close(self) -> str | None:
        """How the peer ended the connection, once :meth:`receive` returned None because it
        did (its close code and reason, or that the connection was lost); None otherwise."""
        ...

    @property
    def sent_close(self) -> tuple[int, str] | None:
        """The code and reason of the first :meth:`close`, once one was made; else None."""
        ...


class CallGate(Protocol):
    """The gateway's admission of one connection: its own id, and the call slot at `start`."""

    @property
    def call_id(self) -> str:
        """The gateway's own id for this connection (never a peer-chosen value)."""
        ...

    def started(self, call: CallStarted) -> Refusal | None:
        """Take a call slot at `start`, or say why not (authentication, capacity, duplicate)."""
        ...

    def record(self, record: dict[str, Any]) -> None:
        """One record of the call's timeline, for the gateway's own log of the call."""
        ...


class CallLeases(Protocol):
    """Admission of calls by provider call id, across every node of a deployment."""

    async def acquire(self, call_id: str) -> Refusal | None:
        """Take the call's lease, or say why not (live elsewhere, full, registry down)."""
        ...

    async def release(self, call_id: str) -> None:
        """Give the call's lease back (the call ended on this node)."""
        ...

    def refusal(self) -> Refusal | None:
        """Why a new call would be refused now (the registry unreachable), as last seen."""
        ...

    async def check(self) -> Refusal | None:
        """The same, checked afresh within a short timeout (the answer reused briefly)."""
        ...


class CallRunner(Protocol):
    """Runs one call over a transport with a codec until the call ends."""

    async def __call__(self, transport: Transport, codec: Codec, gate: CallGate) -> None:
        """Return when the call is over; raise only for a bug (the server logs and closes)."""
        ...
