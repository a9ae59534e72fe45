"""`voicegate` entry point: one argparse sub-command per module, listed explicitly below."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

import voicegate
from voicegate.errors import VoicegateError

#: Each sub-command's module and its one-line help. A module exposes ``add_parser(subparsers)``,
#: which registers its sub-command and sets ``handler`` (a function taking the parsed namespace
#: and returning an exit code). Modules are imported only for the command that runs: together
#: they pull in the engine, MCP, speech and the server (a second of imports), which
#: ``voicegate --help`` does not need. The table is explicit on purpose: no import-time
#: registries (design §8); tests/ops/test_newcomer.py checks the helps against the modules.
COMMANDS: dict[str, tuple[str, str]] = {
    "chat": ("voicegate.cli.chat_command", "talk to an agent project in text, one line per turn"),
    "vad": ("voicegate.cli.vad_command", "print the speech segments of a WAV file"),
    "serve": ("voicegate.cli.serve_command", "run the gateway (HTTP and WebSockets on one port)"),
    "transcribe": (
        "voicegate.cli.transcribe_command",
        "print the embedded recogniser's transcript of a WAV file",
    ),
    "say": (
        "voicegate.cli.say_command",
        "write the embedded synthesiser's audio for a text to a WAV file",
    ),
    "replay": (
        "voicegate.cli.replay_command",
        "stream a recorded caller to a gateway and write call.wav and timeline.jsonl",
    ),
    "init": ("voicegate.cli.init_command", "write a starter project into a new directory"),
    "validate": (
        "voicegate.cli.validate_command",
        "check an agent project and list every problem with its file and line",
    ),
}

Handler = Callable[[argparse.Namespace], int]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser: every sub-command complete, or only ``only`` (the others are
    listed by name and help, without importing their modules)."""
    parser = argparse.ArgumentParser(prog="voicegate", description=voicegate.__doc__)
    parser.add_argument("--version", action="version", version=voicegate.__version__)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, summary) in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command and return its exit code."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in arguments if not a.startswith("-")), "")
    parser = build_parser(command if command in COMMANDS else "")
    args = parser.parse_args(arguments)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except VoicegateError as error:
        print(f"voicegate {args.command}: {error}", file=sys.stderr)
        return 1
