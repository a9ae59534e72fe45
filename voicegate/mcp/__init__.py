"""MCP client sessions exposed to the engine as tools."""
