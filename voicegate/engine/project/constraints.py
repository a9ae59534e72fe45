"""``tool_constraints`` and ``utter`` frontmatter lists (contract §2.5, skill.md reference).

``tool_constraints`` is a list of single-key mappings ``<bare tool name>: <options>``; an item
of another shape, options that are not a mapping, or an unknown option (such as the legacy
flat ``ask_confirmation``) fail with ``skill.markdown.invalid_tool_constraints``. Options:
``requires`` (condition string), ``requires_confirmation`` (``{enabled, utter_for_confirmation,
utter_on_user_denial}``), ``on_success``, ``on_failure`` (response names).

voicegate's choice where the docs are silent: ``requires_confirmation`` must say ``enabled``
explicitly, because a mapping without it is ambiguous (did the author mean to turn the pause
on?); listing the same tool twice is refused rather than merged.

``utter`` is a list of single-key mappings ``<response>: {on: activate, when: <condition>}``
with at least one trigger; anything else fails with ``skill.markdown.invalid_utter``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voicegate.engine.project import codes
from voicegate.engine.project.condition_sites import parse_at
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.shapes import is_text, item_line, key_line
from voicegate.engine.project.skill_model import Confirmation, ToolConstraint, UtterTrigger
from voicegate.engine.yamlfile import line_of

_OPTIONS = frozenset({"requires", "requires_confirmation", "on_success", "on_failure"})
_CONFIRMATION_KEYS = frozenset({"enabled", "utter_for_confirmation", "utter_on_user_denial"})
_LEGACY_HINTS = {
    "ask_confirmation": "use requires_confirmation: {enabled: true, utter_for_confirmation: ...}",
}


def parse_tool_constraints(
    raw: Any, data: Mapping[str, Any], path: str, problems: Problems
) -> dict[str, ToolConstraint]:
    """The constraints by tool name; malformed entries are reported and skipped."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        problems.add(
            codes.TOOL_CONSTRAINTS,
            "'tool_constraints' must be a list of single-key mappings '<tool>: <options>'",
            path,
            key_line(data, "tool_constraints"),
        )
        return {}
    constraints: dict[str, ToolConstraint] = {}
    for index, item in enumerate(raw):
        line = line_of(item) or item_line(raw, index)
        constraint = _constraint(item, path, line, problems)
        if constraint is None:
            continue
        if constraint.tool in constraints:
            problems.add(
                codes.TOOL_CONSTRAINTS,
                f"tool {constraint.tool!r} is constrained twice; merge the entries",
                path,
                line,
            )
            continue
        constraints[constraint.tool] = constraint
    return constraints


def _constraint(
    item: Any, path: str, line: int | None, problems: Problems
) -> ToolConstraint | None:
    if not isinstance(item, Mapping) or len(item) != 1:
        problems.add(
            codes.TOOL_CONSTRAINTS,
            "each tool_constraints item must be a single-key mapping '<tool>: <options>', got "
            f"{item!r}",
            path,
            line,
        )
        return None
    ((tool, options),) = item.items()
    if not isinstance(tool, str) or not isinstance(options, Mapping):
        problems.add(
            codes.TOOL_CONSTRAINTS, f"the options of tool {tool!r} must be a mapping", path, line
        )
        return None
    unknown = sorted(str(key) for key in set(options) - _OPTIONS)
    if unknown:
        hints = "; ".join(_LEGACY_HINTS[key] for key in unknown if key in _LEGACY_HINTS)
        allowed = ", ".join(sorted(_OPTIONS))
        problems.add(
            codes.TOOL_CONSTRAINTS,
            f"tool {tool!r}: unknown options {unknown} (allowed: {allowed})"
            + (f"; {hints}" if hints else ""),
            path,
            line_of(options) or line,
        )
        return None
    requires = None
    if options.get("requires") is not None:
        requires = parse_at(
            options["requires"],
            f"tool {tool!r} requires",
            path,
            key_line(options, "requires"),
            problems,
        )
    return ToolConstraint(
        tool=tool,
        requires=requires,
        confirmation=_confirmation(tool, options, path, problems),
        on_success=_response_name(tool, options, "on_success", path, problems),
        on_failure=_response_name(tool, options, "on_failure", path, problems),
        line=line,
    )


def _confirmation(
    tool: str, options: Mapping[str, Any], path: str, problems: Problems
) -> Confirmation | None:
    raw = options.get("requires_confirmation")
    line = key_line(options, "requires_confirmation")
    if raw is None:
        return None
    complaint = None
    if not isinstance(raw, Mapping):
        complaint = "must be a mapping with 'enabled: true|false'"
    elif set(raw) - _CONFIRMATION_KEYS:
        complaint = f"has unknown keys {sorted(str(k) for k in set(raw) - _CONFIRMATION_KEYS)}"
    elif not isinstance(raw.get("enabled"), bool):
        complaint = "must say 'enabled: true' or 'enabled: false'"
    else:
        names = [raw.get(key) for key in ("utter_for_confirmation", "utter_on_user_denial")]
        if any(name is not None and not is_text(name) for name in names):
            complaint = "names responses as text"
    if complaint or not isinstance(raw, Mapping):
        problems.add(
            codes.TOOL_CONSTRAINTS, f"tool {tool!r}: requires_confirmation {complaint}", path, line
        )
        return None
    return Confirmation(
        raw["enabled"], raw.get("utter_for_confirmation"), raw.get("utter_on_user_denial")
    )


def _response_name(
    tool: str, options: Mapping[str, Any], key: str, path: str, problems: Problems
) -> str | None:
    value = options.get(key)
    if value is None:
        return None
    if not is_text(value):
        problems.add(
            codes.TOOL_CONSTRAINTS,
            f"tool {tool!r}: '{key}' must name a response",
            path,
            key_line(options, key),
        )
        return None
    return str(value).strip()


def parse_utter(
    raw: Any, data: Mapping[str, Any], path: str, problems: Problems
) -> tuple[UtterTrigger, ...]:
    """The ``utter`` triggers; malformed entries are reported and skipped."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(
            codes.UTTER_INVALID,
            "'utter' must be a list of '<response>: {on: activate, when: ...}'",
            path,
            key_line(data, "utter"),
        )
        return ()
    triggers = []
    for index, item in enumerate(raw):
        trigger = _trigger(item, path, line_of(item) or item_line(raw, index), problems)
        if trigger is not None:
            triggers.append(trigger)
    return tuple(triggers)


def _trigger(item: Any, path: str, line: int | None, problems: Problems) -> UtterTrigger | None:
    shape_ok = isinstance(item, Mapping) and len(item) == 1
    response, options = next(iter(item.items())) if shape_ok else (None, None)
    if not shape_ok or not is_text(response) or not isinstance(options, Mapping):
        problems.add(
            codes.UTTER_INVALID,
            f"each utter item is '<response>: {{on: activate, when: <condition>}}', got {item!r}",
            path,
            line,
        )
        return None
    unknown = sorted(str(key) for key in set(options) - {"on", "when"})
    on = options.get("on")
    if unknown or (on is not None and on != "activate") or not options:
        problems.add(
            codes.UTTER_INVALID,
            f"utter {response!r}: triggers are 'on: activate' and/or 'when: <condition>'"
            + (f" (unknown keys {unknown})" if unknown else ""),
            path,
            line_of(options) or line,
        )
        return None
    when = None
    if options.get("when") is not None:
        when = parse_at(
            options["when"], f"utter {response!r} when", path, key_line(options, "when"), problems
        )
    return UtterTrigger(str(response), on == "activate", when, line)
