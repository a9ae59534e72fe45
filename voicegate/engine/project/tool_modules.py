"""Importing a project's tool modules (tools reference, "Where tools are discovered").

A skill's tools live in ``skills/<id>/tools.py`` and ``skills/<id>/tools/*.py``; a name in
``tools/*.py`` shadows the same name in ``tools.py`` (logged as a duplicate). While the modules
import, the project root is on ``sys.path`` (so ``from lib.x import y`` works at module top
level) and the documented ``rasa.mantle.tools.*`` paths resolve; afterwards neither is left
behind, and modules imported from the project are dropped from ``sys.modules``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from voicegate.engine.tools.decorator import Tool
from voicegate.engine.tools.rasa_compat import rasa_aliases
from voicegate.engine.tools.reserved import FRAMEWORK_TOOL_NAMES
from voicegate.errors import ProjectError, ToolDefinitionError

log = logging.getLogger(__name__)


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


_PREFIX = "voicegate_project_"


def _lives_under(module: ModuleType, root: Path) -> bool:
    location = getattr(module, "__file__", None)
    return isinstance(location, str) and Path(location).resolve().is_relative_to(root)


def load_skill_tools(root: Path, skill_id: str) -> dict[str, Tool]:
    """The local tools of one skill; call inside :func:`tool_loading`."""
    skill_dir = root / "skills" / skill_id
    package = f"{_PREFIX}{hashlib.sha1(str(root).encode()).hexdigest()[:10]}.{skill_id}"
    tools: dict[str, Tool] = {}
    single = skill_dir / "tools.py"
    if single.is_file():
        tools.update(load_tool_module(single, f"{package}.tools"))
    folder_tools: dict[str, Path] = {}
    for path in sorted((skill_dir / "tools").glob("*.py")):
        for name, found in load_tool_module(path, f"{package}.tools.{path.stem}").items():
            if name in folder_tools:
                raise ToolDefinitionError(
                    f"{path}: tool {name!r} is also defined in {folder_tools[name]}"
                )
            if name in tools:
                log.warning("%s: tool %r shadows the one in %s (duplicate)", path, name, single)
            folder_tools[name] = path
            tools[name] = found
    return tools


def load_tool_module(path: Path, module_name: str) -> dict[str, Tool]:
    """Import one tool module and return the ``@tool`` functions it defines, by name."""
    module = _import(path, module_name)
    tools = {}
    for value in vars(module).values():
        if isinstance(value, Tool) and value.defined_in == module_name:
            _check_tool(value, path)
            tools[value.name] = value
    return tools


def _import(path: Path, module_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProjectError("cannot import this tool module", path=str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except ToolDefinitionError as error:
        raise ToolDefinitionError(f"{path}: {error}") from error
    except Exception as error:
        raise ProjectError(
            f"cannot import this tool module: {type(error).__name__}: {error}", path=str(path)
        ) from error
    return module


def _check_tool(found: Tool, path: Path) -> None:
    if found.name in FRAMEWORK_TOOL_NAMES:
        raise ToolDefinitionError(
            f"{path}: tool {found.name!r} reuses the name of a built-in framework tool; rename it"
        )
    try:
        found.spec  # derive the schema now so a bad annotation fails the load  # noqa: B018
    except ToolDefinitionError as error:
        raise ToolDefinitionError(f"{path}: {error}") from error
