"""voicegate: a real-time voice gateway with barge-in-correct dialogue turns."""

# The public Python API (docs/api.md) is imported on first use (PEP 562 __getattr__), so
# `voicegate --help` and `import voicegate` stay fast.

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it (imported lazily by __getattr__, PEP 562).
_API: dict[str, str] = {
    "load_settings": "voicegate.embed",
    "open_gateway": "voicegate.embed",
    "open_runner": "voicegate.embed",
    "mount": "voicegate.embed",
    "as_engine": "voicegate.embed",
    "call_twilio": "voicegate.embed",
    "recent_calls": "voicegate.embed",
    "call_timeline": "voicegate.embed",
    "Settings": "voicegate.config",
    "Gateway": "voicegate.gateway.lifecycle",
    "FunctionEngine": "voicegate.engine.simple",
    "Conversation": "voicegate.engine.simple",
    "DialogueEngine": "voicegate.engine.seam",
    "CallInfo": "voicegate.engine.seam",
    "Transcript": "voicegate.engine.seam",
    "Dtmf": "voicegate.engine.seam",
    "Say": "voicegate.engine.seam",
    "TurnEnded": "voicegate.engine.seam",
    "VoicegateError": "voicegate.errors",
    "ConfigError": "voicegate.errors",
}

__all__ = [
    "CallInfo",
    "ConfigError",
    "Conversation",
    "DialogueEngine",
    "Dtmf",
    "FunctionEngine",
    "Gateway",
    "Say",
    "Settings",
    "Transcript",
    "TurnEnded",
    "VoicegateError",
    "__version__",
    "as_engine",
    "call_timeline",
    "call_twilio",
    "load_settings",
    "mount",
    "open_gateway",
    "open_runner",
    "recent_calls",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from voicegate.config import Settings
    from voicegate.embed import (
        as_engine,
        call_timeline,
        call_twilio,
        load_settings,
        mount,
        open_gateway,
        open_runner,
        recent_calls,
    )
    from voicegate.engine.seam import CallInfo, DialogueEngine, Dtmf, Say, Transcript, TurnEnded
    from voicegate.engine.simple import Conversation, FunctionEngine
    from voicegate.errors import ConfigError, VoicegateError
    from voicegate.gateway.lifecycle import Gateway


def __getattr__(name: str) -> Any:
    """Import a public name's module the first time the name is used."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'voicegate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
