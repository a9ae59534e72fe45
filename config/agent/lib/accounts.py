"""Pretend account data."""

ACCOUNTS = {"A-17": 1250.75, "B-42": 18.2}
