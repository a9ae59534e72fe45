"""Which chat model a project runs on: ``integrations.yml`` ``llm`` + ``model_groups`` (§2.2).

Contract §2.2: ``llm.model_group`` names the group driving the agent; each group lists model
entries ``{provider, model, api_key_env, api_base, ...}``, and provider-specific extras (e.g.
``temperature``) pass through. The 3.19 inline form ``llm: {provider, model, api_key_env,
temperature}`` (§2.2 [drift]) is one such entry written under ``llm`` itself; settings written
beside ``model_group`` are layered over the group's entry. A group with several models is a
router/fallback on some Mantle builds; voicegate uses the group's first model.

voicegate speaks one protocol, OpenAI Chat Completions, so it serves the providers that use
it: ``openai`` (``api_base`` defaults to OpenAI's, the key to ``OPENAI_API_KEY``),
``self-hosted`` (vLLM, Ollama, TGI, ...: ``api_base`` required, no key unless ``api_key_env``
names one), and the hosted OpenAI-compatible providers of :data:`COMPATIBLE_PROVIDERS`. Any
other provider (``anthropic``, ``azure``, ``gemini``, ...) raises
:class:`UnsupportedProviderError`: the CLI turns it into a model that fails at its first call,
so the project still loads (and runs with ``--llm scripted:FILE`` or ``rules``).

Nothing here reads the environment (design §7): the settings carry the variable's NAME and the
CLI resolves it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicegate.engine.project.config_model import Integrations
from voicegate.errors import ConfigError


class UnsupportedProviderError(ConfigError):
    """The project selects a provider voicegate cannot call (reported at the first call)."""


OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
#: Hosted providers that serve the OpenAI Chat Completions protocol: name -> (base URL, key
#: variable). LiteLLM's provider names, so a project written for Mantle selects them as is.
COMPATIBLE_PROVIDERS: Mapping[str, tuple[str, str]] = {
    "openai": (OPENAI_BASE_URL, OPENAI_KEY_ENV),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "together_ai": ("https://api.together.xyz/v1", "TOGETHERAI_API_KEY"),
    "fireworks_ai": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_AI_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "perplexity": ("https://api.perplexity.ai", "PERPLEXITYAI_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
}
#: Servers run by the project owner: ``api_base`` is required and no key is assumed.
SELF_HOSTED_PROVIDERS = ("self-hosted", "vllm", "hosted_vllm", "ollama", "lm_studio")
SUPPORTED_PROVIDERS = (*COMPATIBLE_PROVIDERS, *SELF_HOSTED_PROVIDERS)
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_READ_TIMEOUT_S = 30.0

#: Entry keys voicegate reads itself; every other key is sent in the request body.
_ENTRY_KEYS = frozenset(
    {"provider", "model", "api_base", "api_key_env", "timeout", "model_group", "max_prompt_tokens"}
)
#: Never sent: contract §2.2 keeps keys out of ``llm``/``model_groups`` (``api_key_env`` names
#: the variable instead), so an ``api_key`` there is a literal secret or an unexpanded
#: ``${VAR}``; validation warns (``config.integrations.key_in_model``).
_SECRET_KEYS = frozenset({"api_key"})


@dataclass(frozen=True, slots=True)
class ChatModelSettings:
    """How to reach one model on an OpenAI-compatible Chat Completions endpoint.

    ``api_key_env`` is the NAME of the environment variable holding the key ("" for none).
    ``read_timeout_s`` bounds the wait for the response headers and then for each piece of
    new text or tool call, so a long answer that keeps streaming is never cut, and a stream of
    keep-alives alone times out. ``options`` are extra request-body fields (``temperature``,
    ``max_tokens``, ...).
    """

    model: str
    base_url: str = OPENAI_BASE_URL
    api_key_env: str = OPENAI_KEY_ENV
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ConfigError("the chat model needs a model name")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"the model's base URL must start with http(s)://: {self.base_url!r}")
        if self.connect_timeout_s <= 0 or self.read_timeout_s <= 0:
            raise ConfigError("the chat model's timeouts must be positive numbers of seconds")

    @property
    def endpoint(self) -> str:
        """The Chat Completions URL: ``{base_url}/chat/completions``."""
        return f"{self.base_url.rstrip('/')}/chat/completions"


def select_chat_model(integrations: Integrations) -> ChatModelSettings:
    """The model ``llm`` selects; ConfigError says what is missing or unsupported
    (UnsupportedProviderError for a provider voicegate cannot call)."""
    entry, where = selected_entry(integrations)
    return _settings_of(entry, where)


def selected_entry(integrations: Integrations) -> tuple[Mapping[str, Any], str]:
    """The model entry ``llm`` selects (inline, or a group's first model with the settings
    written beside ``model_group`` over it) and where it was written."""
    llm = integrations.llm
    group_id = llm.get("model_group")
    if group_id is None and ("provider" in llm or "model" in llm or "deployment" in llm):
        return llm, "integrations.yml: llm"  # the 3.19 inline form (§2.2 [drift])
    if not isinstance(group_id, str) or not group_id:
        raise ConfigError(
            "integrations.yml: no model selected (write 'llm: {model_group: ID}' and a model "
            "group with that id), or name the model on the command line: openai:MODEL[@BASE_URL]"
        )
    models = integrations.model_groups.get(group_id)
    if not models:
        raise ConfigError(f"integrations.yml: llm.model_group {group_id!r} has no models")
    return {**models[0], **llm}, f"integrations.yml: model group {group_id!r}"


def _settings_of(entry: Mapping[str, Any], where: str) -> ChatModelSettings:
    provider = entry.get("provider", "openai")  # LiteLLM's default provider
    if provider not in SUPPORTED_PROVIDERS:
        raise UnsupportedProviderError(
            f"{where}: provider {provider!r} is not supported; voicegate speaks the OpenAI Chat "
            f"Completions protocol, so use one of {list(SUPPORTED_PROVIDERS)} (self-hosted with "
            "api_base for any OpenAI-compatible server), or run with --llm scripted:FILE or rules"
        )
    model = _text(entry, "model", where, required=True)
    hosted = COMPATIBLE_PROVIDERS.get(provider)
    base_url = _text(entry, "api_base", where, required=hosted is None)
    default_base, default_key_env = hosted or ("", "")
    try:
        return ChatModelSettings(
            model=model,
            base_url=base_url or default_base,
            api_key_env=_text(entry, "api_key_env", where) or default_key_env,
            read_timeout_s=_timeout(entry, where),
            options={
                key: value
                for key, value in entry.items()
                if key not in _ENTRY_KEYS and key not in _SECRET_KEYS
            },
        )
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


def _text(entry: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str:
    value = entry.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: '{key}' must be a non-empty string")
    return value.strip()


def _timeout(entry: Mapping[str, Any], where: str) -> float:
    value = entry.get("timeout")
    if value is None:
        return DEFAULT_READ_TIMEOUT_S
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{where}: 'timeout' must be a positive number of seconds")
    return float(value)
