"""``voicegate chat PROJECT``: a text conversation with a project on the terminal.

One line of standard input is one user turn (``/dtmf 12``, ``/button PAYLOAD`` and
``/silence`` send the other kinds of input). Each turn's events are printed as they arrive;
with ``--json``, one JSON object per line, ``{"event": name, ...}``. Ctrl-C during a turn
cancels it the way a barge-in does; Ctrl-C at the prompt ends the chat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any, TextIO

from voicegate.cli import wiring
from voicegate.engine.llm.port import LLMFactory
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.store import InMemoryStore, MemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.model import Project
from voicegate.engine.seam import (
    ButtonPress,
    CallInfo,
    DialogueEngine,
    Dtmf,
    Say,
    SilenceTimeout,
    Transcript,
    TurnEvent,
    TurnEventStream,
    UserInput,
    event_record,
)
from voicegate.errors import ConfigError

CALL_ID = "chat"


def add_parser(subparsers: Any) -> None:
    """Register ``voicegate chat``."""
    parser = subparsers.add_parser(
        "chat", help="talk to an agent project in text, one line per turn"
    )
    parser.add_argument("project", type=Path, help="the project folder")
    parser.add_argument(
        "--llm",
        default="",
        metavar="SPEC",
        help="the model: scripted:FILE, rules (the offline orchestrator, docs/rules-llm.md), "
        "or openai[:MODEL[@BASE_URL]] (key from the project's api_key_env variable)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per event")
    parser.add_argument(
        "--memory",
        choices=("sqlite", "memory"),
        default="sqlite",
        help="where memory lives: a SQLite file under --data-dir (default) or process memory",
    )
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="default: ./data")
    parser.add_argument(
        "--conversation", default="", help="conversation id to resume (default: a new one)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Load the project and chat until standard input ends."""
    project = load_project(args.project)
    llm = _llm_factory(args.llm, project)
    store = _store(args.memory, args.data_dir)
    try:
        engine: DialogueEngine = ProjectEngine(project, llm, store)
        call = CallInfo(CALL_ID, conversation_id=args.conversation or uuid.uuid4().hex)
        asyncio.run(_chat(engine, call, sys.stdin, _Printer(sys.stdout, args.json)))
    finally:
        store.close()
    return 0


def _llm_factory(spec: str, project: Project) -> LLMFactory:
    """The model ``--llm`` names, built as ``serve`` builds it (cli/wiring.py)."""
    if not spec:
        raise ConfigError("no --llm given: use scripted:FILE, rules, or openai[:MODEL[@URL]]")
    return wiring.build_llm(spec, project, os.environ)


def _store(kind: str, data_dir: Path) -> MemoryStore:
    if kind == "memory":
        return InMemoryStore()
    return SqliteMemoryStore(data_dir / "memory.sqlite3")


async def _chat(engine: DialogueEngine, call: CallInfo, lines: TextIO, printer: _Printer) -> None:
    await engine.open(call)
    try:
        while line := await asyncio.to_thread(lines.readline):
            user = parse_input(line)
            if user is not None:
                await _turn(engine, call.call_id, user, printer)
    finally:
        await engine.close(call.call_id)


async def _turn(engine: DialogueEngine, call_id: str, user: UserInput, printer: _Printer) -> None:
    stream = engine.turn(call_id, user)
    task = asyncio.create_task(_consume(stream, printer))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, task.cancel)  # Ctrl-C interrupts like a barge-in
    try:
        heard = await task
    except asyncio.CancelledError:
        heard = printer.heard_so_far
        for event in stream.undelivered():
            if not isinstance(event, Say):  # speech never delivered was never heard
                printer.show(event)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    await engine.heard(call_id, stream.turn_id, heard, interrupted=task.cancelled())


async def _consume(stream: TurnEventStream, printer: _Printer) -> str:
    printer.heard_so_far = ""
    async with stream:
        async for event in stream:
            printer.show(event)
    return printer.heard_so_far


def parse_input(line: str) -> UserInput | None:
    """One line of input as a user input; blank lines are skipped."""
    text = line.strip()
    command, _, rest = text.partition(" ")
    if not text:
        return None
    if command == "/dtmf" and rest:
        return Dtmf(rest.strip())
    if command == "/button" and rest:
        return ButtonPress(rest.strip())
    if command == "/silence":
        return SilenceTimeout()
    return Transcript(text)


class _Printer:
    """Prints events, and keeps the text said so far (in text chat, all of it is "heard")."""

    def __init__(self, out: TextIO, as_json: bool) -> None:
        self._out = out
        self._json = as_json
        self.heard_so_far = ""

    def show(self, event: TurnEvent) -> None:
        record = event_record(event)
        if isinstance(event, Say):
            self.heard_so_far = f"{self.heard_so_far} {event.text}".strip()
        print(json.dumps(record) if self._json else _human(record), file=self._out, flush=True)


def _human(record: dict[str, Any]) -> str:
    kind = record.pop("event")
    record.pop("turn_id", None)
    if kind == "say":
        return f"bot: {record['text']}"
    details = " ".join(f"{key}={json.dumps(value)}" for key, value in record.items())
    return f"  [{kind}] {details}"
