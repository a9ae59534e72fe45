"""``voicegate chat PROJECT``: a text conversation with a project on the terminal.

One line of standard input is one user turn (``/dtmf 12``, ``/button PAYLOAD`` and
``/silence`` send the other kinds of input). Each turn's events are printed as they arrive;
with ``--json``, one JSON object per line, ``{"event": name, ...}``. Ctrl-C during a turn
cancels it the way a barge-in does; Ctrl-C at the prompt ends the chat.

For debugging a project: ``--show prompt,tools,stack`` prints, before every model request,
the assembled system prompt, the offered tools and the skill stack as events (``prompt``,
``tools``, ``stack``); with any ``--show`` (``--show framework`` for only these), framework
tool calls (``activate``, ``set_fields``, ...) are printed as ``framework_call`` events.
Validation warnings are printed on standard error; a project with validation errors is
refused with the first error and a count, unless ``--allow-invalid`` runs it as far as it
loaded (issue 17).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TextIO

from voicegate.cli import engines, wiring
from voicegate.engine.history import ToolExecuted
from voicegate.engine.llm.port import LLMFactory, LLMPort, Message, StreamItem, SystemMessage
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.loop.session import Session
from voicegate.engine.memory.sqlite_store import SqliteMemoryStore
from voicegate.engine.memory.store import InMemoryStore, MemoryStore
from voicegate.engine.project.loader import inspect_project
from voicegate.engine.project.model import Project
from voicegate.engine.project.problems import Problem
from voicegate.engine.seam import (
    ButtonPress,
    CallInfo,
    DialogueEngine,
    Dtmf,
    EndCall,
    Say,
    SilenceTimeout,
    Transcript,
    TurnEvent,
    TurnEventStream,
    UserInput,
    event_record,
)
from voicegate.engine.tools.catalog import ToolCatalog
from voicegate.engine.tools.isolation import ToolLoops
from voicegate.engine.tools.schema import ToolSpec
from voicegate.errors import ConfigError, VoicegateError

CALL_ID = "chat"
#: What ``--show`` can print before each model request.
SHOWABLE = ("prompt", "tools", "stack", "framework")
#: Event-loop turns a model request yields first, so queued turn events get printed.
_DRAIN_STEPS = 3


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
    parser.add_argument(
        "--show",
        default="",
        metavar="WHAT",
        help="debugging events, comma-separated: prompt, tools, stack (before each model "
        "request), framework (framework tool calls; printed with any --show)",
    )
    parser.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="session metadata, as a call's parameters carry it (text): seeds the project's "
        "seed: true field KEY (repeatable)",
    )
    parser.add_argument(
        "--allow-invalid",
        action="store_true",
        help="run a project that has validation errors, as far as it loaded (errors printed)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Load the project and chat until standard input ends."""
    show = parse_show(args.show)
    metadata = parse_metadata(args.metadata)
    project = load_for_chat(args.project, args.allow_invalid, sys.stderr)
    store = _store(args.memory, args.data_dir)
    # Tools run on tool loop threads as under serve (docs/architecture.md), so a published
    # tool that blocks fails its turn at tool_timeout instead of freezing the chat.
    tool_loops = ToolLoops()
    try:
        printer = _Printer(sys.stdout, args.json)
        llm = _llm_factory(args.llm, project)
        model = _shown(llm, printer, show) if show else llm
        call = CallInfo(
            CALL_ID,
            conversation_id=args.conversation or uuid.uuid4().hex,
            metadata=metadata,
        )
        tools = wiring.connected_tools(args.project, project, os.environ)

        def build(catalog: ToolCatalog) -> ProjectEngine:
            return ProjectEngine(project, model, store, catalog=catalog, tool_loops=tool_loops)

        asyncio.run(_chat_with_tools(tools, build, call, printer, show_framework=bool(show)))
    finally:
        tool_loops.close()
        store.close()
    return 0


def parse_metadata(pairs: list[str]) -> dict[str, str]:
    """``--metadata KEY=VALUE`` options as session metadata; raises ConfigError on a bad one."""
    metadata: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"--metadata {pair!r}: write KEY=VALUE")
        metadata[key.strip()] = value
    return metadata


async def _chat_with_tools(
    tools: AbstractAsyncContextManager[ToolCatalog],
    build: Callable[[ToolCatalog], ProjectEngine],
    call: CallInfo,
    printer: _Printer,
    *,
    show_framework: bool,
) -> None:
    """Chat with the engine ``build`` makes over the catalog ``tools`` opens (and closes)."""
    async with tools as catalog:
        engine = build(catalog)
        printer.engine = engine if show_framework else None  # framework calls: any --show
        await _chat(engine, call, sys.stdin, printer)


def parse_show(value: str) -> frozenset[str]:
    """``--show prompt,tools`` -> {"prompt", "tools"}; an unknown name is a ConfigError."""
    names = frozenset(name.strip() for name in value.split(",") if name.strip())
    unknown = sorted(names - set(SHOWABLE))
    if unknown:
        raise ConfigError(f"--show: unknown {unknown}; choose from {', '.join(SHOWABLE)}")
    return names


def load_for_chat(root: Path, allow_invalid: bool, err: TextIO) -> Project:
    """The project to chat with; warnings go to ``err``. A project with errors is refused
    (ConfigError naming the first) unless ``allow_invalid``, which runs it as it loaded."""
    report = inspect_project(root)
    for warning in report.warnings:
        print(f"warning: {_described(warning, report.root)}", file=err)
    if report.project is not None:
        return report.project
    errors = report.errors
    first = _described(errors[0], report.root)
    if report.draft is None:  # no folder or no agent.yml: nothing to run
        raise ConfigError(f"cannot run {root}: {first}")
    if not allow_invalid:
        count = f"{len(errors)} validation error{'' if len(errors) == 1 else 's'}"
        raise ConfigError(
            f"{root} has {count}, the first: {first}. `voicegate validate {root}` lists them "
            "all; `voicegate chat --allow-invalid` runs the project anyway"
        )
    for error in errors:
        print(f"error: {_described(error, report.root)}", file=err)
    print(
        f"running {root} with {len(errors)} validation error(s) (--allow-invalid): skills "
        "whose skill.md did not load and tool modules that did not import are left out",
        file=err,
    )
    return report.draft


def _described(problem: Problem, root: Path) -> str:
    """``path:line: message [code]`` of a problem, the path relative to the project."""
    return f"{problem.location(root)}: {problem.message} [{problem.code}]"


def _shown(llm: LLMFactory, printer: _Printer, show: frozenset[str]) -> LLMFactory:
    """``llm`` with every request first printed as the ``--show`` events."""

    def factory(call_id: str) -> LLMPort:
        return _ShownLLM(llm(call_id), printer, show)

    return factory


class _ShownLLM:
    """An LLM port that prints the prompt, tools and skill stack of each request first."""

    def __init__(self, inner: LLMPort, printer: _Printer, show: frozenset[str]) -> None:
        self._inner = inner
        self._printer = printer
        self._show = show

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> AsyncGenerator[StreamItem, None]:
        """Print the request's events, then stream the inner model's answer."""
        # Let the consumer print the turn events queued so far, so the debugging events
        # come out in the order things happened (both tasks share one event loop).
        for _ in range(_DRAIN_STEPS):
            await asyncio.sleep(0)
        if "prompt" in self._show:
            prompt = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
            self._printer.debug({"event": "prompt", "text": prompt})
        if "tools" in self._show:
            self._printer.debug(
                {"event": "tools", "names": [t.name for t in tools], "tools": _specs(tools)}
            )
        if "stack" in self._show:
            self._printer.debug(self._printer.stack_record())
        async for item in self._inner.stream(messages, tools):
            yield item


def _specs(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [tool.as_json() for tool in tools]


def _llm_factory(spec: str, project: Project) -> LLMFactory:
    """The model ``--llm`` names, built as ``serve`` builds it (cli/engines.py)."""
    if not spec:
        raise ConfigError("no --llm given: use scripted:FILE, rules, or openai[:MODEL[@URL]]")
    return engines.build_llm(spec, project, os.environ)


def _store(kind: str, data_dir: Path) -> MemoryStore:
    if kind == "memory":
        return InMemoryStore()
    return SqliteMemoryStore(data_dir / "memory.sqlite3")


async def _chat(engine: DialogueEngine, call: CallInfo, lines: TextIO, printer: _Printer) -> None:
    await engine.open(call)
    try:
        # A turn that ends (or transfers) the call ends the chat (issue 16).
        while not printer.call_ended and (line := await asyncio.to_thread(lines.readline)):
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
    printer.flush_framework_calls()
    await engine.heard(call_id, stream.turn_id, heard, interrupted=task.cancelled())


async def _consume(stream: TurnEventStream, printer: _Printer) -> str:
    printer.heard_so_far = ""
    printer.turn_id = stream.turn_id
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
    """Prints events, and keeps the text said so far (in text chat, all of it is "heard").

    With ``engine`` set it also prints the framework tool calls the session recorded
    (``framework_call``), after the next event, before a debugging event, at the turn's end.
    """

    def __init__(self, out: TextIO, as_json: bool) -> None:
        self._out = out
        self._json = as_json
        self.heard_so_far = ""
        self.turn_id = ""
        self.call_ended = False
        self.engine: ProjectEngine | None = None
        self._history_seen = 0

    def show(self, event: TurnEvent) -> None:
        """Print one turn event, then the framework calls recorded since (the engine records
        them at once while turn events wait in the stream's queue, so this keeps the order
        closest to what happened)."""
        record = event_record(event)
        if isinstance(event, Say):
            self.heard_so_far = f"{self.heard_so_far} {event.text}".strip()
        self.call_ended = self.call_ended or isinstance(event, EndCall)
        self._print(record)
        self.flush_framework_calls()

    def debug(self, record: dict[str, Any]) -> None:
        """Print one debugging event of the current turn."""
        self.flush_framework_calls()
        self._print({"event": record.pop("event"), "turn_id": self.turn_id, **record})

    def flush_framework_calls(self) -> None:
        """Print the framework calls recorded since the last flush."""
        session = self._session()
        if session is None:
            return
        history = session.history.snapshot()
        for entry in history[self._history_seen :]:
            if isinstance(entry, ToolExecuted) and entry.source == "framework":
                self._print(
                    {
                        "event": "framework_call",
                        "turn_id": entry.turn_id,
                        "call_id": entry.call_id,
                        "name": entry.name,
                        "arguments": entry.arguments,
                        "outcome": entry.outcome,
                        "result": entry.result,
                    }
                )
        self._history_seen = len(history)

    def stack_record(self) -> dict[str, Any]:
        """The skill stack now: frames bottom to top, with block cursors and the pending
        confirmation."""
        session = self._session()
        if session is None:
            return {"event": "stack", "stack": []}
        dialogue = session.dialogue
        frames = [
            {
                "skill": frame.skill_id,
                "parked": frame.parked.value if frame.parked else None,
                "blocks": [{"block": c.block_id, "step": c.index} for c in frame.blocks],
            }
            for frame in dialogue.stack
        ]
        pending = dialogue.pending.tool if dialogue.pending else None
        return {"event": "stack", "stack": frames, "pending_confirmation": pending}

    def _session(self) -> Session | None:
        if self.engine is None:
            return None
        try:
            return self.engine.session(CALL_ID)
        except VoicegateError:
            return None

    def _print(self, record: dict[str, Any]) -> None:
        text = json.dumps(record, default=str) if self._json else _human(record)
        print(text, file=self._out, flush=True)


def _human(record: dict[str, Any]) -> str:
    kind = record.pop("event")
    record.pop("turn_id", None)
    if kind == "say":
        return f"bot: {record['text']}"
    if kind == "end_call":
        where = record.get("transfer_to")
        return f"  [call transferred to {where}]" if where else "  [call ended]"
    details = " ".join(f"{key}={json.dumps(value)}" for key, value in record.items())
    return f"  [{kind}] {details}"
