"""Parsing a condition found in a project file, reporting problems with file and line.

Every ``requires``, ``complete_when``, ``if:``, ``when:``, ``next:`` branch and response
``condition`` goes through :func:`parse_at` when the project loads (contract §3.1), so a
malformed expression fails the load instead of hiding a tool at run time.
"""

from __future__ import annotations

from typing import Any

from voicegate.engine.conditions import Condition, parse_condition
from voicegate.engine.project import codes
from voicegate.engine.project.problems import Problems
from voicegate.errors import ConditionError


def parse_at(
    text: Any,
    what: str,
    path: str,
    line: int | None,
    problems: Problems,
    code: str | None = None,
) -> Condition | None:
    """Parse ``text`` as the condition ``what``; None (and a problem) when it is not one.

    ``code`` overrides the condition codes (responses report their own family).
    """
    if not isinstance(text, str):
        problems.add(
            code or codes.CONDITION_INVALID,
            f'{what} must be a condition string such as "session.project.authenticated", '
            f"got {type(text).__name__} {text!r}",
            path,
            line,
        )
        return None
    try:
        return parse_condition(text)
    except ConditionError as error:
        default = (
            codes.CONDITION_UNKNOWN_NAME if error.name is not None else codes.CONDITION_INVALID
        )
        problems.add(code or default, f"{what} {text.strip()!r}: {error}", path, line)
        return None
