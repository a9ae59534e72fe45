"""The tool runtime: ``@tool``, schemas, ``ToolContext``, invocation, hooks, Mantle import paths."""
