"""Build hook: the demo settings and agent (``config/``) ship in the wheel as ``voicegate/demo``.

The repository keeps one copy of the demo in ``config/`` (where ``make run``, the docs and the
tests use it); the wheel needs it inside the package so ``voicegate serve`` and ``voicegate
init`` work from any directory (voicegate/cli/demo.py). Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONFIG = Path(__file__).resolve().parent / "config"
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc")


class BuildWithDemo(build_py):
    """``build_py``, then ``config/voicegate.yml`` and ``config/agent/`` into the package."""

    def run(self) -> None:
        """Build the package, then copy the demo in (not for editable installs)."""
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads config/ from the checkout
        target = Path(self.build_lib) / "voicegate" / "demo"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(CONFIG / "agent", target / "agent", ignore=SKIPPED)
        shutil.copy2(CONFIG / "voicegate.yml", target / "voicegate.yml")


setup(cmdclass={"build_py": BuildWithDemo})
