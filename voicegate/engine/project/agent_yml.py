"""``agent.yml`` (contract §2.1): identity inside ``agent:``, tuning sections beside it.

Unknown keys are ignored, as Mantle does (a tuning key nested under ``agent:`` is silently
discarded). Checked: the ``agent`` mapping and a non-blank ``persona`` (the two published
codes), ``rules`` as a list of text, ``tool_timeout`` as a positive number of seconds,
``prompts`` value types, and ``references.chunking`` (``chunk_size`` > 0, ``chunk_overlap`` <
``chunk_size``, no unknown keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from voicegate.engine.project import codes
from voicegate.engine.project.config_model import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    ReferenceSettings,
)
from voicegate.engine.project.model import AgentSettings
from voicegate.engine.project.problems import Problems
from voicegate.engine.project.shapes import (
    is_number,
    is_text,
    item_line,
    key_line,
    mapping_or_empty,
)
from voicegate.engine.tools.invoke import DEFAULT_TOOL_TIMEOUT
from voicegate.engine.yamlfile import line_of

_TEXT_PROMPTS = (
    "text_rules",
    "voice_rules",
    "ack_rule",
    "ack_reminder",
    "routing_no_active_skill",
)
_CHUNKING_KEYS = frozenset({"chunk_size", "chunk_overlap"})


def parse_agent(data: Any, path: str, problems: Problems) -> AgentSettings:
    """The settings ``agent.yml`` declares; problems are recorded, defaults fill the gaps."""
    if not isinstance(data, Mapping):
        problems.add(
            codes.AGENT_MISSING_SECTION,
            "agent.yml must be a mapping with an 'agent:' section",
            path,
            line_of(data),
        )
        return AgentSettings()
    agent = data.get("agent")
    has_section = isinstance(agent, Mapping)
    if not isinstance(agent, Mapping):
        problems.add(
            codes.AGENT_MISSING_SECTION,
            "agent.yml needs an 'agent:' mapping (identity: persona, id, language)",
            path,
            key_line(data, "agent"),
        )
        agent = {}
    return AgentSettings(
        # Without an agent: section its persona is not reported a second time.
        persona=_persona(agent, data, path, problems) if has_section else "",
        rules=_rules(data.get("rules"), data, path, problems),
        tool_timeout=_tool_timeout(data, path, problems),
        agent_id=_text(agent, "id", path, problems, ""),
        language=_text(agent, "language", path, problems, "") or "en",
        voice=_voice(agent, path, problems),
        prompts=_prompts(data.get("prompts"), data, path, problems),
        references=_references(data.get("references"), data, path, problems),
        before_end=_before_end(data.get("conversation"), data, path, problems),
        session_config=_optional_mapping(data, "session_config", path, problems),
    )


def _persona(agent: Mapping[str, Any], data: Any, path: str, problems: Problems) -> str:
    persona = agent.get("persona")
    if not is_text(persona):
        where = key_line(agent, "persona") if "persona" in agent else key_line(data, "agent")
        problems.add(
            codes.AGENT_MISSING_PERSONA,
            "'agent.persona' is missing or blank; it is the identity every prompt starts with",
            path,
            where,
        )
        return ""
    return str(persona).strip()


def _rules(raw: Any, data: Any, path: str, problems: Problems) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.add(
            codes.AGENT_INVALID,
            "'rules' must be a list of sentences",
            path,
            key_line(data, "rules"),
        )
        return ()
    rules = []
    for index, rule in enumerate(raw):
        if isinstance(rule, str):
            rules.append(rule)
            continue
        problems.add(
            codes.AGENT_INVALID,
            f"rule {rule!r} is not text; quote a rule that contains ': ' (YAML reads it as a "
            "mapping)",
            path,
            item_line(raw, index),
        )
    return tuple(rules)


def _tool_timeout(data: Mapping[str, Any], path: str, problems: Problems) -> float:
    raw = data.get("tool_timeout", DEFAULT_TOOL_TIMEOUT)
    if not is_number(raw) or raw <= 0:
        problems.add(
            codes.AGENT_INVALID,
            f"'tool_timeout' must be a positive number of seconds, got {raw!r}",
            path,
            key_line(data, "tool_timeout"),
        )
        return DEFAULT_TOOL_TIMEOUT
    return float(raw)


def _text(mapping: Mapping[str, Any], key: str, path: str, problems: Problems, default: str) -> str:
    value = mapping.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        problems.add(
            codes.AGENT_INVALID, f"'agent.{key}' must be text", path, key_line(mapping, key)
        )
        return default
    return value.strip()


def _voice(agent: Mapping[str, Any], path: str, problems: Problems) -> Mapping[str, Any] | None:
    voice = agent.get("voice")
    if voice is None or isinstance(voice, Mapping):
        return voice
    problems.add(
        codes.AGENT_INVALID, "'agent.voice' must be a mapping", path, key_line(agent, "voice")
    )
    return None


def _optional_mapping(
    data: Mapping[str, Any], key: str, path: str, problems: Problems
) -> Mapping[str, Any]:
    value = data.get(key)
    if value is None or isinstance(value, Mapping):
        return value or {}
    problems.add(codes.AGENT_INVALID, f"'{key}' must be a mapping", path, key_line(data, key))
    return {}


def _prompts(raw: Any, data: Any, path: str, problems: Problems) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.add(
            codes.AGENT_INVALID,
            "'prompts' must be a mapping of section overrides",
            path,
            key_line(data, "prompts"),
        )
        return {}
    for key in _TEXT_PROMPTS:
        if raw.get(key) is not None and not isinstance(raw[key], str):
            problems.add(
                codes.AGENT_INVALID, f"'prompts.{key}' must be text", path, key_line(raw, key)
            )
    if raw.get("ack_enabled") is not None and not isinstance(raw["ack_enabled"], bool):
        problems.add(
            codes.AGENT_INVALID,
            "'prompts.ack_enabled' must be true or false",
            path,
            key_line(raw, "ack_enabled"),
        )
    examples = raw.get("ack_examples")
    if examples is not None and not _ack_examples_valid(examples):
        problems.add(
            codes.AGENT_INVALID,
            "'prompts.ack_examples' must be a list of {user: <text>, ack: <text>}",
            path,
            key_line(raw, "ack_examples"),
        )
    return dict(raw)


def _ack_examples_valid(examples: Any) -> bool:
    if not isinstance(examples, list):
        return False
    return all(
        isinstance(item, Mapping)
        and set(item) <= {"user", "ack"}
        and all(isinstance(item.get(key, ""), str) for key in ("user", "ack"))
        for item in examples
    )


def _references(raw: Any, data: Any, path: str, problems: Problems) -> ReferenceSettings:
    if raw is None:
        return ReferenceSettings()
    if not isinstance(raw, Mapping):
        problems.add(
            codes.AGENT_INVALID_REFERENCES,
            "'references' must be a mapping",
            path,
            key_line(data, "references"),
        )
        return ReferenceSettings()
    embeddings = raw.get("embeddings")
    if embeddings is not None and not is_text(embeddings):
        problems.add(
            codes.AGENT_INVALID_REFERENCES,
            "'references.embeddings' must name a model group",
            path,
            key_line(raw, "embeddings"),
        )
        embeddings = None
    size, overlap = _chunking(raw.get("chunking"), raw, path, problems)
    return ReferenceSettings(embeddings, size, overlap)


def _chunking(raw: Any, parent: Any, path: str, problems: Problems) -> tuple[int, int]:
    defaults = (DEFAULT_CHUNK_SIZE, DEFAULT_CHUNK_OVERLAP)
    if raw is None:
        return defaults
    line = key_line(parent, "chunking")
    if not isinstance(raw, Mapping):
        problems.add(
            codes.AGENT_INVALID_REFERENCES, "'references.chunking' must be a mapping", path, line
        )
        return defaults
    unknown = sorted(str(key) for key in set(raw) - _CHUNKING_KEYS)
    size = raw.get("chunk_size", DEFAULT_CHUNK_SIZE)
    overlap = raw.get("chunk_overlap", DEFAULT_CHUNK_OVERLAP)
    complaint = None
    if unknown:
        complaint = (
            f"unknown keys under 'references.chunking': {unknown} "
            "(allowed: chunk_size, chunk_overlap)"
        )
    elif not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        complaint = f"'chunk_size' must be a positive number of characters, got {size!r}"
    elif not isinstance(overlap, int) or isinstance(overlap, bool) or not 0 <= overlap < size:
        complaint = (
            f"'chunk_overlap' must be a whole number from 0 to chunk_size - 1, got {overlap!r}"
        )
    if complaint:
        problems.add(codes.AGENT_INVALID_REFERENCES, complaint, path, line_of(raw) or line)
        return defaults
    return size, overlap


def _before_end(raw: Any, data: Any, path: str, problems: Problems) -> tuple[str, ...]:
    conversation = mapping_or_empty(raw)
    if raw is not None and not isinstance(raw, Mapping):
        problems.add(
            codes.AGENT_INVALID,
            "'conversation' must be a mapping",
            path,
            key_line(data, "conversation"),
        )
    before_end = conversation.get("before_end") or []
    if not isinstance(before_end, list) or not all(is_text(item) for item in before_end):
        problems.add(
            codes.AGENT_INVALID,
            "'conversation.before_end' must be a list of skill ids",
            path,
            key_line(conversation, "before_end"),
        )
        return ()
    return tuple(before_end)
