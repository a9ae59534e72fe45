"""The asyncio layer: server, call sessions, barge-in, playout."""
