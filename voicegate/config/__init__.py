"""Settings: ``config/voicegate.yml`` parsed once at the edge into frozen dataclasses."""

from voicegate.config.loader import (
    DEFAULT_CONFIG_PATH,
    load_settings,
    parse_settings,
    settings_from_data,
)
from voicegate.config.settings import (
    AudioSettings,
    BrowserSettings,
    EngineSettings,
    PlayoutSettings,
    ProvidersSettings,
    ServerSettings,
    Settings,
    SpeechSettings,
    StoreSettings,
    TwilioSettings,
)

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "AudioSettings",
    "BrowserSettings",
    "EngineSettings",
    "PlayoutSettings",
    "ProvidersSettings",
    "ServerSettings",
    "Settings",
    "SpeechSettings",
    "StoreSettings",
    "TwilioSettings",
    "load_settings",
    "parse_settings",
    "settings_from_data",
]
