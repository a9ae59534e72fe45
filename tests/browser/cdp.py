"""A small Chrome DevTools Protocol driver for headless Chromium (tests only).

Chromium is started with ``--remote-debugging-port=0``; the port it picked is read from the
``DevToolsActivePort`` file it writes into its fresh profile, and the browser is then driven
over one WebSocket (``websockets``, already a voicegate dependency) with flattened target
sessions. Protocol reference: https://chromedevtools.github.io/devtools-protocol/
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

CHROMIUM = Path("/usr/bin/chromium")
#: The flags every test browser gets: headless, no first-run noise, a fake microphone device,
#: and audio allowed to play without a user gesture.
BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    "--remote-debugging-port=0",
    "--window-size=1200,820",
)
START_TIMEOUT_S = 20.0
COMMAND_TIMEOUT_S = 15.0


class CdpError(RuntimeError):
    """A DevTools command failed, or the page threw."""


@dataclass
class _Client:
    """One DevTools WebSocket: commands matched to replies by id, events kept per session."""

    socket: ClientConnection
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    async def call(self, method: str, session: str | None = None, **params: Any) -> Any:
        """Send one command and wait for its result."""
        number = next(self.ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        reply = asyncio.get_running_loop().create_future()
        self.pending[number] = reply
        await self.socket.send(json.dumps(message))
        answer = await asyncio.wait_for(reply, COMMAND_TIMEOUT_S)
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    async def read(self) -> None:
        """Route replies to their callers and keep events (console, exceptions) for reports."""
        try:
            async for text in self.socket:
                message = json.loads(text)
                reply = self.pending.pop(message.get("id", -1), None)
                if reply is not None and not reply.done():
                    reply.set_result(message)
                elif "method" in message:
                    self.events.append(message)
        except ConnectionClosed:
            pass  # the browser went away: fail what waits, below
        for reply in self.pending.values():
            if not reply.done():
                reply.set_result({"error": "the DevTools connection closed (chromium exited?)"})


@dataclass
class Page:
    """One tab, attached through a flattened session."""

    client: _Client
    session: str

    async def call(self, method: str, **params: Any) -> Any:
        """A DevTools command in this tab."""
        return await self.client.call(method, self.session, **params)

    async def navigate(self, url: str) -> None:
        """Load ``url`` and wait until its scripts can be evaluated."""
        await self.call("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete' && window.voicegate !== undefined")

    async def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` (awaited when it is a promise)."""
        result = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise CdpError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout_s: float = 15.0) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not (value := await self.evaluate(expression)):
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"waited {timeout_s} s for {expression!r}; {self.problems()}")
            await asyncio.sleep(0.05)
        return value

    async def screenshot(self, path: Path) -> None:
        """Save the visible page as PNG."""
        shot = await self.call("Page.captureScreenshot", format="png")
        await asyncio.to_thread(_save, path, base64.b64decode(shot["data"]))

    def problems(self) -> list[str]:
        """Console errors and uncaught exceptions of the page so far (for failure messages)."""
        found = []
        for event in self.client.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails", {}).get("exception")))
            elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(" ".join(str(arg.get("value")) for arg in params.get("args", [])))
        return found


def chromium_flags(profile: Path, microphone: Path | None, *, allow: bool = True) -> list[str]:
    """A test browser's command line: a fresh profile, the microphone reading ``microphone``
    once (``%noloop``), and the permission prompt answered yes (``allow``) or no."""
    flags = [str(CHROMIUM), *BASE_FLAGS, f"--user-data-dir={profile}"]
    if microphone is not None:
        flags.append(f"--use-file-for-fake-audio-capture={microphone}%noloop")
    flags.append("--use-fake-ui-for-media-stream" if allow else "--deny-permission-prompts")
    return [*flags, "about:blank"]


@asynccontextmanager
async def chromium(
    workdir: Path, microphone: Path | None = None, *, allow_microphone: bool = True
) -> AsyncIterator[Page]:
    """A headless Chromium with one attached tab; killed on exit."""
    profile = workdir / "profile"
    profile.mkdir(parents=True)
    log = (workdir / "chromium.log").open("wb")
    # Its own process group, so stopping it also stops its renderer and audio processes.
    process = await asyncio.create_subprocess_exec(
        *chromium_flags(profile, microphone, allow=allow_microphone),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        endpoint = await _endpoint(profile, process)
        async with connect(endpoint, max_size=None) as socket:
            client = _Client(socket)
            reader = asyncio.create_task(client.read())
            try:
                yield await _open_tab(client)
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
    finally:
        await _stop(process)
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


async def _endpoint(profile: Path, process: asyncio.subprocess.Process) -> str:
    """The browser's DevTools WebSocket URL, from the DevToolsActivePort file."""
    active = profile / "DevToolsActivePort"
    deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
    while True:
        lines = active.read_text().split() if active.exists() else []
        if len(lines) == 2:
            return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
        if process.returncode is not None:
            raise CdpError(f"chromium exited with {process.returncode} before DevTools was up")
        if asyncio.get_running_loop().time() > deadline:
            raise CdpError(f"chromium's DevTools did not come up in {START_TIMEOUT_S} s")
        await asyncio.sleep(0.05)


async def _open_tab(client: _Client) -> Page:
    target = await client.call("Target.createTarget", url="about:blank")
    attached = await client.call("Target.attachToTarget", targetId=target["targetId"], flatten=True)
    page = Page(client, attached["sessionId"])
    for domain in ("Page.enable", "Runtime.enable"):
        await page.call(domain)
    return page


async def _stop(process: asyncio.subprocess.Process) -> None:
    """End the browser we started: its process group, by the id we got when starting it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), 5)
            return
        except TimeoutError:
            continue


def _save(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
