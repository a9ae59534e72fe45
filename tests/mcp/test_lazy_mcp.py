"""A project that imports no MCP tool starts no server and never loads the mcp package.

The package is about a second of imports, most of a scripted replay's startup (docs/replay.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import asyncio, sys
from pathlib import Path
from voicegate.cli.wiring import connected_tools
from voicegate.engine.project.loader import load_project

async def main(root: Path) -> None:
    async with connected_tools(root, load_project(root), {}) as catalog:
        print(catalog.local("check_balance", "check_balance") is not None)

asyncio.run(main(Path(sys.argv[1])))
print("mcp" in sys.modules)
"""


def test_a_project_without_mcp_imports_does_not_load_the_mcp_package() -> None:
    project = ROOT / "fixtures" / "projects" / "slow_bank"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", CHECK, str(project)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert result.stdout.split() == ["True", "False"]  # its local tool, and no mcp package
