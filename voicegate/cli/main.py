"""`voicegate` entry point: one argparse sub-command per module, listed explicitly below."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

import voicegate
from voicegate.cli import (
    chat_command,
    replay_command,
    say_command,
    serve_command,
    transcribe_command,
    vad_command,
    validate_command,
)
from voicegate.errors import VoicegateError

#: Each command module exposes ``add_parser(subparsers)``, which registers its sub-command and
#: sets ``handler`` (a function taking the parsed namespace and returning an exit code).
#: The list is explicit on purpose: no import-time registries (design §8).
COMMAND_MODULES: tuple[ModuleType, ...] = (
    chat_command,
    vad_command,
    serve_command,
    transcribe_command,
    say_command,
    replay_command,
    validate_command,
)

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every sub-command attached."""
    parser = argparse.ArgumentParser(prog="voicegate", description=voicegate.__doc__)
    parser.add_argument("--version", action="version", version=voicegate.__version__)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except VoicegateError as error:
        print(f"voicegate {args.command}: {error}", file=sys.stderr)
        return 1
