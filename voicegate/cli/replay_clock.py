"""How ``voicegate replay`` keeps time: virtual by default, the wall clock on request.

On virtual time (clock/virtual.py, docs/replay.md) a call makes the same decisions at any
``--speed``, ``max`` included; ``--wall-clock`` (implied by ``--url``: a remote gateway keeps
its own clock) replays in real time scaled by the speed, as before issue 19.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Coroutine
from typing import Any, TypeVar

from voicegate.cli.replaying import parse_latency, parse_speed, run_replay
from voicegate.errors import ConfigError

_T = TypeVar("_T")


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--speed``, ``--wall-clock`` and ``--latency-ms`` (docs/replay.md, "Virtual time")."""
    parser.add_argument(
        "--speed",
        default="1",
        help="media seconds per real second, or max; on virtual time the call is the same "
        "at any speed",
    )
    parser.add_argument(
        "--wall-clock",
        action="store_true",
        help="run on the real clock instead of virtual time (always so with --url)",
    )
    parser.add_argument(
        "--latency-ms",
        action="append",
        default=[],
        metavar="COMPONENT=MS",
        help="virtual time charged for off-loop work, e.g. whisper=360 (repeatable)",
    )


def run_call(args: argparse.Namespace, main: Coroutine[Any, Any, _T]) -> _T:
    """Run a replay on virtual time, or on the wall clock with ``--wall-clock`` or ``--url``."""
    wall_clock = bool(args.wall_clock or args.url)
    latency = parse_latency(args.latency_ms)
    return run_replay(main, speed=args.speed, wall_clock=wall_clock, latency=latency)


def real_time_factor(args: argparse.Namespace) -> float:
    """How much media a real-time wait lasts: the speed on the wall clock, 1 on virtual time."""
    return args.speed if args.wall_clock or args.url else 1.0


def describe(args: argparse.Namespace) -> str:
    """``speed max on virtual time``, ``speed 4 on the wall clock``: for the summary."""
    speed = "max" if math.isinf(args.speed) else f"{args.speed:g}"
    clock = "the wall clock" if args.wall_clock or args.url else "virtual time"
    return f"speed {speed} on {clock}"


def check(args: argparse.Namespace) -> None:
    """Read ``--speed`` (a number, or max) and reject options that cannot go together."""
    try:
        args.speed = parse_speed(str(args.speed))
    except ValueError as error:
        raise ConfigError(f"--speed: {error}") from None
    if (args.wall_clock or args.url) and math.isinf(args.speed):
        raise ConfigError("--speed max needs virtual time: drop --wall-clock and --url")
    parse_latency(args.latency_ms)
