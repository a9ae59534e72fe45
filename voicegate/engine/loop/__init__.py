"""The execution loop: sessions, turns as event streams, model steps and tool dispatch."""
