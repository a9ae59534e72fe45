"""Static inspection of tool source for memory writes (tools reference; contract §4.3, §9.2).

Like ``rasa train``, every literal ``<context>.memory.set("<name>", ...)`` call in a tool
module is checked against the ``memory.yml`` declarations: a name the tool could not write at
run time fails with ``undeclared_memory_write`` (undeclared, another skill's field, the
``system`` namespace, a ``session.`` prefix). A call whose name is not a string literal cannot
be judged and is left alone. Calling anything on ``<context>.memory`` other than ``get`` and
``set`` (the internal memory manager, clearing APIs) is refused: clear a field with
``set(name, None)``.

A skill-local module is checked with its skill active. In a shared module each write is judged
where it can run: a ``@tool`` function's writes (and those of the module-level helpers it
reaches, by name, transitively) under every skill that imports THAT tool, not every skill that
imports some tool of the module (issue 17: a shared ``banking.py`` whose ``check_payee_exists``
writes ``payee_exists`` is fine for a skill that imports only ``list_accounts``). A write no
imported tool reaches (an unimported tool, module-level code) is checked against the project
and every skill's fields.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from voicegate.engine.memory.schema import MemorySchema
from voicegate.engine.project import codes
from voicegate.engine.project.problems import Problems
from voicegate.errors import MemoryWriteError

_MEMORY_API = frozenset({"get", "set"})


@dataclass(frozen=True, slots=True)
class MemoryCall:
    """One call on ``<x>.memory``: the method, the literal name (if any) and the line."""

    method: str
    name: str | None
    line: int


def memory_calls(source: str, filename: str) -> list[MemoryCall]:
    """Every ``<x>.memory.<method>(...)`` call in ``source``."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return []  # the import already failed and was reported
    return list(_calls(tree))


def _calls(tree: ast.AST) -> Iterator[MemoryCall]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Attribute) and owner.attr == "memory"):
            continue
        # The name is the first argument, or ``name=`` (ToolContext memory's ``set(name, value)``).
        named = [keyword.value for keyword in node.keywords if keyword.arg == "name"]
        first = node.args[0] if node.args else (named[0] if named else None)
        literal = (
            first.value
            if isinstance(first, ast.Constant) and isinstance(first.value, str)
            else None
        )
        yield MemoryCall(node.func.attr, literal, node.lineno)


def function_calls(source: str, filename: str) -> dict[str | None, list[MemoryCall]]:
    """The memory calls of each top-level function or class, by name (None: other code)."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return {}
    found: dict[str | None, list[MemoryCall]] = {}
    for node in tree.body:
        unit = node.name if isinstance(node, _UNITS) else None
        found.setdefault(unit, []).extend(_calls(node))
    return found


def reached_units(source: str, filename: str, start: str) -> set[str]:
    """The top-level functions and classes ``start`` reaches by name, itself included."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return {start}
    units = {node.name: node for node in tree.body if isinstance(node, _UNITS)}
    reached, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name in reached or name not in units:
            continue
        reached.add(name)
        todo += [n.id for n in ast.walk(units[name]) if isinstance(n, ast.Name) and n.id in units]
    return reached


_UNITS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def check_shared_module_writes(
    path: Path,
    schema: MemorySchema,
    importers: Mapping[str, Sequence[str]],
    problems: Problems,
) -> None:
    """Report the undeclared writes of a shared module, each judged under the skills that
    import a tool reaching it (``importers``: tool name -> importing skill ids)."""
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    runs_as: dict[str | None, dict[str, None]] = {}  # unit -> importing skills, in order
    for tool, skills in importers.items():
        for unit in reached_units(source, str(path), tool) if skills else set():
            runs_as.setdefault(unit, {}).update(dict.fromkeys(skills))
    for name, calls in function_calls(source, str(path)).items():
        under: list[str | None] = [*runs_as.get(name, {})] or [None]
        _report(calls, path, schema, under, problems)


def check_module_writes(
    path: Path, schema: MemorySchema, skills: Sequence[str | None], problems: Problems
) -> None:
    """Report undeclared writes and forbidden memory calls of one module.

    ``skills`` lists the active skills the module runs under; a write must be allowed under
    each of them (None: any declared field will do).
    """
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    _report(memory_calls(source, str(path)), path, schema, skills, problems)


def _report(
    calls: Sequence[MemoryCall],
    path: Path,
    schema: MemorySchema,
    skills: Sequence[str | None],
    problems: Problems,
) -> None:
    """Record the forbidden memory calls and undeclared writes among ``calls``."""
    for call in calls:
        if call.method not in _MEMORY_API:
            problems.add(
                codes.TOOL_FORBIDDEN_MEMORY_API,
                f"context.memory.{call.method}(...) is not part of the tool memory API; use "
                "get/set "
                "(clear a field you own with context.memory.set(name, None))",
                path,
                call.line,
            )
        elif call.method == "set" and call.name is not None:
            reason = _write_problem(call.name, schema, skills)
            if reason:
                problems.add(
                    codes.UNDECLARED_MEMORY_WRITE,
                    f"context.memory.set({call.name!r}): {reason}",
                    path,
                    call.line,
                )


def _write_problem(name: str, schema: MemorySchema, skills: Sequence[str | None]) -> str | None:
    for skill_id in skills:
        if skill_id is None:
            if not _declared_anywhere(name, schema):
                return f"{name!r} is not declared in any memory.yml"
            continue
        try:
            schema.writable(name, skill_id)
        except MemoryWriteError as error:
            return f"{error} (writing as skill {skill_id!r})"
    return None


def _declared_anywhere(name: str, schema: MemorySchema) -> bool:
    entry = name.rpartition(".")[2]
    return entry in schema.project or any(
        skill.get(entry) is not None for skill in schema.skills.values()
    )
