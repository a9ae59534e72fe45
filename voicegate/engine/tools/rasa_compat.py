"""Let tool modules written for Mantle import its documented paths, while they load.

Tool modules start with ``from rasa.mantle.tools.decorator import ToolContext, tool`` (tools
reference; contract §1 "Python API module paths"; ``rasa.calm_v2`` on 3.19 builds). When no
``rasa`` package is installed, :func:`rasa_aliases` makes those paths resolve to voicegate's
own objects for as long as the ``with`` block runs. The finder is appended to the *end* of
``sys.meta_path``: a real ``rasa`` installation is found first and used unchanged. On exit the
finder and the alias modules are removed; tool modules keep the objects they imported. Nothing
happens when voicegate itself is imported.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from voicegate.engine.tools.buttons import Button
from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.decorator import tool
from voicegate.engine.tools.result import ToolResult
from voicegate.engine.tools.turn_context import current_turn_context
from voicegate.errors import MemoryWriteError, ProjectMemoryAlreadySetError

_MARKER = "__voicegate_alias__"
_ENGINE_PACKAGES = ("mantle", "calm_v2")


def _exports() -> dict[str, dict[str, Any]]:
    leaves: dict[str, dict[str, Any]] = {
        "tools.decorator": {"tool": tool, "ToolContext": ToolContext},
        "tools.result": {"ToolResult": ToolResult},
        "tools.buttons": {"Button": Button},
        "memory.manager": {
            "MemoryWriteError": MemoryWriteError,
            "ProjectMemoryAlreadySetError": ProjectMemoryAlreadySetError,
        },
        "orchestration.turn_context": {"current_turn_context": current_turn_context},
    }
    modules: dict[str, dict[str, Any]] = {"rasa": {}}
    for package in _ENGINE_PACKAGES:
        modules[f"rasa.{package}"] = {}
        for leaf, names in leaves.items():
            parent = leaf.rpartition(".")[0]
            modules[f"rasa.{package}.{parent}"] = {}
            modules[f"rasa.{package}.{leaf}"] = names
    return modules


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the ``rasa.*`` alias modules, only when ``rasa`` itself is one of them."""

    def __init__(self) -> None:
        self._modules = _exports()
        self._packages = {name.rpartition(".")[0] for name in self._modules}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for an alias module, unless a real ``rasa`` package owns the name."""
        if fullname not in self._modules:
            return None
        if fullname != "rasa" and not _is_alias(sys.modules.get("rasa")):
            return None  # a real rasa is installed: never shadow any part of it
        return importlib.util.spec_from_loader(
            fullname, self, is_package=fullname in self._packages
        )

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        """Use the default module creation."""
        return None

    def exec_module(self, module: ModuleType) -> None:
        """Fill an alias module with voicegate's objects."""
        setattr(module, _MARKER, True)
        if module.__name__ in self._packages:
            module.__path__ = []
        for name, value in self._modules[module.__name__].items():
            setattr(module, name, value)


def _is_alias(module: ModuleType | None) -> bool:
    return module is not None and bool(getattr(module, _MARKER, False))


@contextmanager
def rasa_aliases() -> Iterator[None]:
    """Resolve the documented ``rasa.mantle``/``rasa.calm_v2`` tool paths during the block."""
    finder = _AliasFinder()
    sys.meta_path.append(finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        _forget(lambda name, module: name.split(".")[0] == "rasa" and _is_alias(module))


def _forget(condition: Callable[[str, ModuleType], bool]) -> None:
    for name, module in list(sys.modules.items()):
        if condition(name, module):
            del sys.modules[name]
