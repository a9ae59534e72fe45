"""``search_knowledge`` and ``cannot_help`` (contract §7.3, §7.4).

A search covers the whole project index whatever skill is active; each snippet reaches the
model with its ``source`` file and ``scope`` (``global`` or the owning skill id). After it ran,
the turn's tool list collapses and the prompt switches to the answer-from-knowledge branch.

``cannot_help`` speaks the bundled decline (``utter_cannot_help``, replaceable in the project's
``responses.yml``) and waits: voicegate's stand-in for the unsupported-request default skill.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voicegate.engine.loop.responses import CANNOT_HELP, deliver
from voicegate.engine.loop.turn import Turn

#: Snippets one search returns.
SEARCH_LIMIT = 4


async def search_knowledge(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Search the project's knowledge index."""
    index = turn.session.project.references
    query = arguments.get("query")
    if index is None:
        return {"error": "this agent has no knowledge base"}
    if not isinstance(query, str) or not query.strip():
        return {"error": "search_knowledge needs a query"}
    turn.searched = True
    hits = index.search(query, SEARCH_LIMIT)
    return {
        "results": [
            {"text": hit.chunk.text, "source": hit.chunk.source, "scope": hit.chunk.scope}
            for hit in hits
        ]
    }


async def cannot_help(turn: Turn, arguments: Mapping[str, Any]) -> Any:
    """Decline the request and wait for the user."""
    frame = turn.dialogue.active
    if await deliver(turn, CANNOT_HELP, frame.skill_id if frame else None) is not None:
        turn.wait = True
    return {"declined": True, "in_domain": bool(arguments.get("in_domain", False))}
