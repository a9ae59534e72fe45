"""The documented rasa.mantle / rasa.calm_v2 import paths resolve while tools load, only then."""

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import voicegate.engine.loop.engine
import voicegate.engine.project.loader  # noqa: F401 - importing the engine must not install aliases
from voicegate.engine.tools import buttons, context, decorator, result
from voicegate.engine.tools.rasa_compat import rasa_aliases
from voicegate.errors import ProjectMemoryAlreadySetError


@pytest.fixture(autouse=True)
def forget_rasa() -> Iterator[None]:
    """Leave no rasa module behind for the next test."""
    yield
    for name in [name for name in sys.modules if name.split(".")[0] == "rasa"]:
        del sys.modules[name]


def test_importing_voicegate_installs_nothing() -> None:
    assert "rasa" not in sys.modules
    assert importlib.util.find_spec("rasa") is None
    assert not any(type(finder).__name__ == "_AliasFinder" for finder in sys.meta_path)


@pytest.mark.parametrize("engine_package", ["mantle", "calm_v2"])
def test_documented_paths_resolve_to_voicegate_objects(engine_package: str) -> None:
    with rasa_aliases():
        tools = f"rasa.{engine_package}.tools"
        assert importlib.import_module(f"{tools}.decorator").tool is decorator.tool
        assert importlib.import_module(f"{tools}.decorator").ToolContext is context.ToolContext
        assert importlib.import_module(f"{tools}.result").ToolResult is result.ToolResult
        assert importlib.import_module(f"{tools}.buttons").Button is buttons.Button
        manager = importlib.import_module(f"rasa.{engine_package}.memory.manager")
        assert manager.ProjectMemoryAlreadySetError is ProjectMemoryAlreadySetError


def test_aliases_are_gone_after_the_block() -> None:
    with rasa_aliases():
        importlib.import_module("rasa.mantle.tools.decorator")
    assert not [name for name in sys.modules if name.split(".")[0] == "rasa"]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rasa.mantle.tools.decorator")


def test_unknown_rasa_modules_are_not_invented() -> None:
    with rasa_aliases(), pytest.raises(ModuleNotFoundError):
        importlib.import_module("rasa.core.agent")


def write_fake_rasa(root: Path, with_mantle: bool) -> None:
    (root / "rasa").mkdir()
    (root / "rasa" / "__init__.py").write_text("REAL = True\n")
    if with_mantle:
        tools = root / "rasa" / "mantle" / "tools"
        tools.mkdir(parents=True)
        (root / "rasa" / "mantle" / "__init__.py").write_text("")
        (tools / "__init__.py").write_text("")
        (tools / "decorator.py").write_text("tool = 'the real one'\n")


def test_an_installed_rasa_is_never_shadowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fake_rasa(tmp_path, with_mantle=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    with rasa_aliases():
        assert importlib.import_module("rasa.mantle.tools.decorator").tool == "the real one"
    assert sys.modules["rasa"].REAL is True  # the real package stays imported


def test_an_installed_rasa_without_mantle_gets_no_partial_aliases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fake_rasa(tmp_path, with_mantle=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with rasa_aliases(), pytest.raises(ModuleNotFoundError):
        importlib.import_module("rasa.mantle.tools.decorator")
