"""``responses.yml`` files: named responses and their variants (contract §2.7).

A file is ``responses: {<name>: [<variant>, ...]}``. A variant is a plain string or a mapping
with ``text`` (required, non-empty), ``condition``, ``metadata`` and ``buttons``; any other key
(``channel:`` included) is refused. When any variant has a ``condition``, exactly one must omit
it (the default). Placeholders ``{session.<ns>.<entry>}`` and bare ``{entry}`` must name
readable memory; so must conditions. Buttons are a list of ``{title, payload}`` or
``{source: <tool>}`` (checked against the tools once they are known).

voicegate's choices: a name declared in two files is refused (names are global, so a clash is
almost always an accident); ``set:`` button values are coerced at load with the field's type
(§11 question 7): ``bool`` takes ``true``/``false``, ``int``/``float`` a number,
``categorical`` one of its ``enum_values``, ``list``/``json`` JSON text, ``text`` and ``any``
the text as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from voicegate.engine.conditions import Condition
from voicegate.engine.memory.fields import FieldType, MemoryField
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project import codes
from voicegate.engine.project.condition_sites import parse_at
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.response_model import (
    END_CALL,
    ENGINE_PLACEHOLDERS,
    TRANSFER_TO,
    ButtonSource,
    Placeholder,
    Response,
    SetPayload,
    StaticButton,
    Variant,
)
from voicegate.engine.project.scope import UNDECLARED, ReadScope
from voicegate.engine.project.shapes import is_text, item_line, key_line, text_locator
from voicegate.engine.yamlfile import line_of

_VARIANT_KEYS = frozenset({"text", "condition", "metadata", "buttons"})
_PLACEHOLDER = re.compile(r"\{(?P<body>[A-Za-z_][\w.-]*)\}")
_SET_PAYLOAD = re.compile(r"^set:session\.(?P<ns>[\w-]+)\.(?P<entry>\w+)=(?P<value>.*)$", re.DOTALL)
_TOP_LEVEL = frozenset({"responses", "version"})


class _File:
    """The file being read: path, owner skill, readable scope and the problems collector."""

    def __init__(self, path: str, scope: ReadScope, problems: Problems) -> None:
        self.path = path
        self.scope = scope
        self.problems = problems

    def report(self, code: str, message: str, line: int | None) -> None:
        """Record a problem in this file."""
        self.problems.add(code, message, self.path, line)


def parse_responses(
    data: Any, path: str, scope: ReadScope, problems: Problems
) -> dict[str, Response]:
    """The responses a file declares; malformed ones are reported and left out."""
    file = _File(path, scope, problems)
    if data is None:
        return {}
    if not isinstance(data, Mapping) or set(data) - _TOP_LEVEL:
        file.report(
            codes.RESPONSE_INVALID,
            "responses.yml holds one 'responses:' mapping of response names",
            line_of(data),
        )
        return {}
    entries = data.get("responses") or {}
    if not isinstance(entries, Mapping):
        file.report(
            codes.RESPONSE_INVALID,
            "'responses' must map response names to lists of variants",
            key_line(data, "responses"),
        )
        return {}
    responses = {}
    for name, variants in entries.items():
        response = _response(str(name), variants, key_line(entries, name), file)
        if response is not None:
            responses[response.name] = response
    return responses


def _response(name: str, raw: Any, line: int | None, file: _File) -> Response | None:
    if not isinstance(raw, list) or not raw:
        file.report(
            codes.RESPONSE_INVALID, f"response {name!r} must be a non-empty list of variants", line
        )
        return None
    variants = [
        _variant(name, item, line_of(item) or item_line(raw, index) or line, file)
        for index, item in enumerate(raw)
    ]
    if not all(variants):
        return None
    kept = tuple(variant for variant in variants if variant is not None)
    defaults = sum(variant.condition is None for variant in kept)
    if defaults != len(kept) and defaults != 1:
        file.report(
            codes.RESPONSE_DEFAULT_VARIANT,
            f"response {name!r} has conditioned variants, so exactly one variant must omit "
            f"'condition' (the default); it has {defaults}",
            line,
        )
        return None
    return Response(name, kept, file.path, line, file.scope.skill_id)


def _variant(name: str, item: Any, line: int | None, file: _File) -> Variant | None:
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, Mapping):
        file.report(
            codes.RESPONSE_INVALID,
            f"response {name!r}: a variant is text or a mapping with 'text'",
            line,
        )
        return None
    unknown = sorted(str(key) for key in set(item) - _VARIANT_KEYS)
    if unknown:
        file.report(
            codes.RESPONSE_UNKNOWN_KEY,
            f"response {name!r}: unknown variant keys {unknown} (allowed: buttons, condition, "
            "metadata, text)",
            line,
        )
        return None
    text = item.get("text")
    if not is_text(text):
        file.report(
            codes.RESPONSE_EMPTY_TEXT,
            f"response {name!r}: every variant needs non-empty 'text'",
            key_line(item, "text"),
        )
        return None
    condition = _condition(name, item, file)
    metadata = _metadata(name, item, file)
    buttons_ok, buttons = _buttons(name, item, file)
    placeholders = _placeholders(
        name, str(text), key_line(item, "text"), file, text_locator(item, "text", str(text))
    )
    condition_ok = item.get("condition") is None or condition is not None
    if metadata is None or placeholders is None or not buttons_ok or not condition_ok:
        return None
    return Variant(str(text), condition, metadata, buttons, placeholders, line)


def _condition(name: str, item: Mapping[str, Any], file: _File) -> Condition | None:
    if item.get("condition") is None:
        return None
    line = key_line(item, "condition")
    condition = parse_at(
        item["condition"],
        f"response {name!r} condition",
        file.path,
        line,
        file.problems,
        codes.RESPONSE_INVALID_CONDITION,
    )
    if condition is None:
        return None
    for ref in condition.references():
        complaint = file.scope.complaint(ref)
        if complaint:
            file.report(
                codes.RESPONSE_UNREADABLE_MEMORY,
                f"response {name!r} condition: {complaint[1]}",
                line,
            )
            return None
    return condition


def _metadata(name: str, item: Mapping[str, Any], file: _File) -> Mapping[str, Any] | None:
    metadata = item.get("metadata") or {}
    if not _metadata_valid(metadata):
        file.report(
            codes.RESPONSE_INVALID,
            f"response {name!r}: 'metadata' is a mapping (rephrase: true|false, "
            f"{END_CALL}: true|false, {TRANSFER_TO}: a phone number or SIP URI; not both)",
            key_line(item, "metadata"),
        )
        return None
    return metadata


def _metadata_valid(metadata: object) -> bool:
    if not isinstance(metadata, Mapping):
        return False
    flags_ok = all(isinstance(metadata.get(key, False), bool) for key in ("rephrase", END_CALL))
    transfer = metadata.get(TRANSFER_TO)
    transfer_ok = transfer is None or (isinstance(transfer, str) and transfer.strip() != "")
    return flags_ok and transfer_ok and not (metadata.get(END_CALL) and transfer)


def _placeholders(
    name: str,
    text: str,
    line: int | None,
    file: _File,
    locate: Callable[[int], int | None] | None = None,
) -> tuple[Placeholder, ...] | None:
    found = []
    for match in _PLACEHOLDER.finditer(text):
        if match["body"] in ENGINE_PLACEHOLDERS.get(name, ()):
            continue  # the engine fills it (``{skill}`` in a reworded resume offer)
        placeholder = _placeholder(match["body"], match.group())
        problem = _placeholder_problem(placeholder, file.scope)
        if problem:
            file.report(
                codes.RESPONSE_UNREADABLE_MEMORY,
                f"response {name!r}: placeholder {match.group()} {problem}",
                (locate(match.start()) if locate else None) or line,
            )
            return None
        found.append(placeholder)
    return tuple(found)


def _placeholder(body: str, text: str) -> Placeholder:
    parts = body.split(".")
    if len(parts) == 3 and parts[0] == "session":
        return Placeholder(text, FieldRef(parts[1], parts[2]), None)
    return Placeholder(text, None, body)


def _placeholder_problem(placeholder: Placeholder, scope: ReadScope) -> str | None:
    if placeholder.ref is not None:
        complaint = scope.complaint(placeholder.ref)
        return f"cannot be read: {complaint[1]}" if complaint else None
    entry = placeholder.entry or ""
    if "." in entry:
        return (
            "is malformed: write {session.<skill_id>.<entry>}, {session.project.<entry>} or {entry}"
        )
    if scope.skill_id in scope.unjudged or scope.bare(entry) is not None:
        return None
    return "names no readable memory field"


ButtonsValue = tuple[StaticButton, ...] | ButtonSource | None


def _buttons(name: str, item: Mapping[str, Any], file: _File) -> tuple[bool, ButtonsValue]:
    """``(ok, buttons)``: ``ok`` is False when the buttons are malformed (and reported)."""
    raw = item.get("buttons")
    line = key_line(item, "buttons")
    if raw is None:
        return True, None
    if isinstance(raw, Mapping):
        if set(raw) == {"source"} and is_text(raw["source"]):
            return True, ButtonSource(str(raw["source"]).strip())
        file.report(
            codes.RESPONSE_INVALID_BUTTONS,
            f"response {name!r}: dynamic buttons are written 'buttons: {{source: <tool>}}'",
            line,
        )
        return False, None
    if not isinstance(raw, list) or not raw:
        file.report(
            codes.RESPONSE_INVALID_BUTTONS,
            f"response {name!r}: 'buttons' is a list of {{title, payload}} or {{source: <tool>}}",
            line,
        )
        return False, None
    buttons = [
        _button(name, button, line_of(button) or item_line(raw, index), file)
        for index, button in enumerate(raw)
    ]
    kept = tuple(button for button in buttons if button is not None)
    return len(kept) == len(buttons), kept


def _button(name: str, raw: Any, line: int | None, file: _File) -> StaticButton | None:
    if (
        not isinstance(raw, Mapping)
        or set(raw) - {"title", "payload"}
        or not is_text(raw.get("title"))
    ):
        file.report(
            codes.RESPONSE_INVALID_BUTTONS,
            f"response {name!r}: a button is {{title: <text>, payload: <text>}} (title required), "
            f"got {raw!r}",
            line,
        )
        return None
    payload = raw.get("payload")
    if payload is not None and not isinstance(payload, str):
        file.report(
            codes.RESPONSE_INVALID_BUTTONS, f"response {name!r}: button payload must be text", line
        )
        return None
    placeholders = _placeholders(name, str(raw["title"]), line, file)
    set_payload = None
    if payload and payload.startswith("set:"):
        set_payload = _set_payload(name, payload, key_line(raw, "payload"), file)
        if set_payload is None:
            return None
    if placeholders is None:
        return None
    return StaticButton(str(raw["title"]), payload, set_payload, placeholders)


def _set_payload(name: str, payload: str, line: int | None, file: _File) -> SetPayload | None:
    match = _SET_PAYLOAD.match(payload)
    if match is None:
        file.report(
            codes.RESPONSE_INVALID_SET_PAYLOAD,
            f"response {name!r}: {payload!r} is not set:session.<skill_id|project>.<entry>=<value>",
            line,
        )
        return None
    ref = FieldRef(match["ns"], match["entry"])
    complaint = file.scope.complaint(ref)
    if (complaint and complaint[0] == UNDECLARED) or ref.namespace == "system":
        message = complaint[1] if complaint else "system memory cannot be set"
        file.report(
            codes.RESPONSE_INVALID_SET_TARGET,
            f"response {name!r}: button sets {ref.qualified}, but {message}",
            line,
        )
        return None
    declared = file.scope.schema.field(ref)
    if declared is None:  # an unjudged namespace: keep the text as written
        return SetPayload(ref, match["value"], match["value"])
    value, problem = coerce_button_value(declared, match["value"])
    if problem:
        file.report(
            codes.RESPONSE_INVALID_SET_PAYLOAD,
            f"response {name!r}: button value for {ref.qualified} {problem}",
            line,
        )
        return None
    return SetPayload(ref, match["value"], value)


def coerce_button_value(declared: MemoryField, raw: str) -> tuple[Any, str | None]:
    """The value a ``set:`` payload writes into ``declared``, or a reason it cannot."""
    text = raw.strip()
    kind = declared.type
    try:
        if kind is FieldType.BOOL:
            if text.lower() not in ("true", "false"):
                return None, f"must be true or false, got {raw!r}"
            return text.lower() == "true", None
        if kind is FieldType.INT:
            return int(text), None
        if kind is FieldType.FLOAT:
            return float(text), None
        if kind in (FieldType.LIST, FieldType.JSON):
            value = json.loads(text)
            if kind is FieldType.LIST and not isinstance(value, list):
                return None, f"must be a JSON list, got {raw!r}"
            return value, None
    except ValueError:
        return None, f"{raw!r} is not a valid {kind.value} value"
    if kind is FieldType.CATEGORICAL and declared.enum_values:
        matches = [option for option in declared.enum_values if str(option) == text]
        if not matches:
            return None, f"{raw!r} is not one of {list(declared.enum_values)}"
        return matches[0], None
    return raw, None
