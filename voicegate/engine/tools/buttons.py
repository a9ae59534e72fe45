"""``Button``: a dynamic button a response button source tool attaches (tools reference).

Importable as ``rasa.mantle.tools.buttons`` while a project's tool modules load.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Button:
    """A button: ``title`` shown, ``value`` sent; with ``ref`` a tap writes ``value`` there.

    ``ref`` is a fully-qualified memory field, ``session.<skill_id|project>.<entry>``; without
    it the engine sends the tap as plain user input (tools reference, "context.set_buttons").
    """

    title: str
    value: str
    ref: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.title, str) or not self.title:
            raise ValueError("a Button needs a non-empty title")
        if not isinstance(self.value, str):
            raise ValueError(f"Button {self.title!r}: value must be text")
        if self.ref is not None:
            parts = self.ref.split(".")
            if len(parts) != 3 or parts[0] != "session" or not all(parts):
                raise ValueError(
                    f"Button {self.title!r}: ref must look like session.<namespace>.<entry>, "
                    f"got {self.ref!r}"
                )
