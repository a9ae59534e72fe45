"""Shared code of the example project (importable from tool modules while they load)."""
