"""Agent projects: the folder layout of the contract, loaded and checked into a typed model.

- ``loader``: :func:`~voicegate.engine.project.loader.load_project` (raises the first problem)
  and ``inspect_project`` (collects every problem); ``validate`` summarises for the CLI.
- The model, frozen dataclasses with no behaviour: ``model`` (Project, Skill, AgentSettings,
  ResolvedTool), ``skill_model``, ``step_model``, ``token_model``, ``response_model``,
  ``config_model``.
- One reader per file kind: ``agent_yml``, ``integrations_yml``, ``skill_md``/``skill_files``
  (frontmatter split, body), ``frontmatter`` and ``constraints`` (properties), ``prose``
  (paragraphs, ``if:``, ``@`` tokens), ``blocks`` and ``steps`` (ordered blocks),
  ``responses``, ``references`` and ``bm25`` (chunks and the knowledge index).
- Tools: ``tool_modules`` (importing), ``tool_resolution`` (per-skill toolsets),
  ``memory_writes`` (static inspection of ``context.memory`` calls).
- Cross-file checks: ``scope`` (readable memory), ``checks``; problems and their codes:
  ``problems``, ``codes``, ``condition_sites``.
"""
