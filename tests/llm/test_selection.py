"""integrations.yml -> chat model settings, and the ``engine.llm`` specs that pick a model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.llm.chat_server import ChatServer, Reply, chunk, sse, text_chunks
from voicegate.cli.engines import build_llm, split_model_spec
from voicegate.engine.llm.port import TextDelta, UserMessage
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.llm.selection import (
    OPENAI_BASE_URL,
    ChatModelSettings,
    select_chat_model,
)
from voicegate.engine.llm.unavailable import UnavailableLLM
from voicegate.engine.project.config_model import Integrations
from voicegate.engine.project.model import Project
from voicegate.errors import ConfigError, LLMError


def integrations(*models: Mapping[str, Any], group: str = "main") -> Integrations:
    return Integrations(llm={"model_group": group}, model_groups={"main": tuple(models)})


def project_with(*models: Mapping[str, Any]) -> Project:
    return Project(integrations=integrations(*models) if models else Integrations())


def test_openai_entry_gets_openais_url_and_key_variable() -> None:
    settings = select_chat_model(integrations({"provider": "openai", "model": "gpt-4.1-mini"}))
    assert settings == ChatModelSettings("gpt-4.1-mini", OPENAI_BASE_URL, "OPENAI_API_KEY")
    assert settings.endpoint == "https://api.openai.com/v1/chat/completions"


def test_self_hosted_entry_with_extras_and_timeout() -> None:
    entry = {
        "provider": "self-hosted",
        "model": "llama3.2",
        "api_base": "http://127.0.0.1:11434/v1/",
        "timeout": 12,
        "temperature": 0.1,
        "max_tokens": 200,
    }
    settings = select_chat_model(integrations(entry, {"provider": "openai", "model": "backup"}))
    assert settings.model == "llama3.2"  # the group's first model
    assert settings.endpoint == "http://127.0.0.1:11434/v1/chat/completions"
    assert settings.api_key_env == ""  # a self-hosted server needs no key unless one is named
    assert settings.read_timeout_s == 12.0
    assert settings.options == {"temperature": 0.1, "max_tokens": 200}


def test_a_key_written_on_the_model_is_never_sent_in_the_request() -> None:
    entry = {"provider": "openai", "model": "gpt-4.1-mini", "api_key": "sk-live-123"}
    settings = select_chat_model(integrations(entry))
    assert "api_key" not in settings.options  # contract §2.2: api_key_env, never a literal


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"provider": "anthropic", "model": "claude"}, "provider 'anthropic' is not supported"),
        ({"provider": "groq"}, "'model' must be a non-empty string"),
        ({"provider": "self-hosted", "model": "m"}, "'api_base' must be a non-empty string"),
        ({"provider": "openai"}, "'model' must be a non-empty string"),
        ({"provider": "openai", "model": "m", "timeout": 0}, "'timeout' must be a positive"),
        ({"provider": "openai", "model": "m", "api_base": "ftp://x"}, "must start with http"),
    ],
)
def test_bad_entries_are_config_errors_naming_the_group(
    entry: Mapping[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigError, match="model group 'main'") as raised:
        select_chat_model(integrations(entry))
    assert expected in str(raised.value)


def test_no_selection_says_how_to_choose_a_model() -> None:
    with pytest.raises(ConfigError, match=r"no model selected .* openai:MODEL\[@BASE_URL\]"):
        select_chat_model(Integrations())


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("", ("", "")),
        ("gpt-4o", ("gpt-4o", "")),
        ("llama3@http://127.0.0.1:8000/v1", ("llama3", "http://127.0.0.1:8000/v1")),
        ("claude@20240620", ("claude@20240620", "")),
        ("@https://host/v1", ("", "https://host/v1")),
    ],
)
def test_model_specs_split(argument: str, expected: tuple[str, str]) -> None:
    assert split_model_spec(argument) == expected


def test_the_projects_key_variable_must_be_set() -> None:
    project = project_with({"provider": "openai", "model": "gpt", "api_key_env": "MY_KEY"})
    with pytest.raises(ConfigError, match="environment variable MY_KEY, which is unset"):
        build_llm("openai", project, {})


def test_a_project_without_integrations_needs_a_model_on_the_command_line() -> None:
    with pytest.raises(ConfigError, match=r"engine\.llm: integrations\.yml: no model selected"):
        build_llm("", Project(), {"OPENAI_API_KEY": "k"})


def test_unknown_specs_list_the_choices() -> None:
    with pytest.raises(ConfigError, match="use scripted:FILE, openai, openai:MODEL"):
        build_llm("nonsense:x", Project(), {})


def test_scripted_specs_still_work(tmp_path: Path) -> None:
    script = tmp_path / "s.yml"
    script.write_text("turns:\n  - say: Hi.\n")
    assert isinstance(build_llm(f"scripted:{script}", Project(), {})("c1"), ScriptedLLM)


async def test_specs_reach_the_server_with_model_and_key() -> None:
    reply = Reply(sse([*text_chunks("Hi.", 10), chunk({}, "stop")]))
    async with ChatServer.replying(reply, reply, reply) as server:
        in_project = project_with(
            {
                "provider": "self-hosted",
                "model": "proj-model",
                "api_base": server.base_url,
                "api_key_env": "K",
            }
        )
        environ = {"K": "sk-from-env"}
        for spec in ("openai", "", "openai:other-model"):
            llm = build_llm(spec, in_project, environ)("call-1")
            assert [i async for i in llm.stream([UserMessage("hi")], [])] == [TextDelta("Hi.")]
    sent = [(r.body["model"], r.headers["Authorization"]) for r in server.requests]
    assert sent == [
        ("proj-model", "Bearer sk-from-env"),
        ("proj-model", "Bearer sk-from-env"),
        ("other-model", "Bearer sk-from-env"),
    ]


async def test_a_base_url_override_needs_no_key() -> None:
    reply = Reply(sse([*text_chunks("Hi.", 10), chunk({}, "stop")]))
    async with ChatServer.replying(reply) as server:
        project = project_with({"provider": "openai", "model": "gpt"})  # key var unset
        llm = build_llm(f"openai:local@{server.base_url}", project, {})("call-1")
        assert [i async for i in llm.stream([UserMessage("hi")], [])] == [TextDelta("Hi.")]
    (request,) = server.requests
    assert request.body["model"] == "local"
    assert "Authorization" not in request.headers


def test_the_inline_llm_form_is_one_model_entry() -> None:
    inline = Integrations(
        llm={
            "provider": "openai",
            "model": "gpt-4o-mini",
            "api_key_env": "BANK_OPENAI_KEY",
            "temperature": 0.2,
        }
    )
    settings = select_chat_model(inline)
    assert settings == ChatModelSettings(
        "gpt-4o-mini", OPENAI_BASE_URL, "BANK_OPENAI_KEY", options={"temperature": 0.2}
    )


def test_settings_beside_model_group_are_layered_over_the_groups_model() -> None:
    chosen = Integrations(
        llm={"model_group": "main", "temperature": 0.7, "max_prompt_tokens": 4000},
        model_groups={"main": ({"provider": "openai", "model": "m", "temperature": 0.1},)},
    )
    settings = select_chat_model(chosen)
    assert settings.options == {"temperature": 0.7}  # max_prompt_tokens is not a request field


@pytest.mark.parametrize(
    ("provider", "base_url", "key_env"),
    [
        ("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        ("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        ("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    ],
)
def test_hosted_openai_compatible_providers_get_their_endpoint_and_key(
    provider: str, base_url: str, key_env: str
) -> None:
    settings = select_chat_model(Integrations(llm={"provider": provider, "model": "m"}))
    assert (settings.base_url, settings.api_key_env) == (base_url, key_env)


@pytest.mark.parametrize("provider", ["ollama", "vllm"])
def test_self_hosted_provider_names_need_an_api_base(provider: str) -> None:
    with pytest.raises(ConfigError, match="'api_base' must be a non-empty string"):
        select_chat_model(Integrations(llm={"provider": provider, "model": "m"}))
    settings = select_chat_model(
        Integrations(llm={"provider": provider, "model": "m", "api_base": "http://h:1/v1"})
    )
    assert (settings.endpoint, settings.api_key_env) == ("http://h:1/v1/chat/completions", "")


async def test_an_unsupported_provider_loads_and_fails_at_the_first_model_call() -> None:
    project = Project(integrations=Integrations(llm={"provider": "azure", "deployment": "gpt"}))
    llm = build_llm("openai", project, {})("call-1")  # no error at build time
    with pytest.raises(LLMError, match="provider 'azure' is not supported"):
        [item async for item in llm.stream([UserMessage("hi")], [])]


def test_a_model_on_the_command_line_replaces_an_unsupported_provider() -> None:
    project = Project(integrations=Integrations(llm={"provider": "anthropic", "model": "c"}))
    llm = build_llm("openai:gpt-4o", project, {"OPENAI_API_KEY": "k"})("call-1")
    assert not isinstance(llm, UnavailableLLM)
