"""``ToolResult``: what a tool returns (tools reference, "ToolResult"; contract §8.5).

Importable as ``rasa.mantle.tools.result`` while a project's tool modules load.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of a tool call; ``llm_response`` is what the model reads (JSON-serialisable).

    A tool that only sends a message or writes memory returns a bare ``ToolResult()``.
    """

    llm_response: Any = None
