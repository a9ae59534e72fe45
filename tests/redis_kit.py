"""A real redis-server per test, on a free loopback port in a temporary directory (issue 13).

``make test`` installs Debian's redis-server when it is missing (Makefile target ``redis``);
where it still is not there, the tests that need it skip and say why.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
#: How long a server may take to answer its first PING (a loaded 2-core machine).
START_PATIENCE_S = 20.0


class RedisServer:
    """One redis-server process; ``url`` reaches it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server (no persistence to disk) and wait until it answers."""
        self._process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.workdir),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url, socket_timeout=1.0)
        deadline = time.monotonic() + START_PATIENCE_S
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if time.monotonic() > deadline or self._process.poll() is not None:
                        raise
                    time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        """Stop the server (the data is gone: nothing is saved to disk)."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGCONT)  # a paused server cannot stop
            self._process.terminate()
            self._process.wait(10)
        self._process = None

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections stay open, nothing answers (a slow Redis)."""
        assert self._process is not None
        self._process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server go on (SIGCONT)."""
        assert self._process is not None
        self._process.send_signal(signal.SIGCONT)

    def client(self) -> redis.Redis:
        """A client to inspect keys from a test (strings decoded)."""
        return redis.Redis.from_url(self.url, decode_responses=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A started redis-server for one test, stopped after it."""
    if not Path(REDIS_SERVER).exists():
        pytest.skip("redis-server is not installed (make test installs it)")
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
