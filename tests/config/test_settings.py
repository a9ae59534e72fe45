"""config/voicegate.yml and the settings loader: documented defaults, strict checking."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from voicegate.cli.serve_command import apply_overrides, resolve_secrets
from voicegate.config import Settings, load_settings, parse_settings
from voicegate.errors import ConfigError
from voicegate.gateway.options import BrowserOptions
from voicegate.vad.settings import ScorerKind

SHIPPED = Path(__file__).parents[2] / "config" / "voicegate.yml"


def test_the_shipped_file_parses_to_exactly_the_built_in_defaults() -> None:
    assert load_settings(SHIPPED) == Settings()


def field_tree(instance: Any) -> dict[str, Any]:
    """Field names of a settings dataclass, nested sections as sub-trees, leaves as None."""
    return {
        f.name: field_tree(getattr(instance, f.name))
        if dataclasses.is_dataclass(getattr(instance, f.name))
        else None
        for f in dataclasses.fields(instance)
    }


def key_tree(data: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    """The keys of the parsed file, nested where the settings have sections."""
    return {
        key: key_tree(value, template.get(key) or {})
        if isinstance(template.get(key), dict)
        else None
        for key, value in data.items()
    }


def test_every_setting_is_a_key_of_the_shipped_file_and_nothing_else() -> None:
    # Catches a field added to a settings dataclass (or to VadSettings, BargeInPolicy) that
    # the documented file does not show.
    expected = field_tree(Settings())
    assert key_tree(yaml.safe_load(SHIPPED.read_text(encoding="utf-8")), expected) == expected


def test_every_key_of_the_shipped_file_has_a_comment_above_it() -> None:
    lines = SHIPPED.read_text(encoding="utf-8").splitlines()
    leaf = re.compile(r"^\s*([a-z_]+):\s*\S")  # a key with its value on the same line
    for number, line in enumerate(lines):
        if leaf.match(line):
            previous = lines[number - 1].strip()
            assert previous.startswith("#"), f"line {number + 1} ({line.strip()}) has no comment"


def test_an_empty_file_means_every_default() -> None:
    assert parse_settings("") == Settings()
    assert parse_settings("# nothing but comments\n") == Settings()


def test_values_are_converted_to_their_types() -> None:
    settings = parse_settings(
        """
server: {public_url: "https://voice.example.com", shutdown_deadline_s: 5}
providers:
  twilio: {parameters: {tenant: acme}, webhook_fields: [CallSid], auth_token_env: TW_TOKEN}
  browser: {output_sample_rate: 48000}
vad: {scorer: silero}
barge_in: {backchannels: [uh-huh, yeah], min_speech_ms: 300}
engine: {project_dir: elsewhere/agent, llm: "scripted:calls/demo.yml"}
"""
    )
    assert settings.server.shutdown_deadline_s == 5.0
    assert isinstance(settings.server.shutdown_deadline_s, float)
    assert settings.providers.twilio.parameters == {"tenant": "acme"}
    assert settings.providers.twilio.webhook_fields == ("CallSid",)
    assert settings.vad.scorer is ScorerKind.SILERO
    assert settings.barge_in.backchannels == frozenset({"uh-huh", "yeah"})
    assert settings.barge_in.min_speech_ms == 300
    assert settings.engine.project_dir == Path("elsewhere/agent")
    assert settings.engine.llm == "scripted:calls/demo.yml"
    assert settings.providers.browser.output_sample_rate == 48000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("serve: {}", "conf/gw.yml: serve: unknown key; expected one of server, audio,"),
        ("server: {prot: 1}", "server.prot: unknown key; expected one of host, port,"),
        ("server: {port: '8080'}", "server.port: expected a whole number, got str '8080'"),
        ("server: {port: 70000}", "server.port: must be between 0 and 65535, got 70000"),
        ("server: {capacity: 0}", "server.capacity: must be at least 1, got 0"),
        ("server: {capacity: true}", "server.capacity: expected a whole number, got the boolean"),
        ("server: {public_url: ftp://x}", "server.public_url: must be an absolute http(s)"),
        ("server: {shutdown_deadline_s: -1}", "server.shutdown_deadline_s: must not be negative"),
        ("server: 8080", "server: expected a mapping of keys, got int 8080"),
        ("audio: {session_sample_rate: 44100}", "audio.session_sample_rate: must be one of"),
        (
            "providers: {twilio: {parameters: {tenant: 7}}}",
            "providers.twilio.parameters.tenant: expected a string, got int 7",
        ),
        (
            "providers: {twilio: {auth_token_env: 'sk_live_123 abc'}}",
            "providers.twilio.auth_token_env: must name an environment variable",
        ),
        (
            "providers: {twilio: {parameters: {From: x}}}",
            "providers.twilio.webhook_fields: repeats names set in parameters: From",
        ),
        ("providers: {twilio: {enabled: yes please}}", "providers.twilio.enabled: expected true"),
        (
            "providers: {browser: {output_sample_rate: 11025}}",
            "providers.browser.output_sample_rate: must be one of",
        ),
        ("vad: {scorer: magic}", "vad.scorer: expected one of webrtc, silero, combined"),
        ("vad: {webrtc_aggressiveness: 5}", "vad.webrtc_aggressiveness: must be one of 0, 1, 2, 3"),
        ("barge_in: {min_speech_ms: -5}", "barge_in.min_speech_ms: must not be negative"),
        ("barge_in: {backchannels: uh}", "barge_in.backchannels: expected a list, got str"),
        ("barge_in: {backchannels: [ok, 1]}", "barge_in.backchannels[1]: expected a string"),
        ("playout: {send_ahead_ms: 1.5}", "playout.send_ahead_ms: expected a whole number"),
        ("playout: {chunk_ms: 0}", "playout.chunk_ms: must be at least 1 ms, got 0"),
        ("engine: {llm: null}", "engine.llm: expected a string, got nothing (null)"),
        ("server:\n  port: 1\n  port: 2\n", ":3: invalid YAML: the key 'port' appears twice"),
        ("server: {port: [1}", "invalid YAML"),
        ("- a list", "(top level): expected a mapping of keys, got a list"),
    ],
)
def test_bad_settings_name_the_file_and_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_settings(text, "conf/gw.yml")
    assert str(error.value).startswith("conf/gw.yml")
    assert message in str(error.value)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yml"
    with pytest.raises(ConfigError, match=re.escape(str(missing))):
        load_settings(missing)


def test_gateway_options_follow_the_settings() -> None:
    settings = parse_settings(
        """
server: {host: 0.0.0.0, port: 9000, capacity: 3, public_url: "https://gw.example"}
providers:
  twilio: {enabled: false}
  browser: {output_sample_rate: 24000}
"""
    )
    options = settings.gateway_options()
    assert (options.host, options.port, options.capacity) == ("0.0.0.0", 9000, 3)
    assert options.public_url == "https://gw.example"
    assert options.twilio is None
    assert options.browser == BrowserOptions(output_sample_rate=24000)
    defaults = Settings().gateway_options(twilio_auth_token="tok")
    assert defaults.twilio is not None
    assert defaults.twilio.auth_token == "tok"
    assert defaults.twilio.webhook_fields == ("CallSid", "From", "To")


def test_secrets_are_named_in_the_file_and_resolved_from_the_environment() -> None:
    settings = parse_settings("providers: {twilio: {auth_token_env: TW_TOKEN}}")
    assert settings.secret_env_names() == {"providers.twilio.auth_token_env": "TW_TOKEN"}
    assert resolve_secrets(settings, {"TW_TOKEN": "abc"}) == {
        "providers.twilio.auth_token_env": "abc"
    }
    with pytest.raises(ConfigError, match=r"providers\.twilio\.auth_token_env names .* TW_TOKEN"):
        resolve_secrets(settings, {})
    assert resolve_secrets(Settings(), {}) == {}
    # A disabled provider needs no secret.
    disabled = parse_settings("providers: {twilio: {enabled: false, auth_token_env: TW_TOKEN}}")
    assert resolve_secrets(disabled, {}) == {}


def test_command_line_overrides_replace_only_what_they_name() -> None:
    base = parse_settings("server: {port: 9000}\nengine: {llm: 'scripted:a.yml'}")
    same = apply_overrides(base)
    assert same == base
    changed = apply_overrides(base, host="0.0.0.0", project=Path("p"), llm="scripted:b.yml")
    assert (changed.server.host, changed.server.port) == ("0.0.0.0", 9000)
    assert changed.engine == dataclasses.replace(
        base.engine, project_dir=Path("p"), llm="scripted:b.yml"
    )
    with pytest.raises(ConfigError, match="command line: port must be between"):
        apply_overrides(base, port=-1)
