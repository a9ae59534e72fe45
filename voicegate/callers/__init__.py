"""Emulated callers: the provider side of a call, for replaying recordings and for tests."""
