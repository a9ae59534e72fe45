"""Prose in ``skill.md``: paragraphs, ``if:`` markers and ``@`` tokens (contract §2.6).

- A paragraph is a run of non-blank lines; blank lines (and ordered-block fences) separate
  them. A paragraph whose first line starts with ``if:`` is scoped by the condition on the
  rest of that one line (YAML folding does not apply). ``else:``/``elif`` markers do not exist
  and fail.
- ``@memory.<namespace>.<entry>``, ``@block.<id>`` and ``@skill.<id>`` tokens are recorded
  with their positions; incomplete forms such as ``@memory.project`` and ``@memory.system.*``
  fail. Whether a referenced field, block or skill exists is checked once the whole project
  is known (:mod:`~voicegate.engine.project.checks`).
- Bare ``session.<namespace>.<entry>`` in free text fails: prose uses ``@memory`` tokens.
  Only the three-segment shape is flagged, so ordinary words such as "session." pass.

:func:`render_tokens` performs the prompt-time substitution of ``@memory`` tokens, with the
PII rule: a set PII field replaces the whole token with ``[set]``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

from voicegate.engine.memory.fields import SYSTEM, MemoryField
from voicegate.engine.memory.render import render_value
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project import codes
from voicegate.engine.project.condition_sites import parse_at
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.skill_model import Paragraph
from voicegate.engine.project.token_model import ProseToken, TokenKind

log = logging.getLogger(__name__)

_SEGMENT = r"\.[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*"
_TOKEN = re.compile(rf"(?<![\w@.])@(?P<kind>memory|block|skill)(?P<segments>(?:{_SEGMENT})*)")
_BARE_SESSION = re.compile(r"(?<![\w.@{])session\.[A-Za-z0-9_-]+\.[A-Za-z_]\w*")
_NO_MARKERS = re.compile(r"^(?:else\s*:|elif\b)")
_FOLDING = frozenset({">", "|", ">-", "|-", ">+", "|+"})

#: Reads a field's current value and declaration (None, None when unknown).
FieldReader = Callable[[FieldRef], tuple[Any, MemoryField | None]]


def parse_paragraphs(
    lines: Sequence[tuple[int, str]], path: str, problems: Problems
) -> list[Paragraph]:
    """The paragraphs of prose lines given as ``(file line, text)`` pairs."""
    paragraphs = []
    for group in _groups(lines):
        paragraph = _paragraph(group, path, problems)
        if paragraph is not None:
            paragraphs.append(paragraph)
    return paragraphs


def _groups(lines: Sequence[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    groups: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    previous = None
    for number, text in lines:
        contiguous = previous is not None and number == previous + 1
        if not text.strip() or (current and not contiguous):
            if current:
                groups.append(current)
            current = []
        if text.strip():
            current.append((number, text))
        previous = number
    if current:
        groups.append(current)
    return groups


def _paragraph(group: list[tuple[int, str]], path: str, problems: Problems) -> Paragraph | None:
    first_line, first = group[0]
    head = first.strip()
    if _NO_MARKERS.match(head):
        problems.add(
            codes.MARKER_INVALID,
            "there is no else:/elif: marker; write the other case as its own 'if:' paragraph",
            path,
            first_line,
        )
        return None
    if not head.startswith("if:"):
        text = "\n".join(line for _, line in group)
        return Paragraph(text, first_line, None, scan_tokens(text, first_line, path, problems))
    condition_text = head[3:].strip()
    rest = group[1:]
    if not rest:
        problems.add(
            codes.MARKER_INVALID,
            "an 'if:' paragraph needs text on the lines below the condition",
            path,
            first_line,
        )
        return None
    if condition_text in _FOLDING:
        problems.add(
            codes.CONDITION_INVALID,
            f"'if: {condition_text}' is not a condition: write the whole condition on the if: line "
            "(YAML folding does not apply in prose)",
            path,
            first_line,
        )
        return None
    condition = parse_at(condition_text, "if:", path, first_line, problems)
    text = "\n".join(line for _, line in rest)
    tokens = scan_tokens(text, rest[0][0], path, problems)
    return Paragraph(text, first_line, condition, tokens) if condition else None


def scan_tokens(
    text: str,
    first_line: int,
    path: str,
    problems: Problems,
    locate: Callable[[int], int | None] | None = None,
) -> tuple[ProseToken, ...]:
    """The ``@`` tokens of ``text`` (which starts on ``first_line``); malformed ones reported.

    ``locate`` maps an offset in ``text`` to its source line, for text read from YAML where
    line breaks do not match the file's (block scalars, issue 17).
    """

    def line_at(offset: int) -> int:
        found = locate(offset) if locate is not None else None
        return found or first_line + text.count("\n", 0, offset)

    for match in _BARE_SESSION.finditer(text):
        problems.add(
            codes.BARE_SESSION_REFERENCE,
            f"bare {match.group()!r} in prose: write @memory.{match.group()[len('session.') :]} "
            "(session.* belongs in conditions and structured YAML)",
            path,
            line_at(match.start()),
        )
    tokens = []
    for match in _TOKEN.finditer(text):
        line = line_at(match.start())
        token = _token(match, line, path, problems)
        if token is not None:
            tokens.append(token)
    return tuple(tokens)


def _token(match: re.Match[str], line: int, path: str, problems: Problems) -> ProseToken | None:
    kind = TokenKind(match["kind"])
    segments = match["segments"].split(".")[1:]
    text = match.group()
    if kind is TokenKind.MEMORY:
        if len(segments) != 2:
            problems.add(
                codes.MEMORY_TOKEN_INVALID,
                f"{text!r} is incomplete: write @memory.<skill_id>.<entry> or "
                "@memory.project.<entry>",
                path,
                line,
            )
            return None
        if segments[0] == SYSTEM:
            problems.add(
                codes.MEMORY_TOKEN_INVALID,
                f"{text!r}: system memory is not readable in prose",
                path,
                line,
            )
            return None
        ref = FieldRef(segments[0], segments[1])
        return ProseToken(kind, text, match.start(), match.end(), ref.qualified, ref, line)
    if len(segments) != 1:
        code = (
            codes.UNKNOWN_BLOCK_REFERENCE
            if kind is TokenKind.BLOCK
            else codes.UNKNOWN_SKILL_REFERENCE
        )
        problems.add(code, f"{text!r} is incomplete: write @{kind.value}.<id>", path, line)
        return None
    return ProseToken(kind, text, match.start(), match.end(), segments[0], None, line)


def render_tokens(text: str, tokens: Sequence[ProseToken], read: FieldReader) -> str:
    """``text`` with each set ``@memory`` token replaced by its value (PII: ``[set]``).

    An unset or unknown field leaves the token as written, and is logged (skill.md reference).
    """
    pieces = []
    position = 0
    for token in sorted(tokens, key=lambda item: item.start):
        if token.kind is not TokenKind.MEMORY or token.ref is None:
            continue
        value, declared = read(token.ref)
        if value is None:
            log.info("%s is unset; left as written", token.text)
            continue
        pieces += [text[position : token.start], render_value(value, declared)]
        position = token.end
    pieces.append(text[position:])
    return "".join(pieces)
