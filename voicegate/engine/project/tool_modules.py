"""Importing a project's tool modules (tools reference, "Where tools are discovered").

A skill's tools live in ``skills/<id>/tools.py`` and ``skills/<id>/tools/*.py``; a name in
``tools/*.py`` shadows the same name in ``tools.py`` (logged as a duplicate). Shared tools
live in the root ``tools/*.py``. While the modules import, the project root is on
``sys.path`` (so ``from lib.x import y`` works at module top level) and the documented
``rasa.mantle.tools.*`` paths resolve; afterwards neither is left behind, and modules imported
from the project are dropped from ``sys.modules``.

Every module is imported even when an earlier one failed, so that ``voicegate validate`` can
report all of them; each failure names the module and, when the traceback shows it, the line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import sys
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from voicegate.engine.project import codes
from voicegate.engine.project.problems import Problem, Problems
from voicegate.engine.tools.decorator import Tool
from voicegate.engine.tools.rasa_compat import rasa_aliases
from voicegate.engine.tools.reserved import FRAMEWORK_TOOL_NAMES
from voicegate.errors import ToolDefinitionError

log = logging.getLogger(__name__)

_PREFIX = "voicegate_project_"


@dataclass(frozen=True, slots=True)
class ToolModule:
    """One imported tool module: its file and the ``@tool`` functions it defines, by name."""

    path: Path
    tools: Mapping[str, Tool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LoadedTools:
    """The tools of one location (a skill, or the shared root folder) and their modules.

    ``complete`` is False when a module failed to import: checks that need the full list of
    tools are then skipped for that location, so one broken module does not cascade.
    """

    tools: Mapping[str, Tool]
    modules: tuple[ToolModule, ...]
    complete: bool


@contextmanager
def tool_loading(root: Path) -> Iterator[None]:
    """Make the project root importable and the Mantle paths resolvable, for the block only."""
    before = set(sys.modules)
    entry = str(root)
    sys.path.insert(0, entry)
    try:
        with rasa_aliases():
            yield
    finally:
        if entry in sys.path:
            sys.path.remove(entry)
        for name in set(sys.modules) - before:
            if _lives_under(sys.modules[name], root) or name.startswith(_PREFIX):
                del sys.modules[name]


def _lives_under(module: ModuleType, root: Path) -> bool:
    location = getattr(module, "__file__", None)
    return isinstance(location, str) and Path(location).resolve().is_relative_to(root)


def _package(root: Path, name: str) -> str:
    return f"{_PREFIX}{hashlib.sha1(str(root).encode()).hexdigest()[:10]}.{name}"


def load_skill_tools(root: Path, skill_id: str, problems: Problems) -> LoadedTools:
    """The local tools of one skill; call inside :func:`tool_loading`."""
    skill_dir = root / "skills" / skill_id
    package = _package(root, skill_id)
    single = skill_dir / "tools.py"
    modules: list[ToolModule] = []
    complete = True
    if single.is_file():
        module = load_tool_module(single, f"{package}.tools", problems)
        complete = module is not None
        modules += [module] if module else []
    folder = _load_folder(skill_dir / "tools", f"{package}.tools", problems)
    modules += folder.modules
    tools = dict(modules[0].tools) if modules and modules[0].path == single else {}
    for module in folder.modules:
        for name, found in module.tools.items():
            if name in tools and tools[name] is not found:
                # Named by file: the module's import name is voicegate's, not the author's.
                log.warning(
                    "%s: tool %r shadows the one in %s (duplicate)",
                    module.path.relative_to(root),
                    name,
                    single.relative_to(root),
                )
    tools.update(folder.tools)
    return LoadedTools(tools, tuple(modules), complete and folder.complete)


def load_shared_tools(root: Path, problems: Problems) -> LoadedTools:
    """The shared tools of the root ``tools/`` folder; call inside :func:`tool_loading`."""
    return _load_folder(root / "tools", _package(root, "__shared__"), problems)


def _load_folder(folder: Path, package: str, problems: Problems) -> LoadedTools:
    modules: list[ToolModule] = []
    tools: dict[str, Tool] = {}
    owners: dict[str, Path] = {}
    complete = True
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        module = load_tool_module(path, f"{package}.{path.stem}", problems)
        if module is None:
            complete = False
            continue
        modules.append(module)
        for name, found in module.tools.items():
            if name in owners:
                problems.add_problem(
                    Problem(
                        codes.TOOL_DUPLICATE_NAME,
                        f"tool {name!r} is also defined in {owners[name].name}",
                        str(path),
                        _first_line(found),
                        tool_definition=True,
                    )
                )
                continue
            owners[name] = path
            tools[name] = found
    return LoadedTools(tools, tuple(modules), complete)


def load_tool_module(path: Path, module_name: str, problems: Problems) -> ToolModule | None:
    """Import one tool module; its ``@tool`` functions by name, or None when it failed."""
    module = _import(path, module_name, problems)
    if module is None:
        return None
    tools = {}
    for value in vars(module).values():
        if (
            isinstance(value, Tool)
            and value.defined_in == module_name
            and _tool_valid(value, path, problems)
        ):
            tools[value.name] = value
    return ToolModule(path, tools)


def _import(path: Path, module_name: str, problems: Problems) -> ModuleType | None:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        problems.add(codes.TOOL_IMPORT_FAILED, "cannot import this tool module", path)
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except ToolDefinitionError as error:
        problems.add_problem(
            Problem(
                codes.TOOL_INVALID_DEFINITION,
                str(error),
                str(path),
                _error_line(error, path),
                tool_definition=True,
            )
        )
        return None
    except (Exception, SystemExit) as error:
        # SystemExit too: a module that exits while it loads (argparse's parse_args() at
        # module level, a stray sys.exit()) is a module that cannot be imported, not the end
        # of validate or serve (contract §9.2: an import failure fails train).
        problems.add(
            codes.TOOL_IMPORT_FAILED,
            f"cannot import this tool module: {_failure(error)}",
            path,
            _error_line(error, path),
        )
        return None
    return module


def _failure(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"it exits while it loads (SystemExit: {error.code})"
    return f"{type(error).__name__}: {error}"


def _tool_valid(found: Tool, path: Path, problems: Problems) -> bool:
    if found.name in FRAMEWORK_TOOL_NAMES:
        problems.add_problem(
            Problem(
                codes.TOOL_RESERVED_NAME,
                f"tool {found.name!r} reuses the name of a built-in framework tool; rename it",
                str(path),
                _first_line(found),
                tool_definition=True,
            )
        )
        return False
    try:
        found.spec  # derive the schema now so a bad annotation fails the load  # noqa: B018
    except ToolDefinitionError as error:
        problems.add_problem(
            Problem(
                codes.TOOL_INVALID_DEFINITION,
                str(error),
                str(path),
                _first_line(found),
                tool_definition=True,
            )
        )
        return False
    return True


def _first_line(found: Tool) -> int | None:
    code = getattr(found.function, "__code__", None)
    return code.co_firstlineno if code is not None else None


def _error_line(error: BaseException, path: Path) -> int | None:
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename == str(path)
    ]
    if isinstance(error, SyntaxError) and error.filename == str(path):
        return error.lineno
    return lines[-1] if lines else None
