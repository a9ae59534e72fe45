"""A slow, stalled or runaway chat-model endpoint, heard through real calls.

A real gateway on loopback with the engine on its dialogue plane (as ``voicegate serve`` runs
it), emulated Twilio callers, real VAD, and the OpenAI-compatible client talking to the local
Chat Completions server of tests/llm/chat_server.py. What matters is what the caller hears, how
the turn ends (the timeline's ``turn_ended`` and its reason), and that the model's connection
is dropped when the turn no longer wants it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from tests.calls.call_kit import CallWorld, cue, gateway_for, script_of, settled
from tests.llm.chat_server import ChatServer, Reply, call_start, chunk, sse, text_chunks
from voicegate.callers.twilio import TwilioCaller
from voicegate.engine.llm.openai_chat import OpenAIChatLLM
from voicegate.engine.llm.port import LLMFactory
from voicegate.engine.llm.selection import ChatModelSettings
from voicegate.engine.loop.model_step import MAX_ANSWER_CHARS
from voicegate.gateway.dialogue import ThreadedEngine
from voicegate.retry import NO_RETRY, RetryPolicy
from voicegate.speech.fakes import ToneTextToSpeech

BALANCE = "synth/festival/balance_8k.wav"
INTERRUPTION = "human/asterisk/please-try-again.wav"
CALL_SID = "CA00000000000000000000000000000042"
OTHER_SID = "CA000000000000000000000000000000c2"
ANSWER = "Your balance is 42 dollars."
#: A bound on each wait, so that a regression fails instead of hanging; never a measure.
DEADLINE_S = 30.0


def model_at(
    server: ChatServer, read_timeout_s: float = 30.0, retry: RetryPolicy = NO_RETRY
) -> LLMFactory:
    """The gateway's model: the OpenAI-compatible client on the local server."""
    settings = ChatModelSettings("m", server.base_url, "", read_timeout_s=read_timeout_s)
    return lambda call_id: OpenAIChatLLM(settings, retry=retry)


def answer() -> Reply:
    return Reply(sse([*text_chunks(ANSWER, 5), chunk({}, "stop")]))


def first_then_answers(first: Reply) -> ChatServer:
    """A server whose first request gets ``first`` and every later one the answer."""
    replies = [first]
    return ChatServer(lambda body: replies.pop() if replies else answer())


async def timeline(world: CallWorld, call_sid: str = CALL_SID) -> list[dict[str, Any]]:
    await settled(world)
    kept = world.runner.timeline(call_sid)
    assert kept is not None
    return list(kept.records)


async def dialogue_tasks(world: CallWorld) -> int:
    """Tasks still on the dialogue plane (model requests, turns, call lines)."""
    engine = world.runner.services.engine
    assert isinstance(engine, ThreadedEngine)

    async def count() -> int:
        return len(asyncio.all_tasks()) - 1  # not this one

    return await engine.plane.run(count())


def named(records: list[dict[str, Any]], event: str, **match: Any) -> list[dict[str, Any]]:
    return [
        r for r in records if r["event"] == event and all(r.get(k) == v for k, v in match.items())
    ]


async def test_talking_over_a_slow_first_token_drops_the_request_and_the_next_turn_answers(
    tmp_path: Path,
) -> None:
    server = first_then_answers(Reply(think_s=60.0))  # the model thinks for a minute
    async with (
        server,
        gateway_for(
            tmp_path, ["check my balance", "please try again"], llm=model_at(server)
        ) as world,
    ):
        caller = TwilioCaller(
            script_of(cue(BALANCE, at_ms=300), cue(INTERRUPTION, at_ms=3400), tail_ms=4000)
        )
        assert await world.call(caller, speed=2.0, max_ms=30_000) == 1000
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)
        records = await timeline(world)
    assert named(records, "turn_cancelled", turn_id="t1")
    assert named(records, "turn_ended", turn_id="t2", reason="completed")
    assert [r["text"] for r in named(records, "heard", turn_id="t2")] == [ANSWER]
    assert len(server.requests) == 2


async def test_a_stream_of_keep_alives_ends_in_an_apology_and_other_calls_go_on(
    tmp_path: Path,
) -> None:
    stalled = Reply(
        sse(text_chunks("Let me check. ", 5), done=False), endless=True, filler=b": ping\n\n"
    )
    server = first_then_answers(stalled)
    async with (
        server,
        gateway_for(
            tmp_path, ["check my balance"], llm=model_at(server, read_timeout_s=1.0)
        ) as world,
    ):
        stuck = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=10_000))
        stuck_call = asyncio.create_task(world.call(stuck, speed=2.0, max_ms=30_000))
        await asyncio.wait_for(server.requested.wait(), DEADLINE_S)  # the stuck call asked
        other = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=3000), call_sid=OTHER_SID)
        assert await world.call(other, speed=2.0, max_ms=30_000) == 1000
        assert await stuck_call == 1000
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)
        records, others = await timeline(world), await timeline(world, OTHER_SID)
        assert await dialogue_tasks(world) == 0
    (ended,) = named(records, "turn_ended", turn_id="t1")
    assert ended["reason"] == "error"
    assert "timed out" in ended["detail"]
    heard = named(records, "heard", turn_id="t1")[0]["text"]
    assert heard.startswith("Let me check. Sorry, I could not get that.")
    assert [r["text"] for r in named(others, "heard", turn_id="t1")] == [ANSWER]


async def test_a_runaway_answer_is_cut_and_the_models_connection_dropped(tmp_path: Path) -> None:
    sentence = "This is one more sentence of an answer that goes on and on. "
    text = sentence * (100_000 // len(sentence))  # 100 kB
    runaway = Reply(sse([*text_chunks(text, 200), chunk({}, "stop")]), piece_bytes=4000)
    runaway.pause = 0.01
    server = ChatServer.replying(runaway)
    tts = ToneTextToSpeech(16000, ms_per_char=1)
    async with (
        server,
        gateway_for(tmp_path, ["check my balance"], llm=model_at(server), tts=tts) as world,
    ):
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=3000))
        assert await world.call(caller, speed=2.0, max_ms=30_000) == 1000
        await asyncio.wait_for(server.disconnected.wait(), DEADLINE_S)
        records = await timeline(world)
    (ended,) = named(records, "turn_ended", turn_id="t1")
    assert ended["reason"] == "error"
    assert f"passed {MAX_ANSWER_CHARS} characters" in ended["detail"]
    said = [r["text"] for r in named(records, "say", turn_id="t1", source="model")]
    assert said
    assert len(" ".join(said)) <= MAX_ANSWER_CHARS
    assert server.completed == 0


async def test_a_model_that_keeps_answering_nothing_gets_the_caller_an_apology(
    tmp_path: Path,
) -> None:
    empty = Reply(sse([chunk({"role": "assistant", "content": ""}), chunk({}, "stop")]))
    server = ChatServer(lambda body: empty)
    async with server, gateway_for(tmp_path, ["check my balance"], llm=model_at(server)) as world:
        caller = TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=5000))
        assert await world.call(caller, speed=2.0, max_ms=30_000) == 1000
        records = await timeline(world)
    (ended,) = named(records, "turn_ended", turn_id="t1")
    assert ended["reason"] == "error"
    assert "answered nothing" in ended["detail"]
    heard = named(records, "heard", turn_id="t1")[0]["text"]
    assert heard == "Sorry, I could not get that. Could you say it again?"
    assert len(server.requests) == 2  # asked once more, then given up


#: A failing model answer, and what the turn's logged reason says about it.
FAILURES = {
    "HTTP 401": Reply(json.dumps({"error": {"message": "bad key"}}).encode(), 401),
    "HTTP 503": Reply(b"overloaded", 503, "text/plain", headers={"Retry-After": "86400"}),
    "chat/completions failed": Reply(sse(text_chunks("Your bal", 4), done=False), abort=True),
    "ended early": Reply(b"<html><h1>Welcome to nginx!</h1></html>\n", content_type="text/html"),
    "not valid JSON": Reply(
        sse([call_start(0, "c1", "check_balance", '{"account'), chunk({}, "tool_calls")])
    ),
    "HTTP 307": Reply(b"", 307, "text/plain", headers={"Location": "http://127.0.0.1:9/"}),
}


async def test_each_failing_answer_ends_its_own_turn_with_its_reason_and_an_apology(
    tmp_path: Path,
) -> None:
    # One endpoint per failure and one call on each, all at once on one gateway.
    async with AsyncExitStack() as stack:
        servers = [
            await stack.enter_async_context(ChatServer(lambda body, r=reply: r))
            for reply in FAILURES.values()
        ]
        # The shipped retry policy: a Retry-After past its budget fails at once.
        models = iter([model_at(server, retry=RetryPolicy()) for server in servers])
        world = await stack.enter_async_context(
            gateway_for(tmp_path, ["check my balance"], llm=lambda call_id: next(models)(call_id))
        )
        threads = threading.active_count()
        sids = [f"CA{index:032x}" for index in range(len(servers))]
        calls = [
            world.call(
                TwilioCaller(script_of(cue(BALANCE, at_ms=300), tail_ms=6000), call_sid=sid),
                speed=2.0,
                max_ms=30_000,
            )
            for sid in sids
        ]
        assert await asyncio.gather(*calls) == [1000] * len(sids)
        records = [await timeline(world, sid) for sid in sids]
        # Nothing of the six calls is left running: no task on the dialogue plane, no thread.
        assert await dialogue_tasks(world) == 0
        assert threading.active_count() == threads
    reasons = []
    for record in records:
        (ended,) = named(record, "turn_ended", turn_id="t1")
        assert ended["reason"] == "error"
        reasons.append(next(key for key in FAILURES if key in ended["detail"]))
        heard = named(record, "heard", turn_id="t1")[0]["text"]
        assert heard == "Sorry, I could not get that. Could you say it again?"
    assert sorted(reasons) == sorted(FAILURES)
    assert all(len(server.requests) == 1 for server in servers)  # 503: Retry-After too long
