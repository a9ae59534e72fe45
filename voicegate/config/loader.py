"""``config/voicegate.yml`` -> :class:`Settings`, checked key by key against the dataclasses.

The file's shape is read off the dataclasses' fields and type hints, so there is one source
of truth. Every key is optional (a missing key keeps its default); an unknown key, a value of
the wrong type, a negative number or a duplicated key raises :class:`ConfigError` naming the
file and the key path (``providers.twilio.parameters.tenant``). This module reads the one file
it is given and nothing else: no environment variables (design §7).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from yaml.nodes import MappingNode

from voicegate.config.settings import Settings
from voicegate.engine.yamlfile import FastSafeLoader
from voicegate.errors import ConfigError

#: Where ``voicegate serve`` looks when no ``--config`` is given.
DEFAULT_CONFIG_PATH = Path("config/voicegate.yml")

_T = TypeVar("_T")


def load_settings(path: Path) -> Settings:
    """Read and check one settings file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the settings file: {error}") from None
    return parse_settings(text, str(path))


def parse_settings(text: str, source: str = "<settings>") -> Settings:
    """Parse settings YAML; ``source`` names the file in error messages."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError(f"{where}: invalid YAML: {error.problem or error}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: invalid YAML: {error}") from None
    return settings_from_data({} if data is None else data, source)


def settings_from_data(data: object, source: str = "<settings>") -> Settings:
    """Build settings from already parsed data (a mapping, as YAML gives it)."""
    return _Reader(source).dataclass(Settings, data, "")


# On libyaml's parser, as projects are: config/voicegate.yml parses in ~10 ms instead of ~60,
# at the start of every command.
class _StrictLoader(FastSafeLoader):  # type: ignore[valid-type, misc]
    """A SafeLoader that refuses a key given twice in one mapping (YAML 1.2 §3.2.1.1)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while reading a mapping",
                    node.start_mark,
                    f"the key {key!r} appears twice",
                    key_node.start_mark,
                )
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


class _Reader:
    """Converts parsed YAML to typed values, naming ``source`` and the key path on errors."""

    def __init__(self, source: str) -> None:
        self._source = source

    def error(self, path: str, problem: str) -> ConfigError:
        """A ConfigError naming the file and the key path."""
        return ConfigError(f"{self._source}: {path or '(top level)'}: {problem}")

    def dataclass(self, cls: type[_T], raw: object, path: str) -> _T:
        """One section: known keys only, each converted to its field's type."""
        if not isinstance(raw, Mapping):
            raise self.error(path, f"expected a mapping of keys, got {_describe(raw)}")
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        values: dict[str, Any] = {}
        for key, value in raw.items():
            key_path = f"{path}.{key}" if path else str(key)
            if key not in names:
                raise self.error(key_path, f"unknown key; expected one of {', '.join(names)}")
            values[key] = self.value(hints[key], value, key_path)
        try:
            return cls(**values)
        except ConfigError as error:
            # The dataclass's own checks (ranges, choices, fields that must agree).
            raise self._post_init_error(path, str(error), names) from None

    def _post_init_error(self, path: str, message: str, names: list[str]) -> ConfigError:
        """Point at the key when the message starts with a field name ("port must be ...")."""
        first, _, rest = message.partition(" ")
        if first in names and rest:
            return self.error(f"{path}.{first}" if path else first, rest)
        return self.error(path, message)

    def value(self, hint: Any, raw: object, path: str) -> Any:
        """One value converted to ``hint``."""
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            return self.dataclass(hint, raw, path)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (types.UnionType, typing.Union):
            return self.optional(args, raw, path)
        if origin is not None:
            return self.collection(origin, args, raw, path)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return self.choice(hint, raw, path)
        return self.scalar(hint, raw, path)

    def optional(self, args: tuple[Any, ...], raw: object, path: str) -> Any:
        """``X | None``: null, or an X."""
        if raw is None and type(None) in args:
            return None
        (inner,) = [arg for arg in args if arg is not type(None)]
        return self.value(inner, raw, path)

    def scalar(self, hint: Any, raw: object, path: str) -> Any:
        """bool, int, float (an int is accepted), str, or a path given as a string."""
        if hint is Path:
            return Path(self.scalar(str, raw, path))
        accepted = (int, float) if hint is float else (hint,)
        if isinstance(raw, bool) is not (hint is bool) or not isinstance(raw, accepted):
            raise self.error(path, f"expected {_NAMES.get(hint, hint)}, got {_describe(raw)}")
        if isinstance(raw, int | float) and not isinstance(raw, bool) and raw < 0:
            raise self.error(path, f"must not be negative, got {raw}")
        return float(raw) if hint is float else raw

    def choice(self, hint: type[enum.Enum], raw: object, path: str) -> enum.Enum:
        """One of an enum's values, written as its value."""
        allowed = [member.value for member in hint]
        for member in hint:
            if raw == member.value and type(raw) is type(member.value):
                return member
        raise self.error(path, f"expected one of {', '.join(map(str, allowed))}, got {raw!r}")

    def collection(self, origin: Any, args: tuple[Any, ...], raw: object, path: str) -> Any:
        """A list (as a tuple or a frozenset) or a mapping of strings to strings."""
        if origin in (tuple, frozenset):
            if not isinstance(raw, list):
                raise self.error(path, f"expected a list, got {_describe(raw)}")
            items = [self.value(args[0], item, f"{path}[{i}]") for i, item in enumerate(raw)]
            return origin(items)
        if origin is Mapping:
            if not isinstance(raw, Mapping):
                raise self.error(path, f"expected a mapping, got {_describe(raw)}")
            converted = {
                self.scalar(args[0], key, f"{path} key {key!r}"): self.value(
                    args[1], value, f"{path}.{key}"
                )
                for key, value in raw.items()
            }
            return types.MappingProxyType(converted)
        raise TypeError(f"settings type {origin} is not supported by the loader")


_NAMES: dict[Any, str] = {
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    str: "a string",
}


def _describe(raw: object) -> str:
    if raw is None:
        return "nothing (null)"
    if isinstance(raw, bool):
        return f"the boolean {str(raw).lower()}"
    if isinstance(raw, Mapping):
        return "a mapping"
    if isinstance(raw, list):
        return "a list"
    return f"{type(raw).__name__} {raw!r}"
