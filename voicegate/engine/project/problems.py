"""Problems found while loading a project, collected so that every one can be reported.

``voicegate validate`` prints them all; :func:`~voicegate.engine.project.loader.load_project`
raises the first as a :class:`~voicegate.errors.ProjectError` carrying its code, file and line
(or as a :class:`~voicegate.errors.ToolDefinitionError` for a ``@tool`` declared against the
tools reference, the error the tool runtime itself raises).

A problem is an error or a warning. A warning marks a project written in a form voicegate
accepts but the contract no longer documents (e.g. the 3.19 inline ``llm:`` form, contract
§2.2 [drift]): the project still loads and runs; ``voicegate validate --strict`` fails on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from voicegate.errors import EngineError, ProjectError, ToolDefinitionError

T = TypeVar("T")

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a project: its code, what is wrong, and where."""

    code: str
    message: str
    path: str
    line: int | None = None
    tool_definition: bool = False
    severity: str = ERROR

    @property
    def is_error(self) -> bool:
        """Whether this problem stops the project from loading (a warning does not)."""
        return self.severity == ERROR

    def location(self, root: Path | None = None) -> str:
        """``path:line`` (``path`` relative to ``root`` when it lies inside it)."""
        path = self.path
        if root is not None and path and Path(path).is_relative_to(root):
            path = Path(path).relative_to(root).as_posix() or "."
        return f"{path}:{self.line}" if self.line is not None else path

    def error(self, also: int = 0) -> EngineError:
        """The exception that reports this problem; ``also`` counts further problems."""
        message = self.message
        if also:
            more = "problem" if also == 1 else "problems"
            message += f" (and {also} more {more}; `voicegate validate` lists them all)"
        if self.tool_definition:
            return ToolDefinitionError(f"{self.location()}: {message}")
        return ProjectError(message, code=self.code, path=self.path, line=self.line)


class Problems:
    """An ordered collection of problems, filled as the loader walks the project."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, code: str, message: str, path: Path | str, line: int | None = None) -> None:
        """Record one problem."""
        self.items.append(Problem(code, message, str(path), line))

    def warn(self, code: str, message: str, path: Path | str, line: int | None = None) -> None:
        """Record one warning: the project still loads."""
        self.items.append(Problem(code, message, str(path), line, severity=WARNING))

    @property
    def errors(self) -> list[Problem]:
        """The problems that stop the project from loading."""
        return [problem for problem in self.items if problem.is_error]

    def add_problem(self, problem: Problem) -> None:
        """Record a problem built elsewhere."""
        self.items.append(problem)

    def capture(self, code: str, path: Path | str, action: Callable[[], T]) -> T | None:
        """Run ``action``; a ProjectError it raises is recorded (under ``code`` when it has
        none) and None returned, so loading goes on with the next file."""
        try:
            return action()
        except ProjectError as error:
            message = str(error.args[0]) if error.args else str(error)
            self.items.append(
                Problem(
                    error.code or code,
                    _strip_location(message, error),
                    error.path or str(path),
                    error.line,
                )
            )
            return None


def _strip_location(message: str, error: ProjectError) -> str:
    # ProjectError prefixes its text with "path:line: "; a Problem keeps them apart.
    where = f"{error.path}:{error.line}" if error.path and error.line is not None else error.path
    prefix = f"{where}: "
    return message[len(prefix) :] if where and message.startswith(prefix) else message
