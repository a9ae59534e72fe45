"""Issue 15: off loopback, the secure setup is the default; opting out is explicit."""

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


def exposed(twilio: TwilioSettings, browser: BrowserSettings, host: str = "0.0.0.0") -> Settings:
    """Settings listening on ``host`` with these provider sections."""
    # The providers added after Twilio: tests/server/test_provider_exposure.py.
    providers = ProvidersSettings(
        twilio=twilio,
        browser=browser,
        telnyx=TelnyxSettings(enabled=False),
        plivo=PlivoSettings(enabled=False),
        vonage=VonageSettings(enabled=False),
        exotel=ExotelSettings(enabled=False),
        jambonz=JambonzSettings(enabled=False),
        genesys=GenesysSettings(enabled=False),
        freeswitch=FreeSwitchSettings(enabled=False),
        asterisk=AsteriskSettings(enabled=False),
    )
    return replace(Settings(), server=ServerSettings(host=host), providers=providers)


def test_loopback_may_stay_open() -> None:
    for host in ("127.0.0.1", "::1", "localhost"):
        exposed(TwilioSettings(), BrowserSettings(), host).check_exposure()


def test_a_public_address_needs_every_route_authenticated() -> None:
    with pytest.raises(ConfigError, match=r"auth_token_env and stream_secret_env.*api_key_env"):
        exposed(TwilioSettings(), BrowserSettings()).check_exposure()
    signed = TwilioSettings(auth_token_env="TWILIO_TOKEN", stream_secret_env="STREAM_SECRET")
    exposed(signed, BrowserSettings(api_key_env="BROWSER_KEY")).check_exposure()
    opted_out = exposed(
        TwilioSettings(allow_unauthenticated=True), BrowserSettings(allow_unauthenticated=True)
    )
    opted_out.check_exposure()
