"""Output paths checked before any work, so a long run never fails at its very end."""

from __future__ import annotations

from pathlib import Path

from voicegate.errors import ConfigError


def check_output_file(path: Path, suffixes: tuple[str, ...], *, made: Path | None = None) -> None:
    """``path`` can be written as a file of one of ``suffixes`` (else a ConfigError).

    ``made`` is a directory the command creates before it writes ``path`` (its ``--out``).
    """
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory; give a file name, e.g. {path / 'out'}")
    made_first = made is not None and path.parent.absolute() == made.absolute()
    if not path.parent.is_dir() and not made_first:
        raise ConfigError(f"{path}: the directory {path.parent} does not exist")
    if path.suffix.lower() not in suffixes:
        names = " or ".join(suffixes)
        raise ConfigError(f"{path}: only {names} files can be written; name the file *{names}")


def check_output_dir(path: Path) -> None:
    """``path`` is a directory or can be made one (else a ConfigError)."""
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path}: exists and is not a directory; --out names a folder")
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ConfigError(f"{path}: {parent} is not a directory")
