"""The steps of an ordered block (contract §6.2-§6.4).

A step's kind is the one kind key it carries. Every step has an ``id`` (``END`` is reserved
for the terminal step). Unknown keys are refused with a generic message naming the key; the
two removed collect keys get their migration messages (``force_collection`` ->
``ask_before_filling: true``; ``tool:`` -> ``set_fields`` with a ``run_after_setting_<entry>``
hook, or a separate ``execute_tool`` step). ``utter:`` on a collect step is refused with a hint
(Mantle would silently turn the step into an action step).

Also checked, as the contract infers from CALM (§6.4, §9.2 [inf]): duplicate step ids,
``next``/``then``/``else`` targets that name no step, ``else`` not last, a ``noop`` without
``next``, and a ``link`` step that is not last or has ``next``. A link may stand before an
``END`` step, or before a step that a ``next:`` jumps to (the end of one id-written branch).
Branch targets are step ids; nested step lists are refused (§11 question 18).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project import codes
from voicegate.engine.project.condition_sites import parse_at
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.prose import scan_tokens
from voicegate.engine.project.shapes import is_text, item_line, key_line, text_locator
from voicegate.engine.project.step_model import (
    END,
    ActionStep,
    Branch,
    CallStep,
    CollectStep,
    EndStep,
    ExecuteToolStep,
    InstructionsStep,
    LinkStep,
    NoopStep,
    ParameterValue,
    SetMemoryStep,
    Step,
)
from voicegate.engine.yamlfile import line_of

#: Each kind key and the keys a step of that kind may carry besides ``id`` and ``next``.
KIND_KEYS: dict[str, frozenset[str]] = {
    "instructions": frozenset({"complete_when"}),
    "collect": frozenset({"utterance", "ask_before_filling", "description"}),
    "action": frozenset(),
    "execute_tool": frozenset({"parameters"}),
    "noop": frozenset(),
    "set_memory": frozenset(),
    "call": frozenset(),
    "link": frozenset(),
}
_REMOVED_COLLECT_KEYS = {
    "force_collection": "'force_collection' was removed; use 'ask_before_filling: true'",
    "tool": (
        "'tool:' on a collect step was removed; record the value with the set_fields framework "
        "tool (optionally with a run_after_setting_<entry> hook in tools.py), or add a separate "
        "execute_tool step"
    ),
}


class _Site:
    """Where a step is: file, block, line; and the problems collector."""

    def __init__(self, path: str, block_id: str, line: int | None, problems: Problems) -> None:
        self.path = path
        self.block_id = block_id
        self.line = line
        self.problems = problems

    def report(self, code: str, message: str, line: int | None = None) -> None:
        """Record a problem of this block, at ``line`` or the step's line."""
        self.problems.add(code, f"block {self.block_id!r}: {message}", self.path, line or self.line)


def parse_steps(raw: list[Any], block_id: str, path: str, problems: Problems) -> tuple[Step, ...]:
    """The steps of one block, in order; malformed steps are reported and left out."""
    steps: list[Step] = []
    for index, item in enumerate(raw):
        site = _Site(path, block_id, line_of(item) or item_line(raw, index), problems)
        step = _step(item, site)
        if step is not None:
            steps.append(step)
    _check_structure(steps, _Site(path, block_id, None, problems))
    return tuple(steps)


def _id_problem(step_id: Any) -> str:
    """What is wrong with a step's ``id`` (contract §6.3: a string)."""
    if step_id is None:
        return "every step needs an 'id'"
    if isinstance(step_id, int | float) and not isinstance(step_id, bool):
        return f"step id {step_id!r} is a number; step ids are text: quote it ('{step_id}')"
    return f"step id {step_id!r} must be text"


def _step(item: Any, site: _Site) -> Step | None:
    if not isinstance(item, Mapping):
        site.report(
            codes.STEP_INVALID, f"a step is a mapping with an 'id' and one kind key, got {item!r}"
        )
        return None
    step_id = item.get("id")
    if not is_text(step_id):
        site.report(codes.STEP_INVALID, _id_problem(step_id))
        return None
    kinds = [key for key in KIND_KEYS if key in item]
    if step_id == END:
        return _end_step(item, kinds, site)
    if len(kinds) != 1:
        found = f"has {kinds}" if kinds else "has none"
        site.report(
            codes.STEP_INVALID,
            f"step {step_id!r} needs exactly one kind key ({', '.join(KIND_KEYS)}); it {found}",
        )
        return None
    if not _keys_valid(item, kinds[0], site):
        return None
    return _BUILDERS[kinds[0]](item, str(step_id), site)


def _end_step(item: Mapping[str, Any], kinds: list[str], site: _Site) -> EndStep | None:
    extra = sorted(str(key) for key in set(item) - {"id"})
    if extra:
        site.report(codes.UNKNOWN_STEP_KEY, f"the END step takes no other keys, found {extra}")
        return None
    return EndStep(END, site.line)


def _keys_valid(item: Mapping[str, Any], kind: str, site: _Site) -> bool:
    common = {"id"} if kind == "link" else {"id", "next"}
    allowed = common | {kind} | KIND_KEYS[kind]
    valid = True
    for key in sorted(set(item) - allowed, key=str):
        valid = False
        line = key_line(item, key)
        if kind == "collect" and key in _REMOVED_COLLECT_KEYS:
            site.report(codes.REMOVED_STEP_KEY, _REMOVED_COLLECT_KEYS[key], line)
        elif key == "routable":
            site.report(
                codes.ROUTABLE_IN_BLOCK, "'routable' cannot be set inside an ordered block", line
            )
        else:
            hint = (
                " (the question goes in 'utterance:')"
                if kind == "collect" and key == "utter"
                else ""
            )
            names = ", ".join(sorted(allowed))
            site.report(
                codes.UNKNOWN_STEP_KEY,
                f"step {item['id']!r} ({kind}): unknown key {key!r}{hint}; allowed: {names}",
                line,
            )
    return valid


def _text_value(
    item: Mapping[str, Any], key: str, site: _Site, required: bool = True
) -> str | None:
    value = item.get(key)
    if value is None and not required:
        return None
    if not is_text(value):
        site.report(
            codes.STEP_INVALID,
            f"step {item['id']!r}: '{key}' must be non-blank text",
            key_line(item, key),
        )
        return None
    return str(value).strip()


def _next(item: Mapping[str, Any], site: _Site) -> tuple[Branch, ...] | None:
    raw = item.get("next")
    line = key_line(item, "next")
    if raw is None:
        return ()
    if is_text(raw):
        return (Branch(str(raw).strip(), None, line),)
    if not isinstance(raw, list) or not raw:
        site.report(
            codes.STEP_INVALID,
            f"step {item['id']!r}: 'next' is a step id or a list of if/then and else branches",
            line,
        )
        return None
    branches = [
        _branch(entry, index == len(raw) - 1, site, line_of(entry) or item_line(raw, index))
        for index, entry in enumerate(raw)
    ]
    return tuple(branch for branch in branches if branch is not None) if all(branches) else None


def _branch(entry: Any, last: bool, site: _Site, line: int | None) -> Branch | None:
    if isinstance(entry, Mapping) and set(entry) == {"else"}:
        if not last:
            site.report(codes.STEP_INVALID, "'else' must be the last branch of 'next'", line)
            return None
        return _target(entry["else"], None, site, line)
    if not isinstance(entry, Mapping) or set(entry) != {"if", "then"}:
        site.report(
            codes.STEP_INVALID,
            f"a 'next' branch is {{if: <condition>, then: <step id>}} or {{else: <step id>}}, got "
            f"{entry!r}",
            line,
        )
        return None
    condition = parse_at(entry["if"], "next branch 'if'", site.path, line, site.problems)
    return _target(entry["then"], condition, site, line) if condition is not None else None


def _target(value: Any, condition: Any, site: _Site, line: int | None) -> Branch | None:
    if not is_text(value):
        site.report(
            codes.STEP_INVALID,
            f"branch targets are step ids (nested steps are not supported), got {value!r}",
            line,
        )
        return None
    return Branch(str(value).strip(), condition, line)


def _instructions(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    text = _text_value(item, "instructions", site)
    complete_when = None
    if item.get("complete_when") is not None:
        complete_when = parse_at(
            item["complete_when"],
            "complete_when",
            site.path,
            key_line(item, "complete_when"),
            site.problems,
        )
    next_ = _next(item, site)
    if text is None or next_ is None:
        return None
    tokens = scan_tokens(
        text,
        key_line(item, "instructions") or site.line or 1,
        site.path,
        site.problems,
        text_locator(item, "instructions", text),
    )
    return InstructionsStep(step_id, text, complete_when, tokens, next_, site.line)


def _collect(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    entry = _text_value(item, "collect", site)
    utterance = _text_value(item, "utterance", site, required=False)
    description = _text_value(item, "description", site, required=False)
    ask = item.get("ask_before_filling", False)
    if not isinstance(ask, bool):
        site.report(
            codes.STEP_INVALID,
            f"step {step_id!r}: 'ask_before_filling' must be true or false",
            key_line(item, "ask_before_filling"),
        )
        return None
    next_ = _next(item, site)
    if entry is None or next_ is None:
        return None
    return CollectStep(step_id, entry, utterance, ask, description, next_, site.line)


def _action(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    action, next_ = _text_value(item, "action", site), _next(item, site)
    return ActionStep(step_id, action, next_, site.line) if action and next_ is not None else None


def _execute_tool(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    tool, next_ = _text_value(item, "execute_tool", site), _next(item, site)
    parameters = _parameters(item, site)
    if tool is None or next_ is None or parameters is None:
        return None
    return ExecuteToolStep(step_id, tool, parameters, next_, site.line)


def _parameters(item: Mapping[str, Any], site: _Site) -> dict[str, ParameterValue] | None:
    raw = item.get("parameters")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(key, str) for key in raw):
        site.report(
            codes.STEP_INVALID,
            f"step {item['id']!r}: 'parameters' maps argument names to values",
            key_line(item, "parameters"),
        )
        return None
    return {name: ParameterValue(value, _binding(value)) for name, value in raw.items()}


def _binding(value: Any) -> FieldRef | None:
    if not isinstance(value, str):
        return None
    parts = value.strip().split(".")
    if len(parts) == 3 and parts[0] == "session" and all(parts):
        return FieldRef(parts[1], parts[2])
    return None


def _noop(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    next_ = _next(item, site)
    if item["noop"] is not True:
        site.report(
            codes.STEP_INVALID, f"step {step_id!r}: write 'noop: true'", key_line(item, "noop")
        )
        return None
    if next_ == ():
        site.report(codes.STEP_INVALID, f"noop step {step_id!r} needs 'next' (it only routes)")
        return None
    return NoopStep(step_id, next_, site.line) if next_ is not None else None


def _set_memory(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    values, next_ = item["set_memory"], _next(item, site)
    if not isinstance(values, Mapping) or not values or not all(is_text(key) for key in values):
        site.report(
            codes.STEP_INVALID,
            f"step {step_id!r}: 'set_memory' maps entry names to literal values",
            key_line(item, "set_memory"),
        )
        return None
    return SetMemoryStep(step_id, dict(values), next_, site.line) if next_ is not None else None


def _call(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    target, next_ = _text_value(item, "call", site), _next(item, site)
    return CallStep(step_id, target, next_, site.line) if target and next_ is not None else None


def _link(item: Mapping[str, Any], step_id: str, site: _Site) -> Step | None:
    target = _text_value(item, "link", site)
    return LinkStep(step_id, target, site.line) if target else None


_BUILDERS: dict[str, Callable[[Mapping[str, Any], str, _Site], Step | None]] = {
    "instructions": _instructions,
    "collect": _collect,
    "action": _action,
    "execute_tool": _execute_tool,
    "noop": _noop,
    "set_memory": _set_memory,
    "call": _call,
    "link": _link,
}


def _check_structure(steps: list[Step], site: _Site) -> None:
    seen: dict[str, int | None] = {}
    for step in steps:
        if step.step_id in seen and step.step_id != END:
            site.report(
                codes.DUPLICATE_STEP_ID, f"step id {step.step_id!r} is used twice", step.line
            )
        seen.setdefault(step.step_id, step.line)
    targets = {branch.target for step in steps for branch in getattr(step, "next", ())}
    for position, step in enumerate(steps):
        following = steps[position + 1] if position + 1 < len(steps) else None
        # A link never falls through. The step after it runs only when a next: jumps to it,
        # as a branch written with step ids does (no nested lists, §11 question 18).
        if (
            isinstance(step, LinkStep)
            and following is not None
            and not isinstance(following, EndStep)
            and following.step_id not in targets
        ):
            site.report(
                codes.STEP_INVALID,
                f"link step {step.step_id!r} must be the last step: step "
                f"{following.step_id!r} after it is the target of no next:, so it never runs",
                step.line,
            )
        for branch in getattr(step, "next", ()):
            if branch.target != END and branch.target not in seen:
                site.report(
                    codes.UNKNOWN_STEP_TARGET,
                    f"step {step.step_id!r} goes to {branch.target!r}, which is no step of this "
                    "block",
                    branch.line or step.line,
                )
