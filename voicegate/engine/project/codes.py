"""The validation codes a project problem carries (contract §9).

Codes the Mantle docs publish are used verbatim (§9.1). Checks the docs describe without
publishing a code (§9.2) get a code named in the same style: the family of the file or
subject, then the rule. Every code is a plain string constant; a problem's message says the
rest.
"""

from __future__ import annotations

# --- Published codes (contract §9.1) -----------------------------------------------------------
FRONTMATTER_DELIMITER = "skill.markdown.invalid_frontmatter_delimiter"
TOOL_CONSTRAINTS = "skill.markdown.invalid_tool_constraints"
MISSING_INSTRUCTIONS = "skill.markdown.missing_instructions"
UNDECLARED_MEMORY_WRITE = "undeclared_memory_write"
AGENT_MISSING_SECTION = "config.agent.missing_section"
AGENT_MISSING_PERSONA = "config.agent.missing_persona"
UNRESOLVED_TOOL = "mantle.validation.tools.unresolved_tool"
# The ``mantle.validation.response.*`` family: its members are named here (§9.1 lists the
# problems, not the suffixes).
RESPONSE_INVALID = "mantle.validation.response.invalid"
RESPONSE_EMPTY_TEXT = "mantle.validation.response.empty_text"
RESPONSE_INVALID_CONDITION = "mantle.validation.response.invalid_condition"
RESPONSE_UNREADABLE_MEMORY = "mantle.validation.response.unreadable_memory"
RESPONSE_DEFAULT_VARIANT = "mantle.validation.response.default_variant"
RESPONSE_UNKNOWN_KEY = "mantle.validation.response.unknown_key"
RESPONSE_INVALID_BUTTONS = "mantle.validation.response.invalid_buttons"
RESPONSE_INVALID_SET_PAYLOAD = "mantle.validation.response.invalid_set_payload"
RESPONSE_INVALID_SET_TARGET = "mantle.validation.response.invalid_set_target"
RESPONSE_DUPLICATE_NAME = "mantle.validation.response.duplicate_name"
RESPONSE_NOT_FOUND = "mantle.validation.response.not_found"
# The documented message "Unknown name '<key>' in condition expression" (§3.2, §9.1).
CONDITION_UNKNOWN_NAME = "mantle.validation.condition.unknown_name"

# --- Named by voicegate for documented checks (contract §9.2) ----------------------------------
PROJECT_LAYOUT = "project.invalid_layout"
# A warning: hooks (contract §2.9, "under development") are not run by voicegate.
PROJECT_HOOKS_NOT_RUN = "project.hooks_not_run"
AGENT_INVALID = "config.agent.invalid"
AGENT_INVALID_REFERENCES = "config.agent.invalid_references"
INTEGRATIONS_INVALID = "config.integrations.invalid"
INTEGRATIONS_INLINE_LLM = "config.integrations.inline_llm"
INTEGRATIONS_KEY_IN_MODEL = "config.integrations.key_in_model"
INTEGRATIONS_UNKNOWN_MODEL_GROUP = "config.integrations.unknown_model_group"
INTEGRATIONS_INVALID_MCP_SERVER = "config.integrations.invalid_mcp_server"

MEMORY_INVALID = "mantle.validation.memory.invalid"
MEMORY_UNDECLARED = "mantle.validation.memory.undeclared"
MEMORY_INVALID_VALUE = "mantle.validation.memory.invalid_value"
MEMORY_COLLECT_PROJECT_FIELD = "mantle.validation.memory.collect_project_field"

CONDITION_INVALID = "mantle.validation.condition.invalid"
CONDITION_UNDECLARED_MEMORY = "mantle.validation.condition.undeclared_memory"
CONDITION_UNREADABLE_MEMORY = "mantle.validation.condition.unreadable_memory"

FRONTMATTER_INVALID = "skill.markdown.invalid_frontmatter"
COMPLETE_WHEN_INVALID = "skill.markdown.invalid_complete_when"
UTTER_INVALID = "skill.markdown.invalid_utter"
MARKER_INVALID = "skill.markdown.invalid_marker"
MEMORY_TOKEN_INVALID = "skill.markdown.invalid_memory_reference"
BARE_SESSION_REFERENCE = "skill.markdown.bare_session_reference"
UNKNOWN_BLOCK_REFERENCE = "skill.markdown.unknown_block_reference"
UNKNOWN_SKILL_REFERENCE = "skill.markdown.unknown_skill_reference"
ORDERED_BLOCK_INVALID = "skill.markdown.invalid_ordered_block"
DUPLICATE_BLOCK_ID = "skill.markdown.duplicate_block_id"
ROUTABLE_IN_BLOCK = "skill.markdown.routable_in_block"
UNKNOWN_STEP_KEY = "skill.markdown.unknown_step_key"
REMOVED_STEP_KEY = "skill.markdown.removed_step_key"
STEP_INVALID = "skill.markdown.invalid_step"
DUPLICATE_STEP_ID = "skill.markdown.duplicate_step_id"
UNKNOWN_STEP_TARGET = "skill.markdown.unknown_step_target"

TOOL_IMPORT_FAILED = "mantle.validation.tools.import_failed"
TOOL_INVALID_DEFINITION = "mantle.validation.tools.invalid_definition"
TOOL_RESERVED_NAME = "mantle.validation.tools.reserved_name"
TOOL_DUPLICATE_NAME = "mantle.validation.tools.duplicate_tool_name"
TOOL_INVALID_IMPORT = "mantle.validation.tools.invalid_import"
TOOL_UNKNOWN_MCP_SERVER = "mantle.validation.tools.unknown_mcp_server"
TOOL_INVALID_MCP_NAME = "mantle.validation.tools.invalid_mcp_tool_name"
TOOL_INVALID_HOOK = "mantle.validation.tools.invalid_hook"
TOOL_FORBIDDEN_MEMORY_API = "mantle.validation.tools.forbidden_memory_api"
TOOL_INVALID_PARAMETERS = "mantle.validation.tools.invalid_parameters"
REFERENCE_UNREADABLE = "mantle.validation.references.unreadable"
