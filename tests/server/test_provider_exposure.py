"""Off loopback, every provider route after Twilio must be authenticated or opted out."""

from __future__ import annotations

from dataclasses import replace

import pytest

from voicegate.config import Settings
from voicegate.config.settings import (
    AsteriskSettings,
    BrowserSettings,
    ExotelSettings,
    FreeSwitchSettings,
    GenesysSettings,
    JambonzSettings,
    PlivoSettings,
    ProvidersSettings,
    ServerSettings,
    TelnyxSettings,
    TwilioSettings,
    VonageSettings,
)
from voicegate.errors import ConfigError

OPEN_TWILIO = TwilioSettings(allow_unauthenticated=True)
OPEN_BROWSER = BrowserSettings(allow_unauthenticated=True)


def exposed(
    telnyx: TelnyxSettings,
    plivo: PlivoSettings,
    vonage: VonageSettings,
    exotel: ExotelSettings,
    jambonz: JambonzSettings,
    genesys: GenesysSettings,
    freeswitch: FreeSwitchSettings,
    asterisk: AsteriskSettings,
) -> Settings:
    """Settings on 0.0.0.0 with these sections (Twilio and the browser opted out)."""
    providers = ProvidersSettings(
        OPEN_TWILIO,
        OPEN_BROWSER,
        telnyx,
        plivo,
        vonage,
        exotel,
        jambonz,
        genesys,
        freeswitch,
        asterisk,
    )
    return replace(Settings(), server=ServerSettings(host="0.0.0.0"), providers=providers)


def test_each_provider_route_needs_its_secrets_off_loopback() -> None:
    with pytest.raises(ConfigError) as refused:
        exposed(
            TelnyxSettings(),
            PlivoSettings(),
            VonageSettings(),
            ExotelSettings(),
            JambonzSettings(),
            GenesysSettings(),
            FreeSwitchSettings(),
            AsteriskSettings(),
        ).check_exposure()
    message = str(refused.value)
    assert "providers.telnyx needs public_key_env and stream_auth_token_env" in message
    assert "providers.plivo needs auth_token_env" in message
    assert "providers.vonage needs signature_secret_env" in message
    assert "providers.exotel needs username and password_env" in message
    assert "providers.jambonz needs username and password_env" in message
    assert "providers.genesys needs api_key_env and client_secret_env" in message
    assert "providers.freeswitch needs username and password_env" in message
    assert "providers.asterisk needs username and password_env" in message
    exposed(
        TelnyxSettings(public_key_env="TX_KEY", stream_auth_token_env="TX_TOKEN"),
        PlivoSettings(auth_token_env="PLIVO_TOKEN"),
        VonageSettings(signature_secret_env="VONAGE_SECRET"),
        ExotelSettings(username="bot", password_env="EXOTEL_PASSWORD"),
        JambonzSettings(username="bot", password_env="JAMBONZ_PASSWORD"),
        GenesysSettings(api_key_env="GENESYS_KEY", client_secret_env="GENESYS_SECRET"),
        FreeSwitchSettings(username="bot", password_env="FREESWITCH_PASSWORD"),
        AsteriskSettings(username="asterisk", password_env="ASTERISK_PASSWORD"),
    ).check_exposure()
    exposed(
        TelnyxSettings(allow_unauthenticated=True),
        PlivoSettings(enabled=False),
        VonageSettings(allow_unauthenticated=True),
        ExotelSettings(allow_unauthenticated=True),
        JambonzSettings(enabled=False),
        GenesysSettings(allow_unauthenticated=True),
        FreeSwitchSettings(allow_unauthenticated=True),
        AsteriskSettings(allow_unauthenticated=True),
    ).check_exposure()
