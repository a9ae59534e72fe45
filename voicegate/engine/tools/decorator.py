"""``@tool(description=...)`` and the ``Tool`` it makes (tools reference, "Defining a tool").

Importable as ``rasa.mantle.tools.decorator`` (with ``ToolContext``) while a project's tool
modules load. There is no registration step: the loader finds ``Tool`` objects defined in a
tool module.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from voicegate.engine.tools.context import ToolContext
from voicegate.engine.tools.invocable import ToolSource
from voicegate.engine.tools.schema import ToolSpec, derive_spec, validate_arguments
from voicegate.engine.tools.turn_context import within
from voicegate.errors import ToolDefinitionError

__all__ = ["Tool", "ToolContext", "tool"]

ToolFunction = Callable[..., Coroutine[Any, Any, Any]]


class Tool:
    """An ``async`` function declared with ``@tool``; calling it calls the function."""

    def __init__(
        self, function: ToolFunction, description: str, *, run_early: bool = False
    ) -> None:
        self.function = function
        self.description = description
        #: Safe to run in a speculative turn, before the caller's turn is known to be over
        #: (no effect worth undoing: a read-only lookup). voicegate's extension, default off.
        self.run_early = run_early
        self.name: str = function.__name__
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
        """Call the underlying function (handy in a project's own unit tests)."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"

    @functools.cached_property
    def _derived(self) -> tuple[ToolSpec, bool]:
        # Derived on first use, not at decoration: string annotations may name classes defined
        # further down the module. The loader touches it at load so mistakes surface there.
        return derive_spec(self.function, self.description, ToolContext)

    @property
    def spec(self) -> ToolSpec:
        """The schema the model sees."""
        return self._derived[0]

    @property
    def takes_context(self) -> bool:
        """Whether the function declares the injected ``context`` parameter."""
        return self._derived[1]

    @property
    def source(self) -> ToolSource:
        """A ``@tool`` runs in the project's own Python code."""
        return "local"

    @property
    def time_limit(self) -> float | None:
        """Local tools have no own limit: the agent's ``tool_timeout`` applies."""
        return None

    def argument_problem(self, arguments: Mapping[str, Any]) -> str | None:
        """Why ``arguments`` do not fit the derived schema (no coercion), or None."""
        return validate_arguments(self.spec, arguments)

    @property
    def defined_in(self) -> str:
        """The module that defined the function."""
        return str(getattr(self.function, "__module__", ""))

    def invoke(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> Coroutine[Any, Any, Any]:
        """Start a call with validated arguments, passing ``context=`` when declared."""
        if self.takes_context:
            call = self.function(**arguments, context=context)
        else:
            call = self.function(**arguments)
        return within(context.turn_context, call)


def tool(
    function: object = None, /, *, description: str | None = None, run_early: bool = False
) -> Callable[[ToolFunction], Tool]:
    """Declare a tool: ``@tool(description="...")`` above an ``async def``.

    ``description`` is keyword-only and required; a bare ``@tool`` raises (tools reference).
    ``run_early=True`` (voicegate's extension): the tool may run in a speculative turn before
    the caller's turn is confirmed over (docs/turn-taking.md); every other tool waits.
    """
    if function is not None:
        raise ToolDefinitionError(
            '@tool takes its description as a keyword argument: write @tool(description="...")'
        )
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError('@tool needs description="..." (a non-empty text)')

    def decorate(candidate: ToolFunction) -> Tool:
        name = getattr(candidate, "__name__", repr(candidate))
        if not inspect.iscoroutinefunction(candidate):
            raise ToolDefinitionError(f"tool {name!r} must be an async function (async def)")
        return Tool(candidate, description.strip(), run_early=run_early)

    return decorate
