"""Names a project's tools may not take (tools reference, "Built-in framework tools")."""

from __future__ import annotations

#: The engine's own tools; a builder tool reusing one raises at model load (contract §7.3).
FRAMEWORK_TOOL_NAMES = frozenset(
    {
        "activate",
        "complete_skill",
        "cancel_skill",
        "set_fields",
        "correct",
        "resolve_tool_confirmation",
        "search_knowledge",
        "cannot_help",
        "listen",
    }
)

#: Prefix of post-write hooks: internal tools, never offered to the model (contract §7.5).
HOOK_PREFIX = "run_after_setting_"


def hook_name(entry: str) -> str:
    """The name of the post-write hook for a memory entry."""
    return f"{HOOK_PREFIX}{entry}"


def is_hook(name: str) -> bool:
    """Whether a tool name is a post-write hook."""
    return name.startswith(HOOK_PREFIX) and len(name) > len(HOOK_PREFIX)
