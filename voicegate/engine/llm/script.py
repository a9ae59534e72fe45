"""The scripted model's file format: turn by turn, what the model says and which tools it calls.

See ``docs/scripted-llm.md``. A file is a mapping with ``turns:``; each turn optionally matches
the user's input (``user:`` exact text, ``user_matches:`` a regular expression) and lists its
model ``steps:`` (or, for a one-step turn, ``say:``/``calls:`` directly). Every step but the last
must call a tool: a step without tool calls ends the model's turn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicegate.engine.yamlfile import line_of, parse_yaml
from voicegate.errors import ConfigError, ProjectError

_TURN_KEYS = frozenset({"user", "user_matches", "steps", "say", "calls"})
_STEP_KEYS = frozenset({"say", "calls"})


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One tool call the model makes."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScriptStep:
    """One model step: text to stream, then tool calls."""

    say: str = ""
    calls: tuple[ScriptedCall, ...] = ()
    line: int = 0


@dataclass(frozen=True, slots=True)
class ScriptTurn:
    """The model's side of one user turn."""

    steps: tuple[ScriptStep, ...]
    user: str | None = None
    user_pattern: re.Pattern[str] | None = None
    line: int = 0

    def matches(self, user_text: str) -> bool:
        """Whether this turn applies to what the user said."""
        if self.user is not None and normalise(self.user) != normalise(user_text):
            return False
        return self.user_pattern is None or self.user_pattern.search(user_text) is not None

    def expectation(self) -> str:
        """How this turn's matcher reads in an error message."""
        parts = []
        if self.user is not None:
            parts.append(f"user: {self.user!r}")
        if self.user_pattern is not None:
            # As written in the file, not repr()'s doubled backslashes.
            parts.append(f"user_matches: /{self.user_pattern.pattern}/")
        return " and ".join(parts) or "any input"


@dataclass(frozen=True, slots=True)
class Script:
    """A whole scripted conversation."""

    turns: tuple[ScriptTurn, ...]
    path: str = "<script>"


def normalise(text: str) -> str:
    """Text compared by ``user:``: case, runs of spaces and closing punctuation ignored."""
    return " ".join(text.lower().split()).rstrip(".!?…").strip()


def load_script(path: Path) -> Script:
    """Read a script file; a malformed one raises ConfigError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
        return parse_script(parse_yaml(text, str(path)), str(path))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the script: {error}") from None
    except ProjectError as error:
        raise ConfigError(str(error)) from None


def parse_script(data: Any, path: str = "<script>") -> Script:
    """Build a script from parsed YAML."""
    if not isinstance(data, Mapping) or not isinstance(data.get("turns"), list):
        raise _error(path, line_of(data), "a script is a mapping with a 'turns:' list")
    return Script(tuple(_turn(raw, path) for raw in data["turns"]), path)


def _turn(raw: Any, path: str) -> ScriptTurn:
    line = line_of(raw)
    if not isinstance(raw, Mapping):
        raise _error(path, line, "each turn is a mapping (user:, steps: or say:/calls:)")
    _no_unknown_keys(raw, _TURN_KEYS, path, line, "turn")
    if "steps" in raw and ("say" in raw or "calls" in raw):
        raise _error(path, line, "write either 'steps:' or 'say:'/'calls:' in a turn, not both")
    if "steps" in raw:
        if not isinstance(raw["steps"], list) or not raw["steps"]:
            raise _error(path, line, "'steps:' must be a non-empty list")
        steps = tuple(_step(item, path) for item in raw["steps"])
    else:
        steps = (_step(raw, path, keys=_TURN_KEYS),)
    for step in steps[:-1]:
        if not step.calls:
            raise _error(
                path,
                step.line,
                "only the last step of a turn may be without 'calls:' (text alone ends the "
                "model's turn); start a new turn for what follows",
            )
    user = raw.get("user")
    if user is not None and not isinstance(user, str):
        raise _error(path, line, "'user:' must be text")
    return ScriptTurn(steps, user, _pattern(raw.get("user_matches"), path, line), line or 0)


def _step(raw: Any, path: str, keys: frozenset[str] = _STEP_KEYS) -> ScriptStep:
    line = line_of(raw)
    if not isinstance(raw, Mapping):
        raise _error(path, line, "each step is a mapping with 'say:' and/or 'calls:'")
    _no_unknown_keys(raw, keys, path, line, "step")
    say = raw.get("say") or ""
    if not isinstance(say, str):
        raise _error(path, line, "'say:' must be text")
    calls = tuple(_call(item, path, line) for item in raw.get("calls") or ())
    if not say.strip() and not calls:
        raise _error(path, line, "a step needs 'say:' text or 'calls:'")
    return ScriptStep(say.strip(), calls, line or 0)


def _call(raw: Any, path: str, line: int | None) -> ScriptedCall:
    if isinstance(raw, str):
        return ScriptedCall(raw)
    if isinstance(raw, Mapping) and len(raw) == 1:
        ((name, arguments),) = raw.items()
        if isinstance(name, str) and (arguments is None or isinstance(arguments, Mapping)):
            return ScriptedCall(name, dict(arguments or {}))
    raise _error(
        path,
        line_of(raw) or line,
        "each call is a tool name or a single-key mapping 'tool_name: {argument: value}'",
    )


def _pattern(raw: Any, path: str, line: int | None) -> re.Pattern[str] | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise _error(path, line, "'user_matches:' must be a regular expression")
    try:
        return re.compile(raw, re.IGNORECASE)
    except re.error as error:
        message = f"'user_matches:' is not a valid regular expression: {error}"
        raise _error(path, line, message) from None


def _no_unknown_keys(
    raw: Mapping[str, Any], allowed: frozenset[str], path: str, line: int | None, what: str
) -> None:
    unknown = sorted(str(key) for key in raw if key not in allowed)
    if unknown:
        raise _error(path, line, f"unknown {what} keys {unknown} (allowed: {sorted(allowed)})")


def _error(path: str, line: int | None, message: str) -> ConfigError:
    where = f"{path}:{line}" if line else path
    return ConfigError(f"{where}: {message}")
