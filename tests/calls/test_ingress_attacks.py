"""Issue 15: each attack on a call's socket closes that call alone, with a code and a reason.

Every test runs the attack over a real socket on loopback beside a healthy Twilio call at
twice real time, and checks the attacked close and that the healthy call completes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Awaitable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.calls.call_kit import (
    FAST_REPLAY_LIMITS,
    CallWorld,
    cue,
    gateway_for,
    recording,
    script_of,
    settled,
)
from voicegate.audio.g711 import ulaw_encode
from voicegate.callers.driver import drive
from voicegate.callers.twilio import TwilioCaller
from voicegate.gateway.auth import STREAM_TOKEN_PARAMETER, issue_stream_token
from voicegate.gateway.limits import Limits
from voicegate.gateway.options import GatewayOptions, TwilioOptions

BALANCE = "synth/festival/balance_8k.wav"
HEALTHY_SID = "CA00000000000000000000000000000042"
ATTACK_SID = "CA00000000000000000000000000000666"
ATTACK_STREAM = "MZ00000000000000000000000000000666"
SILENCE = base64.b64encode(b"\xff" * 160).decode("ascii")  # 20 ms of μ-law silence
Close = tuple[int | None, str | None]


def start_message(call_sid: str = ATTACK_SID, parameters: dict[str, str] | None = None) -> str:
    """A Twilio ``start`` (providers.md §b.1) for the attacking stream."""
    start = {
        "streamSid": ATTACK_STREAM,
        "callSid": call_sid,
        "tracks": ["inbound"],
        "customParameters": parameters or {},
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
    }
    return json.dumps({"event": "start", "streamSid": ATTACK_STREAM, "start": start})


def media_message(count: int) -> str:
    """One 20 ms media message."""
    media = {"track": "inbound", "chunk": str(count), "timestamp": str(20 * count)}
    return json.dumps(
        {"event": "media", "streamSid": ATTACK_STREAM, "media": {**media, "payload": SILENCE}}
    )


async def closed(socket: ClientConnection, limit_s: float = 20.0) -> Close:
    """Read until the gateway closes the socket (bounded); its code and reason."""
    try:
        async with asyncio.timeout(limit_s):
            while True:
                await socket.recv()
    except ConnectionClosed:
        pass
    return socket.close_code, socket.close_reason


async def beside_a_healthy_call(world: CallWorld, attack: Awaitable[Any]) -> Any:
    """Run ``attack`` while a healthy call runs; the healthy call must complete normally."""
    # The tail leaves the turn's 1.5 s tool (3 s of media at speed 2) time to finish.
    healthy = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=6000))
    healthy_close, attacked = await asyncio.gather(
        drive(world.url, healthy, speed=2.0, max_ms=20_000), attack
    )
    assert healthy_close == 1000
    await settled(world)
    timeline = world.runner.timeline(HEALTHY_SID)
    assert timeline is not None
    assert timeline.named("turn_ended")[0]["reason"] == "completed"
    assert not timeline.named("protocol_error")
    return attacked


async def live(world: CallWorld, call_sid: str) -> None:
    """Wait (boundedly) until a call with ``call_sid`` holds a slot."""
    for _ in range(1000):
        if any(call.provider_call_id == call_sid for call in world.gateway.calls.active):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{call_sid} never started")


async def test_a_second_stream_with_a_live_callsid_is_refused_and_the_first_goes_on(
    tmp_path: Path,
) -> None:
    async def duplicate() -> Close:
        await live(world, HEALTHY_SID)
        async with connect(world.url) as socket:
            await socket.send(start_message(HEALTHY_SID))
            return await closed(socket)

    async with gateway_for(tmp_path, ["check my balance"]) as world:
        code, reason = await beside_a_healthy_call(world, duplicate())
    assert (code, reason) == (1008, "a stream for this call id is already live")


async def test_lone_surrogates_in_callsid_or_a_parameter_name_close_with_1002(
    tmp_path: Path,
) -> None:
    async def send(start: str) -> Close:
        async with connect(world.url) as socket:
            await socket.send(start)
            return await closed(socket)

    # Escaped in JSON, as a peer sends them: "\ud800" is valid JSON but not Unicode text.
    in_sid = start_message().replace(ATTACK_SID, "CA\\ud800")
    in_key = start_message(parameters={"KEY": "v"}).replace("KEY", "\\udfff")
    async with gateway_for(tmp_path, ["check my balance"]) as world:
        attacks = asyncio.gather(send(in_sid), send(in_key))
        results = await beside_a_healthy_call(world, attacks)
    for code, reason in results:
        assert code == 1002
        assert reason is not None
        assert "lone UTF-16 surrogate" in reason


async def test_a_socket_that_never_starts_is_closed_and_holds_no_slot(tmp_path: Path) -> None:
    async def silent() -> Close:
        async with connect(world.url) as socket:
            await socket.send(json.dumps({"event": "connected", "protocol": "Call"}))
            return await closed(socket)

    limits = Limits(media_max_speed=4.0, start_timeout_s=1.0)
    async with gateway_for(tmp_path, ["check my balance"], limits=limits) as world:
        code, reason = await beside_a_healthy_call(world, silent())
    assert code == 1008
    assert reason == "no 'start' within 1 s (limits.start_timeout_s)"


async def test_a_started_call_that_sends_no_audio_is_closed(tmp_path: Path) -> None:
    async def mute() -> Close:
        async with connect(world.url) as socket:
            await socket.send(start_message())
            return await closed(socket)

    # The healthy call sends audio all along, so the same limit never ends it.
    limits = Limits(media_max_speed=4.0, idle_timeout_s=1.0)
    async with gateway_for(tmp_path, ["check my balance"], limits=limits) as world:
        code, reason = await beside_a_healthy_call(world, mute())
    assert code == 1008
    assert reason == "no audio for 1 s (limits.idle_timeout_s)"


async def test_a_call_longer_than_the_maximum_is_closed(tmp_path: Path) -> None:
    async def endless() -> Close:
        async with connect(world.url) as socket:
            await socket.send(start_message())
            for count in range(1, 1500):  # at most 30 s of audio, in real time
                try:
                    await socket.send(media_message(count))
                except ConnectionClosed:
                    break
                await asyncio.sleep(0.02)
            return await closed(socket)

    limits = Limits(media_max_speed=4.0, max_call_s=12.0)  # the healthy call lasts ~5 s
    async with gateway_for(tmp_path, ["check my balance"], limits=limits) as world:
        code, reason = await beside_a_healthy_call(world, endless())
    assert code == 1008
    assert reason == "call longer than 12 s (limits.max_call_s)"


async def test_an_over_fast_sender_is_cut_while_a_healthy_call_completes(tmp_path: Path) -> None:
    """Issue 12 item 4: a flood is dropped, then closed; the other call's audio is untouched."""

    async def flood() -> Close:
        async with connect(world.url) as socket:
            await socket.send(start_message())
            for count in range(1, 3001):  # at most 60 s of audio, as fast as possible
                try:
                    await socket.send(media_message(count))
                except ConnectionClosed:
                    break
            return await closed(socket)

    # The healthy caller runs at speed 2, within 4x; the attacker sends as fast as it can.
    limits = Limits(media_max_speed=4.0, media_burst_ms=2000, media_flood_ms=5000)
    async with gateway_for(tmp_path, ["check my balance"], limits=limits) as world:
        code, reason = await beside_a_healthy_call(world, flood())
    assert code == 1008
    assert reason is not None
    assert reason.startswith("audio sent faster than 4x real time")
    flooded = world.runner.timeline(ATTACK_SID)
    assert flooded is not None
    dropped = flooded.named("media_dropped")
    assert len(dropped) == 1  # one counter, not a record per frame
    assert dropped[0]["dropped_ms"] > 5000


async def test_a_short_burst_ahead_of_real_time_is_dropped_and_counted(tmp_path: Path) -> None:
    limits = replace_limits(media_burst_ms=1000)
    async with gateway_for(tmp_path, [], limits=limits) as world, connect(world.url) as socket:
        await socket.send(start_message())
        for count in range(1, 151):  # 3 s of audio at once: about 2 s too early
            await socket.send(media_message(count))
        await socket.send(json.dumps({"event": "stop", "streamSid": ATTACK_STREAM}))
        assert await closed(socket) == (1000, "call ended")
    timeline = world.runner.timeline(ATTACK_SID)
    assert timeline is not None
    (dropped,) = timeline.named("media_dropped")
    assert 0 < dropped["messages"] < 150


def replace_limits(**changes: Any) -> Limits:
    """The call tests' limits with some changed."""
    return replace(FAST_REPLAY_LIMITS, **changes)


async def test_peer_chosen_marks_cannot_grow_the_timeline_without_bound(tmp_path: Path) -> None:
    async def marks() -> Close:
        async with connect(world.url) as socket:
            await socket.send(start_message())
            name = "m" * 10_000
            for _ in range(400):
                mark = {"event": "mark", "streamSid": ATTACK_STREAM, "mark": {"name": name}}
                await socket.send(json.dumps(mark))
            await socket.send(json.dumps({"event": "stop", "streamSid": ATTACK_STREAM}))
            return await closed(socket)

    limits = replace_limits(
        timeline_max_records=200, timeline_max_chars=100, control_messages_burst=1000
    )
    async with gateway_for(tmp_path, ["check my balance"], limits=limits) as world:
        assert await beside_a_healthy_call(world, marks()) == (1000, "call ended")
    timeline = world.runner.timeline(ATTACK_SID)
    assert timeline is not None
    records = timeline.records
    assert len(records) == 200
    assert records[-1]["event"] == "timeline_truncated"
    assert records[-1]["dropped"] > 200
    assert all(len(r.get("name", "")) <= 103 for r in records)


async def test_a_known_callsid_without_a_valid_token_opens_no_memory(tmp_path: Path) -> None:
    """Issue 15 #8: the stream token is checked before the engine (and memory) is opened."""
    secret = "stream secret"
    options = GatewayOptions(port=0, twilio=TwilioOptions(stream_secret=secret))
    token = issue_stream_token(secret, HEALTHY_SID, time.time(), 300)
    expired = issue_stream_token(secret, HEALTHY_SID, time.time() - 600, 300)
    healthy = TwilioCaller(
        script_of(cue(BALANCE, at_ms=300), tail_ms=6000),
        parameters={STREAM_TOKEN_PARAMETER: token},
    )

    async def impostor(parameters: dict[str, str]) -> Close:
        await live(world, HEALTHY_SID)
        async with connect(world.url) as socket:
            await socket.send(start_message(HEALTHY_SID, parameters))
            return await closed(socket)

    async with gateway_for(tmp_path, ["check my balance"], options=options) as world:
        healthy_close, *refused = await asyncio.gather(
            drive(world.url, healthy, speed=2.0, max_ms=20_000),
            impostor({}),
            impostor({STREAM_TOKEN_PARAMETER: expired}),
            impostor({STREAM_TOKEN_PARAMETER: "1" + token}),
        )
    assert healthy_close == 1000
    assert refused == [
        (1008, "no stream token: connect through the gateway's voice webhook"),
        (1008, "expired stream token"),
        (1008, "invalid stream token for this call"),
    ]
    timeline = world.runner.timeline(HEALTHY_SID)
    assert timeline is not None
    assert timeline.named("turn_ended")[0]["reason"] == "completed"
    # The refused streams never reached the engine: no call_started, so no memory was opened.
    refused_ids = [call_id for call_id in world.runner.call_ids if call_id != HEALTHY_SID]
    assert len(refused_ids) == 3
    for call_id in refused_ids:
        refused_timeline = world.runner.timeline(call_id)
        assert refused_timeline is not None
        assert refused_timeline.named("call_refused")
        assert not refused_timeline.named("call_started")


async def test_a_flood_of_messages_without_audio_is_closed_while_a_healthy_call_completes(
    tmp_path: Path,
) -> None:
    """DTMF, marks and unknown events have no media clock: a token bucket closes a flood."""

    async def flood(event: dict[str, Any]) -> Close:
        async with connect(world.url) as socket:
            await socket.send(start_message())
            for _ in range(5000):  # as fast as possible: no provider sends like this
                try:
                    await socket.send(json.dumps({**event, "streamSid": ATTACK_STREAM}))
                except ConnectionClosed:
                    break
            return await closed(socket)

    dtmf = {"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": "5"}}
    unknown = {"event": "no-such-event"}
    async with gateway_for(tmp_path, ["check my balance"]) as world:
        for event in (dtmf, unknown):
            code, reason = await beside_a_healthy_call(world, flood(event))
            assert code == 1008, event
            assert reason is not None
            assert reason.startswith("more than 200 messages without audio at once"), reason


async def test_one_address_cannot_hold_every_place_waiting_for_start(tmp_path: Path) -> None:
    """Idle sockets from one address fill its own share of waiting places, not everyone's."""
    other_sid = "CA00000000000000000000000000000777"
    limits = replace_limits(waiting_for_start_per_ip=2)
    async with (
        gateway_for(tmp_path, [], limits=limits) as world,
        connect(world.url) as first,
        connect(world.url) as second,
    ):
        async with connect(world.url) as third:  # both places of 127.0.0.1 are taken
            assert await closed(third) == (1013, "2 connections from this address await start")
        await first.send(start_message())  # a started call no longer waits: a place is free
        await live(world, ATTACK_SID)
        async with connect(world.url) as fourth:
            await fourth.send(start_message(call_sid=other_sid))
            await live(world, other_sid)
        assert second.close_code is None  # still waiting, never disturbed


async def test_the_far_end_track_of_a_both_tracks_stream_is_not_caller_speech(
    tmp_path: Path,
) -> None:
    """Twilio <Start><Stream track="both_tracks">: only the inbound track is the caller."""
    speech = ulaw_encode(recording(BALANCE)).tobytes()

    async def call_with_speech_on(track: str, call_sid: str) -> list[str]:
        async with connect(world.url) as socket:
            await socket.send(start_message(call_sid))
            frames = [speech[i : i + 160] for i in range(0, len(speech) - 159, 160)]
            for count, frame in enumerate(frames + [b"\xff" * 160] * 50, start=1):
                kind = track if count <= len(frames) else "inbound"
                media = {"track": kind, "chunk": str(count), "payload": b64(frame)}
                await socket.send(
                    json.dumps({"event": "media", "streamSid": ATTACK_STREAM, "media": media})
                )
                if kind == "inbound" or count % 10 == 0:
                    await asyncio.sleep(0.005)  # within the 4x pace the test limits allow
            await socket.send(json.dumps({"event": "stop", "streamSid": ATTACK_STREAM}))
            await closed(socket)
        await settled(world)
        timeline = world.runner.timeline(call_sid)
        assert timeline is not None
        return [record["event"] for record in timeline.records]

    async with gateway_for(tmp_path, ["check my balance"]) as world:
        far_end = await call_with_speech_on("outbound", "CA00000000000000000000000000000101")
        caller = await call_with_speech_on("inbound", "CA00000000000000000000000000000102")
    assert "speech_started" in caller  # the same audio on the caller's track is speech
    assert "speech_started" not in far_end


def b64(frame: bytes) -> str:
    """A media payload."""
    return base64.b64encode(frame).decode("ascii")


async def test_the_gateway_records_the_close_the_peer_got(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A call the session closes itself (here a malformed message: 1002) is logged, counted
    and kept in its call log with that close, not as a normal end."""
    caplog.set_level(logging.INFO, logger="voicegate.gateway.server")
    async with gateway_for(tmp_path, []) as world, connect(world.url) as socket:
        await socket.send(start_message())
        await socket.send('{"event": "media", "media": 7}')
        code, reason = await closed(socket)
        await settled(world)
    assert code == 1002
    ended = [r.getMessage() for r in caplog.records if " ended: " in r.getMessage()]
    assert ended == [f"call {ended[0].split()[1]} ended: 1002 {reason}"]


async def test_a_peer_that_never_plays_our_audio_is_closed_while_a_healthy_call_completes(
    tmp_path: Path,
) -> None:
    """A peer that streams audio but echoes no mark (it reads or plays none of the bot's
    audio: providers.md §b.1 says a mark comes back once played or cleared) is closed when
    its oldest mark is ``playback_ack_timeout_s`` overdue, not kept up to ``max_call_s``."""
    speech = ulaw_encode(recording(BALANCE)).tobytes()
    frames = [speech[i : i + 160] for i in range(0, len(speech) - 159, 160)]

    async def stream(socket: ClientConnection) -> None:
        for count in range(1, 1500):  # at most 30 s of audio, at twice real time
            frame = frames[count - 1] if count <= len(frames) else b"\xff" * 160
            media = {"track": "inbound", "chunk": str(count), "payload": b64(frame)}
            message = {"event": "media", "streamSid": ATTACK_STREAM, "media": media}
            try:
                await socket.send(json.dumps(message))
            except ConnectionClosed:
                return
            await asyncio.sleep(0.01)

    async def deaf() -> Close:
        async with connect(world.url) as socket:
            await socket.send(start_message())
            # Reads (and drops) what it gets, so it sees the close frame; echoes nothing.
            _, close = await asyncio.gather(stream(socket), closed(socket))
            return close

    limits = replace_limits(playback_ack_timeout_s=1.0)
    async with gateway_for(tmp_path, ["check my balance"], limits=limits) as world:
        code, reason = await beside_a_healthy_call(world, deaf())
    assert code == 1008
    assert reason == (
        "no playback acknowledgement 1 s after the audio was due to play"
        " (limits.playback_ack_timeout_s)"
    )
    timeline = world.runner.timeline(ATTACK_SID)
    assert timeline is not None
    (error,) = timeline.named("protocol_error")
    spoke_at = timeline.named("bot_speaking")[0]["t_ms"]
    assert spoke_at < error["t_ms"] < spoke_at + 4000  # the bot's first words, then 1 s
