"""`voicegate serve` with an echo runner in place of call sessions (run as a subprocess).

This isolates the server unit inside the real command: argument parsing, settings, signals,
drain and exit code, with calls that only echo.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from voicegate.cli.main import build_parser
from voicegate.cli.serve_command import serve_main
from voicegate.codecs import Codec
from voicegate.config import Settings
from voicegate.gateway.metrics import GatewayMetrics
from voicegate.gateway.transport import CallGate, CallRunner, Transport

#: Answered with the serving process's frozen object count instead of echoed (gateway/heap.py).
HEAP_QUERY = "frozen objects?"


async def echo(transport: Transport, codec: Codec, gate: CallGate) -> None:
    """Send every message back until the peer or the gateway closes."""
    while (message := await transport.receive()) is not None:
        await transport.send(str(gc.get_freeze_count()) if message == HEAP_QUERY else message)


@asynccontextmanager
async def echo_runner(settings: Settings, metrics: GatewayMetrics) -> AsyncIterator[CallRunner]:
    """The runner builder handed to serve_main."""
    yield echo


if __name__ == "__main__":
    arguments = build_parser().parse_args(["serve", *sys.argv[1:]])
    sys.exit(serve_main(arguments, runner_builder=echo_runner))
