"""``voicegate init DIR``: a starter project, the demo's settings and agent, ready to serve."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from voicegate.cli.demo import demo_root
from voicegate.errors import ConfigError

#: Left out of the copy: caches the demo may carry in a source checkout.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def add_parser(subparsers: Any) -> None:
    """Register ``voicegate init``."""
    parser = subparsers.add_parser(
        "init",
        help="write a starter project into a new directory",
        description="Write DIR/config/voicegate.yml and the demo agent DIR/config/agent; "
        "then `cd DIR && voicegate serve`.",
    )
    parser.add_argument("directory", type=Path, metavar="DIR", help="a new or empty directory")
    parser.set_defaults(handler=run)


def init_project(directory: Path) -> Path:
    """Copy the demo settings and agent into ``directory/config``; the settings file."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ConfigError(f"{directory}: exists and is not an empty directory")
    source = demo_root()
    config = directory / "config"
    config.mkdir(parents=True)
    shutil.copytree(source / "agent", config / "agent", ignore=IGNORED)
    shutil.copy2(source / "voicegate.yml", config / "voicegate.yml")
    return config / "voicegate.yml"


def run(args: argparse.Namespace) -> int:
    """The ``init`` handler."""
    settings = init_project(args.directory)
    print(f"wrote {settings} and {settings.parent / 'agent'}/")
    print(f"next: cd {args.directory} && voicegate validate config/agent && voicegate serve")
    return 0
