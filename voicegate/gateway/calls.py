"""The registry of active calls: admission against a capacity, crash isolation, and draining.

Every call runs in a task owned by a :class:`asyncio.TaskGroup` in the request handler that
accepted it (design §8: no task without an owner); the registry only keeps a handle so that
a drain can close and cancel what is still running at the deadline.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from voicegate.codecs import Codec
from voicegate.errors import RemoteProtocolError, StoreError
from voicegate.gateway.overload import LoadGuard
from voicegate.gateway.ratelimit import SocketCounter
from voicegate.gateway.transport import (
    CLOSE_ABNORMAL,
    CLOSE_GOING_AWAY,
    CLOSE_INTERNAL_ERROR,
    CLOSE_NORMAL,
    CLOSE_POLICY_VIOLATION,
    CLOSE_TRY_AGAIN_LATER,
    CONNECTION_LOST,
    CallGate,
    CallLeases,
    CallRunner,
    Refusal,
    Transport,
    close_code_for,
)

log = logging.getLogger(__name__)
E = TypeVar("E", bound=Exception)

#: After the deadline, how long cancelled calls get to unwind before the drain gives up on them.
CANCEL_GRACE_S = 5.0
SHUTDOWN_REASON = "the gateway is shutting down"
_ALREADY_LIVE = Refusal(CLOSE_POLICY_VIOLATION, "a stream for this call id is already live")


class Admission(enum.Enum):
    """Whether the gateway takes new calls."""

    STARTING = "starting"  # listening, not ready yet (e.g. warming up models)
    OPEN = "open"
    DRAINING = "draining"  # shutting down: running calls may finish, new ones are refused


@dataclass(frozen=True, slots=True)
class Readiness:
    """What ``GET /readyz`` reports."""

    ready: bool
    reason: str
    active_calls: int
    capacity: int


@dataclass(frozen=True, slots=True)
class DrainResult:
    """How a drain ended: calls that finished by themselves, and calls closed at the deadline."""

    finished: int
    closed: int


@dataclass(slots=True, eq=False)
class ActiveCall:
    """One admitted call: its transport, the task running it, and how its socket will close."""

    call_id: str
    dialect: str
    transport: Transport
    task: asyncio.Task[None] | None = None
    # Set at the peer's `start`, when the call takes a slot (issue 15: not at the upgrade).
    provider_call_id: str | None = None
    # The address the socket came from, counted while the call awaits its `start`.
    client: str = ""
    # Until something decides otherwise, an unfinished call was cancelled from outside.
    close_code: int = CLOSE_GOING_AWAY
    close_reason: str = "call cancelled"
    _decided: bool = field(default=False, repr=False)

    def decide(self, code: int, reason: str) -> None:
        """Record how the call ends; the first decision wins (a drain beats a later return)."""
        if not self._decided:
            self._decided = True
            self.close_code, self.close_reason = code, reason


class Seat(enum.Enum):
    """A capacity gate's answer at a call's `start`."""

    TAKEN = "taken"  # admitted and counted
    FULL = "full"  # at capacity
    LIVE = "live"  # a stream of this provider call id is live already (on another worker)


class CapacityGate(Protocol):
    """Admission against a capacity shared by every process serving the deployment's calls.

    :class:`LocalCapacityGate` counts one process's calls; ``scoreboard.SharedCapacityGate``
    counts those of every worker of ``voicegate serve --workers N``.
    """

    @property
    def capacity(self) -> int:
        """Calls admitted at once."""
        ...

    def active_calls(self) -> int:
        """Calls admitted and not yet released, across everything the gate spans."""
        ...

    def try_admit(self, call_id: str = "") -> Seat:
        """Count one more call unless at capacity or ``call_id`` (the provider's) is live
        anywhere the gate spans; checked and counted in one step."""
        ...

    def release(self, call_id: str = "") -> None:
        """Count one admitted call as ended."""
        ...


class LocalCapacityGate:
    """A :class:`CapacityGate` counting the calls of this process only."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self._capacity = capacity
        self._active = 0

    @property
    def capacity(self) -> int:
        """Calls admitted at once."""
        return self._capacity

    def active_calls(self) -> int:
        """Calls admitted and not yet released."""
        return self._active

    def try_admit(self, call_id: str = "") -> Seat:
        """Count one more call unless at capacity (the registry knows this process's ids)."""
        if self._active >= self._capacity:
            return Seat.FULL
        self._active += 1
        return Seat.TAKEN

    def release(self, call_id: str = "") -> None:
        """Count one call as ended."""
        self._active = max(0, self._active - 1)


class CallRegistry:
    """Active calls by id, admitted through a :class:`CapacityGate` while the gateway is open.

    An ``int`` capacity means a :class:`LocalCapacityGate` of that size. A connection is
    registered at its upgrade (at most ``waiting`` of them wait for their `start`) and takes
    a place in the gate only at `start`, keyed by the provider's call id so a second live
    stream of the same call is refused (issue 15; one worker's calls: across workers and
    nodes is issue 13).
    """

    def __init__(
        self,
        capacity: int | CapacityGate,
        waiting: int | None = None,
        leases: CallLeases | None = None,
        load: LoadGuard | None = None,
        waiting_per_client: int | None = None,
    ) -> None:
        self._gate = LocalCapacityGate(capacity) if isinstance(capacity, int) else capacity
        # Sockets from one address awaiting `start`: one client cannot hold every waiting
        # place (a hundred idle sockets refused every new call on every route).
        self._waiting_per_client = waiting_per_client
        self._waiting_by_client = (
            None if waiting_per_client is None else SocketCounter(waiting_per_client)
        )
        # The deployment's call registry (Redis): while unreachable, new calls are refused.
        self._leases = leases
        # This worker's media loop running behind: new calls are shed (gateway/overload.py).
        self._load = load
        self._waiting = self._gate.capacity if waiting is None else waiting
        self._admission = Admission.STARTING
        self._calls: dict[str, ActiveCall] = {}
        self._live: dict[str, ActiveCall] = {}  # started calls by provider call id
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def admission(self) -> Admission:
        """Whether new calls are taken."""
        return self._admission

    @property
    def active(self) -> tuple[ActiveCall, ...]:
        """The calls running now."""
        return tuple(self._calls.values())

    def open(self) -> None:
        """Start taking calls (once the server is listening and warmed up)."""
        if self._admission is Admission.STARTING:
            self._admission = Admission.OPEN

    def refusal(self) -> Refusal | None:
        """Why a new call would be refused now, or None if it would be admitted."""
        match self._admission:
            case Admission.STARTING:
                return Refusal(CLOSE_TRY_AGAIN_LATER, "the gateway is starting, try again")
            case Admission.DRAINING:
                return Refusal(CLOSE_GOING_AWAY, SHUTDOWN_REASON)
        if self._leases is not None and (unreachable := self._leases.refusal()) is not None:
            return unreachable
        if self._gate.active_calls() >= self._gate.capacity:
            return self._full()
        if self._load is not None:
            return self._load.refusal(len(self._live))
        return None

    def _full(self) -> Refusal:
        return Refusal(CLOSE_TRY_AGAIN_LATER, f"at capacity ({self._gate.capacity} calls)")

    def readiness(self) -> Readiness:
        """Ready means a new call would be admitted; calls are counted across the gate."""
        refusal = self.refusal()
        reason = "ready" if refusal is None else refusal.reason
        return Readiness(refusal is None, reason, self._gate.active_calls(), self._gate.capacity)

    async def check(self) -> Readiness:
        """:meth:`readiness`, after checking the call registry afresh (bounded, cached)."""
        if self._leases is not None:
            await self._leases.check()
        return self.readiness()

    def admit(
        self, call_id: str, dialect: str, transport: Transport, client: str = ""
    ) -> ActiveCall | Refusal:
        """Register a new connection, or say why not (checked and registered in one step)."""
        refusal = self.refusal()
        if refusal is not None:
            return refusal
        if len(self._calls) - len(self._live) >= self._waiting:
            return Refusal(CLOSE_TRY_AGAIN_LATER, f"{self._waiting} connections await start")
        if call_id in self._calls:
            raise ValueError(f"call id {call_id!r} is already active")
        counter = self._waiting_by_client
        if client and counter is not None and not counter.acquire(client):
            reason = f"{self._waiting_per_client} connections from this address await start"
            return Refusal(CLOSE_TRY_AGAIN_LATER, reason)
        call = ActiveCall(call_id, dialect, transport, client=client)
        self._calls[call_id] = call
        self._idle.clear()
        return call

    def _stop_waiting(self, call: ActiveCall) -> None:
        """``call`` no longer awaits its `start` (it started, or it ended without one)."""
        if call.client and self._waiting_by_client is not None:
            self._waiting_by_client.release(call.client)

    def start(self, call: ActiveCall, provider_call_id: str) -> Refusal | None:
        """Give ``call`` a place at its `start`, unless full or that provider call is live."""
        if provider_call_id in self._live:
            # Refused without touching the live stream (issue 15 #1).
            return _ALREADY_LIVE
        refusal = self.refusal()
        if refusal is not None:
            return refusal
        # Another worker may have taken the last place, or hold a stream of this call: that
        # one goes on (the store would otherwise hand the call to this newer stream).
        match self._gate.try_admit(provider_call_id):
            case Seat.FULL:
                return self._full()
            case Seat.LIVE:
                return _ALREADY_LIVE
        call.provider_call_id = provider_call_id
        self._live[provider_call_id] = call
        self._stop_waiting(call)
        return None

    def release(self, call: ActiveCall) -> None:
        """Forget a call whose handler has finished (and free its place if it had one)."""
        if self._calls.pop(call.call_id, None) is not None and call.provider_call_id is None:
            self._stop_waiting(call)  # it never started: its waiting place is free
        if call.provider_call_id is not None and self._live.get(call.provider_call_id) is call:
            del self._live[call.provider_call_id]
            self._gate.release(call.provider_call_id)
        if not self._calls:
            self._idle.set()

    async def drain(self, deadline_s: float, *, hurry: asyncio.Event | None = None) -> DrainResult:
        """Refuse new calls, let running ones finish until the deadline, then close the rest.

        Setting ``hurry`` (a second signal) ends the wait for running calls early.
        """
        self._admission = Admission.DRAINING
        running = len(self._calls)
        if await self._wait_idle(deadline_s, hurry):
            return DrainResult(finished=running, closed=0)
        remaining = self.active
        log.info("drain: closing %d call(s) still running", len(remaining))
        await asyncio.gather(
            *(_close(call, CLOSE_GOING_AWAY, SHUTDOWN_REASON) for call in remaining)
        )
        if not await self._wait_idle(CANCEL_GRACE_S):
            stuck = ", ".join(call.call_id for call in self.active)
            log.error("calls still running %.0f s after cancellation: %s", CANCEL_GRACE_S, stuck)
        return DrainResult(finished=running - len(remaining), closed=len(remaining))

    async def abort(self, code: int, reason: str) -> None:
        """Refuse new calls and close every running one now (the worker itself is failing)."""
        self._admission = Admission.DRAINING
        await asyncio.gather(*(_close(call, code, reason) for call in self.active))

    async def _wait_idle(self, timeout_s: float, hurry: asyncio.Event | None = None) -> bool:
        """Wait until no call is active (True), or the timeout or ``hurry`` came first."""
        if self._idle.is_set():
            return True
        waits = [asyncio.ensure_future(self._idle.wait())]
        if hurry is not None:
            waits.append(asyncio.ensure_future(hurry.wait()))
        try:
            await asyncio.wait(waits, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        return self._idle.is_set()


async def _close(call: ActiveCall, code: int, reason: str) -> None:
    """Tell the peer why, then cancel the runner (its ``finally`` blocks still run)."""
    call.decide(code, reason)
    await call.transport.close(code, reason)
    if call.task is not None:
        call.task.cancel()


async def run_call(call: ActiveCall, runner: CallRunner, codec: Codec, gate: CallGate) -> None:
    """Run one call to its end in a task it owns, then close its socket with the outcome."""
    try:
        async with asyncio.TaskGroup() as group:
            task = _guarded(call, runner, codec, gate)
            call.task = group.create_task(task, name=call.call_id)
    finally:
        await call.transport.close(call.close_code, call.close_reason)


async def _guarded(call: ActiveCall, runner: CallRunner, codec: Codec, gate: CallGate) -> None:
    """Turn whatever escapes the runner into this call's close code; never into another's."""
    try:
        await runner(call.transport, codec, gate)
    except Exception as error:
        protocol_error = _only(error, RemoteProtocolError)
        store_error = _only(error, StoreError)
        if protocol_error is not None:
            log.warning("call %s: protocol error: %s", call.call_id, protocol_error)
            call.decide(close_code_for(protocol_error), str(protocol_error))
        elif store_error is not None:
            # A write the store did not take after its retries (or a stale claim): the call
            # cannot go on without losing it, so it ends, saying why (docs/redis.md).
            log.error("call %s ended: %s", call.call_id, store_error)
            call.decide(CLOSE_INTERNAL_ERROR, f"store failed: {store_error}")
        else:
            log.exception("call %s crashed", call.call_id)
            call.decide(CLOSE_INTERNAL_ERROR, f"internal error in call {call.call_id}")
    else:
        # The session may have closed the socket itself (a protocol error: 1002/1008; the
        # agent's hang-up): the log, the metrics and the call log say what the peer got.
        code, reason = call.transport.sent_close or _ended_by_peer(call.transport)
        call.decide(code, reason)


def _ended_by_peer(transport: Transport) -> tuple[int, str]:
    """How a call the peer ended is reported: 1000, or 1006 when its connection dropped
    without a close frame (a reset, a killed caller), so the metrics tell those apart."""
    if transport.peer_close == CONNECTION_LOST:
        return CLOSE_ABNORMAL, CONNECTION_LOST
    return CLOSE_NORMAL, "call ended"


def _only(error: Exception, kind: type[E]) -> E | None:
    """``error`` if it is a ``kind``, also when a session's task group wrapped it (alone, or
    with others of its kind) in an ExceptionGroup; else None."""
    if isinstance(error, kind):
        return error
    if isinstance(error, ExceptionGroup):
        matched, rest = error.split(kind)
        if matched is not None and rest is None:
            return _first_leaf(matched, kind)
    return None


def _first_leaf(group: ExceptionGroup[E], kind: type[E]) -> E:
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    assert isinstance(first, kind)  # split() kept only this kind and groups of it
    return first
