"""Typed access to one YAML mapping of a scenario file, with errors that name file and key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voicegate.errors import ConfigError


class Fields:
    """The keys of one mapping, read by type; unknown keys are refused by :meth:`done`."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
        self._data: Mapping[Any, Any] = data
        self._where = where
        self._read: set[str] = set()

    @property
    def where(self) -> str:
        """The file and key path this mapping is at, for messages."""
        return self._where

    def has(self, key: str) -> bool:
        """Whether ``key`` is given."""
        return key in self._data

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as YAML gave it."""
        self._read.add(key)
        return self._data.get(key, default)

    def text(self, key: str, default: str | None = None) -> str:
        """A string value (``default`` when absent; absent without a default is an error)."""
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise self.error(key, "must be text" if key in self._data else "is required")
        return value

    def optional_text(self, key: str) -> str | None:
        """A string value, or None when absent."""
        return self.text(key) if self.has(key) else self.raw(key)

    def integer(self, key: str, default: int | None = None) -> int:
        """A non-negative integer value."""
        value = self.raw(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problem = "is required" if value is None else "must be a non-negative integer"
            raise self.error(key, problem)
        return value

    def optional_integer(self, key: str) -> int | None:
        """A non-negative integer, or None when absent."""
        return self.integer(key) if self.has(key) else self.raw(key)

    def flag(self, key: str, default: bool) -> bool:
        """A boolean value."""
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, "must be true or false")
        return value

    def texts(self, key: str) -> tuple[str, ...] | None:
        """A list of strings, or None when absent."""
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(key, "must be a list of text")
        return tuple(value)

    def mapping(self, key: str) -> Fields | None:
        """A nested mapping, or None when absent."""
        value = self.raw(key)
        return None if value is None else Fields(value, f"{self._where}.{key}")

    def items(self) -> list[tuple[str, Any]]:
        """Every key and value (for mappings keyed by data, such as turn ids)."""
        self._read.update(str(key) for key in self._data)
        return [(str(key), value) for key, value in self._data.items()]

    def error(self, key: str, problem: str) -> ConfigError:
        """An error about ``key``."""
        return ConfigError(f"{self._where}.{key} {problem}")

    def done(self) -> None:
        """Refuse keys nobody read: a typo must not pass silently."""
        unknown = sorted(str(key) for key in self._data if str(key) not in self._read)
        if unknown:
            raise ConfigError(f"{self._where}: unknown key(s) {', '.join(unknown)}")
