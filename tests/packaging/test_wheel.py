"""The wheel runs anywhere (issue 18): built from the sources, installed without dependencies
into a fresh virtualenv that borrows this interpreter's site-packages, and ``voicegate serve``
from an empty directory answers a Twilio call with the packaged demo project."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np

from voicegate.audio.wav import read_wav
from voicegate.callers.driver import drive
from voicegate.callers.script import CallerScript, Cue
from voicegate.callers.twilio import TwilioCaller

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "voicegate", "config")
WAV = ROOT / "fixtures" / "audio" / "synth" / "festival" / "balance_8k.wav"
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def build_wheel(tmp_path: Path) -> Path:
    """``pip wheel`` of a copy of the sources (the build writes build/ beside them)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=SKIPPED)
        else:
            shutil.copy2(path, source / name)
    dist = tmp_path / "dist"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command += ["--no-index", "-q", "-w", str(dist), str(source)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    (wheel,) = dist.glob("voicegate-*.whl")
    return wheel


def fresh_venv(tmp_path: Path, wheel: Path) -> Path:
    """A virtualenv with the wheel installed and this interpreter's packages visible."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # The dependencies come from here, never from the sources (which are not on this path).
    shared = {*site.getsitepackages(), sysconfig.get_paths()["purelib"]}
    Path(purelib, "shared-deps.pth").write_text("\n".join(sorted(shared)) + "\n")
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps"]
    subprocess.run([*install, "--no-index", "-q", str(wheel)], check=True, timeout=120)
    return venv


def check_contents(wheel: Path) -> None:
    """The demo project and settings, and the browser and call pages, are in the wheel."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "voicegate/demo/voicegate.yml" in names
    assert "voicegate/demo/agent/agent.yml" in names
    assert "voicegate/demo/agent/skills/check_balance/tools.py" in names
    assert {"voicegate/gateway/static/index.html", "voicegate/gateway/static/calls.js"} <= names
    assert not [name for name in names if "__pycache__" in name]


async def test_the_installed_wheel_serves_a_call_from_an_empty_directory(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    check_contents(wheel)
    venv = fresh_venv(tmp_path, wheel)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    serve = [str(venv / "bin" / "voicegate"), "serve", "--port", "0", "--workers", "1"]
    process = await asyncio.create_subprocess_exec(
        *serve, cwd=empty, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        found = re.search(r"listening on http://(127\.0\.0\.1:\d+)", line)
        assert found, line + (await process.stderr.read()).decode()  # type: ignore[union-attr]
        # Say "check my balance", then hang up half a second after the bot starts answering
        # (Whisper's final transcript can take seconds on a busy machine: no fixed wait).
        asked = Cue(read_wav(WAV).samples, at_ms=300)
        heard = Cue(np.zeros(1600, dtype=np.int16), after_bot_speech=1, delay_ms=500)
        caller = TwilioCaller(CallerScript([asked, heard], 8000, tail_ms=200))
        code = await drive(f"ws://{found.group(1)}/twilio", caller, max_ms=30_000)
    finally:
        process.send_signal(signal.SIGTERM)
        stderr = (await asyncio.wait_for(process.communicate(), 30))[1].decode()
    assert code == 1000, stderr
    assert process.returncode == 0, stderr
    logs = list((empty / "data" / "calls").glob("twilio-*.jsonl"))
    assert len(logs) == 1
    assert '"event": "say"' in logs[0].read_text(), logs[0].read_text()
    assert caller.bot_started_ms, "the caller heard no bot audio"
