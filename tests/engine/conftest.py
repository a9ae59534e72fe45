"""Fixtures of the engine tests (helpers live in engine_kit)."""

from collections.abc import Callable

import pytest

from tests.engine.engine_kit import ContextKit, context_builder, sample_schema
from voicegate.engine.memory.schema import MemorySchema


@pytest.fixture
def schema() -> MemorySchema:
    """Project fields plus two skills, ``cards`` (active in most tests) and ``profile``."""
    return sample_schema()


@pytest.fixture
def make_context(schema: MemorySchema) -> Callable[..., ContextKit]:
    """Build a ToolContext over an in-memory store, for skill ``cards`` by default."""
    return context_builder(schema)
