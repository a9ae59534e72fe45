"""The console entry point works as `python -m voicegate` and as `voicegate`."""

import subprocess
import sys

from voicegate.cli.main import main


def test_no_command_prints_help_and_fails(capsys: object) -> None:
    assert main([]) == 2


def test_python_dash_m_prints_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "voicegate", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "0.1.0"
