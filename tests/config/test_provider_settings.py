"""Provider settings after Twilio: keys, checks, secrets, options."""

from __future__ import annotations

import pytest

from voicegate.config import Settings
from voicegate.config.loader import parse_settings
from voicegate.errors import ConfigError
from voicegate.types import AudioEncoding, AudioFormat

KEY = "A" * 43 + "="  # 32 bytes of zeros, base64 (a valid Ed25519 encoding)


def test_telnyx_settings_become_options_with_resolved_secrets() -> None:
    settings = parse_settings(
        "providers:\n  telnyx:\n    public_key_env: TX_KEY\n    stream_auth_token_env: TX_TOK\n"
        "    bidirectional_codec: PCMA\n    bidirectional_sampling_rate: 16000\n"
        "    parameters: {tenant: acme}\n"
    )
    assert settings.secret_env_names() == {
        "providers.telnyx.public_key_env": "TX_KEY",
        "providers.telnyx.stream_auth_token_env": "TX_TOK",
    }
    secrets = {
        "providers.telnyx.public_key_env": KEY,
        "providers.telnyx.stream_auth_token_env": "t",
    }
    telnyx = settings.gateway_options(secrets=secrets).telnyx
    assert telnyx is not None
    assert telnyx.public_key == KEY
    assert telnyx.stream_auth_token == "t"
    assert telnyx.outbound_format == AudioFormat(AudioEncoding.PCMA, 16000)
    assert dict(telnyx.parameters) == {"tenant": "acme"}


def test_disabled_telnyx_has_no_options_and_no_secrets() -> None:
    settings = parse_settings("providers:\n  telnyx:\n    enabled: false\n    public_key_env: K\n")
    assert settings.secret_env_names() == {}
    assert settings.gateway_options().telnyx is None
    assert Settings().gateway_options().telnyx is not None  # on by default, like Twilio


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        ("bidirectional_codec: OPUS", "providers.telnyx.bidirectional_codec: must be one of"),
        ("bidirectional_sampling_rate: 44100", "sampling rate must be one of"),
        ("public_key_env: 'not a name'", "providers.telnyx.public_key_env: must name"),
    ],
)
def test_bad_telnyx_settings_name_the_key(yaml_text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_settings(f"providers:\n  telnyx:\n    {yaml_text}\n")


def test_plivo_settings_become_options_with_the_resolved_token() -> None:
    settings = parse_settings(
        "providers:\n  plivo:\n    auth_token_env: PL_TOKEN\n"
        "    content_type: audio/x-l16;rate=16000\n    parameters: {tenant: acme}\n"
    )
    assert settings.secret_env_names() == {"providers.plivo.auth_token_env": "PL_TOKEN"}
    plivo = settings.gateway_options(secrets={"providers.plivo.auth_token_env": "tok"}).plivo
    assert plivo is not None
    assert plivo.auth_token == "tok"
    assert plivo.outbound_format == AudioFormat(AudioEncoding.L16, 16000)
    assert (
        parse_settings("providers:\n  plivo:\n    enabled: false\n").gateway_options().plivo is None
    )


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        ("content_type: audio/x-alaw;rate=8000", "providers.plivo: plivo content_type must be"),
        ("parameters: {tenant: acme-corp}", "letters and digits only"),
        ("auth_token_env: '1X'", "providers.plivo.auth_token_env: must name"),
    ],
)
def test_bad_plivo_settings_name_the_key(yaml_text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        parse_settings(f"providers:\n  plivo:\n    {yaml_text}\n")


def test_vonage_settings_become_options_with_the_resolved_secret() -> None:
    settings = parse_settings(
        "providers:\n  vonage:\n    signature_secret_env: VG_SECRET\n"
        "    content_type: audio/l16;rate=8000\n"
    )
    assert settings.secret_env_names() == {"providers.vonage.signature_secret_env": "VG_SECRET"}
    secrets = {"providers.vonage.signature_secret_env": "s"}
    vonage = settings.gateway_options(secrets=secrets).vonage
    assert vonage is not None
    assert vonage.signature_secret == "s"
    assert vonage.content_type == "audio/l16;rate=8000"
    with pytest.raises(ConfigError, match=r"providers\.vonage: vonage content_type must be"):
        parse_settings("providers:\n  vonage:\n    content_type: audio/pcmu\n")


def test_exotel_settings_become_options_with_the_resolved_password() -> None:
    settings = parse_settings(
        "providers:\n  exotel:\n    username: bot\n    password_env: EXOTEL_PW\n"
        "    sample_rate: 16000\n    parameters: {tenant: acme}\n"
    )
    assert settings.secret_env_names() == {"providers.exotel.password_env": "EXOTEL_PW"}
    exotel = settings.gateway_options(secrets={"providers.exotel.password_env": "pw"}).exotel
    assert exotel is not None
    assert (exotel.username, exotel.password, exotel.sample_rate) == ("bot", "pw", 16000)
    with pytest.raises(ConfigError, match="go together"):
        parse_settings("providers:\n  exotel:\n    username: bot\n")
    with pytest.raises(ConfigError, match="sample_rate must be one of"):
        parse_settings("providers:\n  exotel:\n    sample_rate: 44100\n")


def test_jambonz_settings_become_options_with_the_resolved_password() -> None:
    settings = parse_settings(
        "providers:\n  jambonz:\n    username: bot\n    password_env: JB_PW\n"
        "    sample_rate: 16000\n"
    )
    assert settings.secret_env_names() == {"providers.jambonz.password_env": "JB_PW"}
    jambonz = settings.gateway_options(secrets={"providers.jambonz.password_env": "pw"}).jambonz
    assert jambonz is not None
    assert (jambonz.username, jambonz.password, jambonz.sample_rate) == ("bot", "pw", 16000)
    with pytest.raises(ConfigError, match="go together"):
        parse_settings("providers:\n  jambonz:\n    password_env: JB_PW\n")
    with pytest.raises(ConfigError, match="sample_rate must be one of"):
        parse_settings("providers:\n  jambonz:\n    sample_rate: 64000\n")


def test_genesys_settings_become_options_with_the_resolved_secrets() -> None:
    settings = parse_settings(
        "providers:\n  genesys:\n    api_key_env: GC_KEY\n    client_secret_env: GC_SECRET\n"
    )
    assert settings.secret_env_names() == {
        "providers.genesys.api_key_env": "GC_KEY",
        "providers.genesys.client_secret_env": "GC_SECRET",
    }
    secrets = {"providers.genesys.api_key_env": "k", "providers.genesys.client_secret_env": "c2"}
    genesys = settings.gateway_options(secrets=secrets).genesys
    assert genesys is not None
    assert (genesys.api_key, genesys.client_secret) == ("k", "c2")
    with pytest.raises(ConfigError, match="needs api_key_env"):
        parse_settings("providers:\n  genesys:\n    client_secret_env: GC_SECRET\n")


def test_freeswitch_settings_become_options_with_the_resolved_password() -> None:
    settings = parse_settings(
        "providers:\n  freeswitch:\n    username: fs\n    password_env: FS_PW\n"
        "    sample_rate: 16000\n    chunk_ms: 100\n"
    )
    assert settings.secret_env_names() == {"providers.freeswitch.password_env": "FS_PW"}
    freeswitch = settings.gateway_options(
        secrets={"providers.freeswitch.password_env": "pw"}
    ).freeswitch
    assert freeswitch is not None
    assert (freeswitch.username, freeswitch.password) == ("fs", "pw")
    assert (freeswitch.sample_rate, freeswitch.chunk_ms) == (16000, 100)
    with pytest.raises(ConfigError, match="go together"):
        parse_settings("providers:\n  freeswitch:\n    password_env: FS_PW\n")
    with pytest.raises(ConfigError, match="sample_rate must be one of"):
        parse_settings("providers:\n  freeswitch:\n    sample_rate: 24000\n")
    with pytest.raises(ConfigError, match="chunk_ms"):
        parse_settings("providers:\n  freeswitch:\n    chunk_ms: 30\n")
    assert (
        parse_settings("providers:\n  freeswitch:\n    enabled: false\n")
        .gateway_options()
        .freeswitch
        is None
    )


def test_asterisk_settings_become_options_with_the_resolved_password() -> None:
    settings = parse_settings(
        "providers:\n  asterisk:\n    username: asterisk\n    password_env: AST_PW\n"
    )
    assert settings.secret_env_names() == {"providers.asterisk.password_env": "AST_PW"}
    asterisk = settings.gateway_options(secrets={"providers.asterisk.password_env": "pw"}).asterisk
    assert asterisk is not None
    assert (asterisk.username, asterisk.password) == ("asterisk", "pw")
    with pytest.raises(ConfigError, match="go together"):
        parse_settings("providers:\n  asterisk:\n    username: asterisk\n")
    with pytest.raises(ConfigError, match="must name an environment variable"):
        parse_settings("providers:\n  asterisk:\n    username: a\n    password_env: 'no pe'\n")
    disabled = parse_settings("providers:\n  asterisk:\n    enabled: false\n")
    assert disabled.gateway_options().asterisk is None
