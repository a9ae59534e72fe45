"""The demo project and settings, wherever voicegate is installed (issue 18, packaging).

A wheel carries ``config/voicegate.yml`` and ``config/agent/`` as ``voicegate/demo/`` (setup.py
copies them at build time, so the repository keeps one copy); a source checkout reads them
from ``config/`` beside the package. ``voicegate serve`` started in a directory without a
``config/`` of its own serves the demo from there, and ``voicegate init`` copies it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from voicegate.config import DEFAULT_CONFIG_PATH, Settings

#: The settings' default project and model, relative to the working directory.
DEMO_PROJECT = Path("config/agent")
_SCRIPTED_DEMO = "scripted:config/agent/"


def demo_root() -> Path:
    """The directory holding ``voicegate.yml`` and ``agent/`` of the demo."""
    package = Path(__file__).resolve().parents[1]
    inside = package / "demo"
    return inside if inside.is_dir() else package.parent / "config"


def default_config() -> Path | None:
    """``./config/voicegate.yml`` if it exists, else the demo's settings file (if shipped)."""
    if DEFAULT_CONFIG_PATH.exists():
        return DEFAULT_CONFIG_PATH
    packaged = demo_root() / "voicegate.yml"
    return packaged if packaged.is_file() else None


def resolve_demo(settings: Settings) -> Settings:
    """``settings`` with the demo project from the package when ``config/agent`` is not here."""
    engine = settings.engine
    if engine.project_dir != DEMO_PROJECT or DEMO_PROJECT.exists():
        return settings
    agent = demo_root() / "agent"
    llm = engine.llm
    if llm.startswith(_SCRIPTED_DEMO):
        llm = f"scripted:{agent / llm.removeprefix(_SCRIPTED_DEMO)}"
    return replace(settings, engine=replace(engine, project_dir=agent, llm=llm))
