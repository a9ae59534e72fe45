"""MCP client sessions exposed to the engine as tools (contract §10; issue 8).

- ``config``: ``integrations.yml`` ``mcp_servers`` -> frozen :class:`McpServerConfig` (stdio or
  Streamable HTTP, per-server ``tool_timeout``); ``secrets`` expands ``${ENV_VAR}`` references;
  ``declared`` reads a project's servers. These three and ``imports`` load no ``mcp`` package.
- ``connection``: one live client session per server, held open by its own task;
  ``watch`` notices a server's side ending between calls.
- ``server``: a server for the life of the gateway: startup listing, calls, reconnection.
- ``results``: what the model reads back from ``tools/call``.
- ``imports``: skills' ``mcp/<server>:<tool>`` entries, checked and resolved to remote tools.
- ``runtime``: :class:`McpRuntime` (starts referenced servers, stops them all) and
  :func:`project_tools`, the catalog of a project's local and imported tools for the CLI.
"""
