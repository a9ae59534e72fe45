"""The ``@`` tokens of prose and block instructions (contract §2.6)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from voicegate.engine.memory.schema import FieldRef


class TokenKind(enum.Enum):
    """The ``@`` tokens of prose (contract §2.6)."""

    MEMORY = "memory"
    BLOCK = "block"
    SKILL = "skill"


@dataclass(frozen=True, slots=True)
class ProseToken:
    """An ``@memory.<ns>.<entry>``, ``@block.<id>`` or ``@skill.<id>`` token in a text.

    ``start``/``end`` index the token in the text it was found in; ``ref`` is set for memory
    tokens, ``target`` is the block or skill id otherwise; ``line`` is the file line.
    """

    kind: TokenKind
    text: str
    start: int
    end: int
    target: str = ""
    ref: FieldRef | None = None
    line: int | None = None
