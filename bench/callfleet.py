"""Emulated Twilio callers for bench/calls.py, run in caller processes apart from the gateway.

One caller process runs many calls on one asyncio loop, as cheaply as it can so that its CPU
does not steal the gateway's: the WebSocket client is the sans-I/O ``websockets`` protocol on
a plain asyncio ``Protocol`` (no coroutine per message), one timer per process drives every
call's 20 ms ticks (:class:`Ticker`), and the media messages are formatted from payloads
base64-encoded once per process (the script has one cue at a fixed time, so every call sends
the same audio). Marks, clear and playback are :class:`voicegate.callers.twilio.TwilioCaller`'s
own logic.

Per call it records: whether it connected, the close code, whether the gateway closed first,
whether bot media arrived, the answer latency (send time of the caller's last speech frame ->
arrival of the first bot media after it) and the longest playout gap. A playout gap is judged
against the audio received, as a phone's jitter buffer would play it: each bot media message
extends a play-out deadline by its own duration; a message arriving more than 100 ms after that
deadline, within one segment (no mark or clear since the previous media), is a gap heard by the
caller. Per process it records its ticks, the ticks sent more than 20 ms behind schedule and
its CPU time.
"""

from __future__ import annotations

import asyncio
import base64
import math
import time
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import cast

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

from voicegate.audio.g711 import samples_to_ulaw_bytes
from voicegate.audio.wav import read_wav
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import FRAME_MS, TwilioCaller

ROOT = Path(__file__).resolve().parent.parent
SPEECH = ROOT / "fixtures/audio/synth/festival/balance_8k.wav"
SPEECH_AT_MS = 400
GAP_MS = 100  # a playout gap longer than this makes the call choppy
LATE_S = 0.020  # a tick sent more than one frame behind schedule is late
CONNECT_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 10.0
BYTES_PER_MS = 8  # μ-law at 8 kHz
_MEDIA = (
    '{"event": "media", "sequenceNumber": "%d", "streamSid": "%s", "media": {"track": '
    '"inbound", "chunk": "%d", "timestamp": "%d", "payload": "%s"}}'
)


def speech_payloads() -> tuple[list[str], CallerScript]:
    """Base64 μ-law of every frame up to the end of the caller's one cue, and the script."""
    audio = read_wav(SPEECH).samples
    script = CallerScript([Cue(audio, at_ms=SPEECH_AT_MS)], 8000, tail_ms=0)
    end_ms = SPEECH_AT_MS + len(audio) * 1000 // 8000
    frames = range(0, end_ms + FRAME_MS - 1, FRAME_MS)
    payloads = [samples_to_ulaw_bytes(script.frame(ms, FRAME_MS, [])) for ms in frames]
    return [base64.b64encode(p).decode("ascii") for p in payloads], script


_SILENCE = base64.b64encode(bytes([0xFF]) * (FRAME_MS * BYTES_PER_MS)).decode("ascii")


class CheapTwilioCaller(TwilioCaller):
    """A TwilioCaller whose media messages are formatted from pre-encoded payloads.

    The message is the same text :meth:`TwilioCaller.tick` builds (bench/calls.py checks this
    with :func:`message_matches_reference` before it starts); only the per-frame
    μ-law/base64/JSON work is gone.
    """

    def __init__(self, script: CallerScript, payloads: list[str], call: str) -> None:
        super().__init__(script, call_sid=f"CA{call}", stream_sid=f"MZ{call}")
        self._payloads = payloads

    def tick(self) -> list[str | bytes]:
        """Advance 20 ms: play bot audio, echo marks now played, send caller audio."""
        echoes: list[str | bytes] = list(self._play_frame())
        del self.bot_track[:]  # the bench does not keep the bot's audio
        frame = self.now_ms // FRAME_MS
        payload = self._payloads[frame] if frame < len(self._payloads) else _SILENCE
        self._sequence += 1
        echoes.append(_MEDIA % (self._sequence, self._stream_sid, frame + 1, self.now_ms, payload))
        self.now_ms += FRAME_MS
        return echoes

    @property
    def bot_bytes_received(self) -> int:
        """Bot audio received so far, in bytes."""
        return self._queued


@dataclass(slots=True)
class CallResult:
    """What one caller saw."""

    index: int
    connected: bool = False
    error: str | None = None
    close_code: int | None = None
    closed_by_gateway: bool = False  # the gateway closed before the caller hung up
    answered: bool = False
    answer_ms: float | None = None
    max_gap_ms: float = 0.0
    media_ms: int = 0  # caller audio sent
    bot_ms: float = 0.0  # bot audio received
    segments: int = 0  # bot media runs ended by a mark or clear


@dataclass(slots=True)
class TickStats:
    """A caller process's own punctuality."""

    ticks: int = 0
    late: int = 0
    worst_behind_ms: float = 0.0


@dataclass(slots=True)
class Plan:
    """The calls of one caller process."""

    url: str
    run: str  # 8 hex digits, unique per level and run: CallSid = CA + run + index
    calls: list[tuple[int, float]]  # (call index, start offset in seconds)
    call_ms: int
    results: list[CallResult] = field(default_factory=list)


class Ticker:
    """One timer per process for every call's 20 ms ticks: calls are spread over 2 ms slots.

    Waking once per slot instead of once per call and frame keeps the callers' loop overhead
    flat as calls are added; a call's frames stay on its own 20 ms schedule (its ``next_t``),
    so lateness is still measured per frame.
    """

    SLOT_S = 0.002
    SLOTS = 10  # 10 x 2 ms = one 20 ms frame

    def __init__(self, start: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.start = start
        self.slots: list[list[CallConnection]] = [[] for _ in range(self.SLOTS)]
        self.next_slot = 0  # slots run so far
        self.removed = False  # some call stopped ticking: prune the slots
        self.timer: asyncio.TimerHandle | None = None

    def add(self, call: CallConnection, now: float) -> None:
        """Tick ``call`` from the first slot boundary at or after ``now``."""
        slot = max(self.next_slot, math.ceil((now - self.start) / self.SLOT_S))
        if self.timer is None:
            self.next_slot = slot
        call.next_t = self.start + slot * self.SLOT_S
        self.slots[slot % self.SLOTS].append(call)
        if self.timer is None:
            self.timer = self.loop.call_at(self.start + self.next_slot * self.SLOT_S, self.run)

    def run(self) -> None:
        """Run every slot that is due, then sleep until the next one."""
        now = self.loop.time()
        if self.removed:
            self.removed = False
            self.slots = [[c for c in slot if c.ticking] for slot in self.slots]
        due = math.floor((now - self.start) / self.SLOT_S + 1e-9)
        for number in range(self.next_slot, due + 1):
            for call in self.slots[number % self.SLOTS]:
                call.tick(now)
        self.next_slot = due + 1
        if any(self.slots):
            self.timer = self.loop.call_at(self.start + self.next_slot * self.SLOT_S, self.run)
        else:
            self.timer = None


class CallConnection(asyncio.Protocol):
    """One call: a WebSocket client (sans-I/O) driving a CheapTwilioCaller on loop timers."""

    def __init__(
        self, caller: CheapTwilioCaller, result: CallResult, call_ms: int, url: str, fleet: Fleet
    ) -> None:
        self.caller, self.result, self.call_ms = caller, result, call_ms
        self.ws = ClientProtocol(parse_uri(url))
        self.fleet = fleet
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self.loop.create_future()
        self.transport: asyncio.Transport | None = None
        self.ticking = False
        self.next_t = 0.0  # when the next frame is due (loop time)
        self.hung_up = False
        self.closing = False
        self.speech_end_t: float | None = None
        self.play_end = 0.0  # when the bot audio received so far will have played out
        self.in_segment = False

    # --- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.ws.send_request(self.ws.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        now = self.loop.time()
        self.ws.receive_data(data)
        for event in self.ws.events_received():
            if isinstance(event, Response):
                self._opened(now)
            elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                self._message(str(event.data, "utf-8"), now)
            elif isinstance(event, Frame) and event.opcode is Opcode.CLOSE and not self.hung_up:
                self.result.closed_by_gateway = True
                self._stop_ticking()
        self._flush()

    def eof_received(self) -> bool | None:
        self.ws.receive_eof()
        self._flush()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_ticking()
        self.result.close_code = self.ws.close_code
        self.result.media_ms = self.caller.now_ms
        if not self.done.done():
            self.done.set_result(None)

    # --- the call ----------------------------------------------------------------------------

    def _opened(self, now: float) -> None:
        if self.ws.handshake_exc is not None:
            self.result.error = f"handshake failed: {self.ws.handshake_exc}"
            return
        self.result.connected = True
        if self.ws.state is not State.OPEN:
            # Upgraded, and the gateway's close frame came in the same read (a refusal right
            # after the 101, e.g. 1013): connection_lost records its code, as for any close.
            return
        for message in self.caller.opening():
            self.ws.send_text(message.encode())
        self.ticking = True
        self.fleet.ticker.add(self, now)

    def tick(self, now: float) -> None:
        """Send every frame due by ``now`` (the process's ticker calls this)."""
        stats = self.fleet.stats
        while self.next_t <= now + 0.0005 and self.ticking:
            behind = now - self.next_t
            stats.ticks += 1
            if behind > LATE_S:
                stats.late += 1
                stats.worst_behind_ms = max(stats.worst_behind_ms, behind * 1000)
            for message in self.caller.tick():
                self.ws.send_text(message.encode())  # type: ignore[union-attr]
            if self.caller.now_ms == len(self.fleet.payloads) * FRAME_MS:
                self.speech_end_t = now
            self.next_t += FRAME_MS / 1000
            if self.caller.now_ms >= self.call_ms:
                self.hang_up()
        self._flush()

    def _message(self, text: str, now: float) -> None:
        before, clears = self.caller.bot_bytes_received, len(self.caller.clears)
        try:
            echoes = self.caller.receive(text)
        except Exception as error:  # a protocol error: record it, end the call
            self.result.error = f"{type(error).__name__}: {error}"
            self.hang_up()
            return
        for echo in echoes:
            self.ws.send_text(echo.encode())
        received = self.caller.bot_bytes_received - before
        if received:
            self._bot_media(now, received / BYTES_PER_MS / 1000)
        else:  # a mark or a clear: the segment ended
            self.result.segments += self.in_segment
            self.in_segment = False
            if len(self.caller.clears) != clears:
                self.play_end = now

    def _bot_media(self, now: float, duration_s: float) -> None:
        if self.in_segment and now > self.play_end:
            self.result.max_gap_ms = max(self.result.max_gap_ms, (now - self.play_end) * 1000)
        if not self.result.answered and self.speech_end_t is not None:
            self.result.answered = True
            self.result.answer_ms = (now - self.speech_end_t) * 1000
        self.in_segment = True
        self.result.bot_ms += duration_s * 1000
        self.play_end = max(self.play_end, now) + duration_s

    def hang_up(self) -> None:
        """Send ``stop`` and close the WebSocket with 1000, as Twilio does at hang-up."""
        if self.hung_up or self.ws.state is not State.OPEN:
            return
        self.hung_up = True
        self._stop_ticking()
        self.ws.send_text(self.caller.closing().encode())
        self.ws.send_close(1000)
        self._flush()

    def abort(self, reason: str) -> None:
        """Give up on the call (timeout)."""
        if self.result.error is None:
            self.result.error = reason
        if self.transport is not None:
            self.transport.abort()

    def _stop_ticking(self) -> None:
        if self.ticking:
            self.ticking = False
            self.fleet.ticker.removed = True

    def _flush(self) -> None:
        assert self.transport is not None
        for data in self.ws.data_to_send():
            if data:
                self.transport.write(data)
            elif self.transport.can_write_eof():
                self.transport.write_eof()
        if self.ws.close_expected() and not self.closing:
            self.closing = True  # the gateway should close the TCP connection; wait so long
            self.loop.call_later(CLOSE_TIMEOUT_S, self.transport.close)


@dataclass(slots=True)
class Fleet:
    """What a process's calls share: the encoded speech, the tick statistics, the ticker."""

    payloads: list[str]
    script: CallerScript
    stats: TickStats
    ticker: Ticker


async def _one_call(plan: Plan, index: int, start_at: float, fleet: Fleet) -> None:
    loop = asyncio.get_running_loop()
    result = CallResult(index)
    plan.results.append(result)
    await asyncio.sleep(max(0.0, start_at - loop.time()))
    caller = CheapTwilioCaller(fleet.script, fleet.payloads, f"{plan.run}{index:024x}")
    uri = parse_uri(plan.url)
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            _, connection = await loop.create_connection(
                lambda: CallConnection(caller, result, plan.call_ms, plan.url, fleet),
                uri.host,
                uri.port,
            )
    except (OSError, TimeoutError) as error:
        result.error = f"connect: {type(error).__name__} {error}".strip()
        return
    deadline = CONNECT_TIMEOUT_S + plan.call_ms / 1000 + 2 * CLOSE_TIMEOUT_S
    try:
        async with asyncio.timeout(deadline):
            await asyncio.shield(connection.done)
    except TimeoutError:
        connection.abort("call did not end in time" if result.connected else "no handshake")
        await connection.done


async def _run_plan(plan: Plan, t0_wall: float) -> TickStats:
    loop = asyncio.get_running_loop()
    t0 = loop.time() + (t0_wall - time.time())
    fleet = Fleet(*speech_payloads(), TickStats(), Ticker(t0))
    async with asyncio.TaskGroup() as tasks:
        for index, offset in plan.calls:
            tasks.create_task(_one_call(plan, index, t0 + offset, fleet))
    return fleet.stats


def caller_process(conn: Connection, plan: Plan) -> None:
    """A caller process: report ready, wait for the start time, run the calls, send results.

    Sends ``("ready",)``, receives the start time (``time.time()`` seconds), then sends
    ``("done", [CallResult as dict], TickStats as dict, cpu_s, wall_s)``.
    """
    speech_payloads()  # warm the imports and the file cache before the clock starts
    conn.send(("ready",))
    t0_wall = conn.recv()
    time.sleep(max(0.0, t0_wall - time.time()))
    cpu0, wall0 = time.process_time(), time.monotonic()
    stats = asyncio.run(_run_plan(plan, t0_wall))  # uvloop measured no cheaper here
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    conn.send(("done", [asdict(r) for r in plan.results], asdict(stats), cpu, wall))
    conn.close()


def message_matches_reference() -> bool:
    """The pre-encoded media message equals the one TwilioCaller.tick builds (a self-check)."""
    payloads, script = speech_payloads()
    cheap = CheapTwilioCaller(script, payloads, "0" * 32)
    reference = TwilioCaller(script, call_sid=f"CA{'0' * 32}", stream_sid=f"MZ{'0' * 32}")
    return all(cheap.tick() == reference.tick() for _ in range(len(payloads) + 5))
