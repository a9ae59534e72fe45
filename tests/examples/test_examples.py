"""Every example in examples/ runs as its README says (issue 18)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

import voicegate
from voicegate.cli.serve_command import gateway_options
from voicegate.config import load_settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WAV = EXAMPLES / "replay_in_pytest" / "check_my_balance.wav"
SID = "CA00000000000000000000000000000042"


def module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def test_every_example_has_a_readme() -> None:
    examples = [path for path in EXAMPLES.iterdir() if path.is_dir()]
    assert len(examples) >= 4
    assert all((path / "README.md").is_file() for path in examples)


async def test_the_custom_engine_takes_an_order(tmp_path: Path) -> None:
    bot = module(EXAMPLES / "custom_engine" / "bot.py")
    assert len((EXAMPLES / "custom_engine" / "bot.py").read_text().splitlines()) <= 35
    transcript = tmp_path / "said.txt"
    transcript.write_text("a coffee and a cake please\n", encoding="utf-8")
    settings = voicegate.load_settings(port=0)
    settings = replace(
        settings,
        speech=replace(settings.speech, stt=f"scripted:{transcript}", tts="tone"),
        store=replace(settings.store, data_dir=tmp_path / "data"),
        limits=replace(settings.limits, media_max_speed=4.0),
    )
    async with voicegate.open_gateway(settings, engine=bot.reply) as gateway:
        url = gateway.base_url.replace("http", "ws") + "/twilio"
        code = await voicegate.call_twilio(url, WAV, speed=3.0)
        timeline = await voicegate.call_timeline(gateway, SID)
        listed = voicegate.recent_calls(gateway)
    said = [r["text"] for r in timeline if r["event"] == "say"]
    assert code == 1000
    assert said == ["One coffee and one cake, noted.", "That is 7 dollars so far."]
    assert [c["provider_call_id"] for c in listed] == [SID]


async def test_the_replay_example_passes(tmp_path: Path) -> None:
    # In this process (a second interpreter would double the imports); the example itself
    # runs with `python -m pytest examples/replay_in_pytest`, as its README says.
    example = module(EXAMPLES / "replay_in_pytest" / "test_demo_call.py")
    await example.test_the_bank_tells_the_caller_their_balance(tmp_path)


def test_the_production_twilio_configuration_loads_and_is_locked_down() -> None:
    settings = load_settings(EXAMPLES / "twilio_production" / "voicegate.yml")
    names = settings.secret_env_names()
    environ = {name: f"secret-{name}" for name in names.values()}
    options = gateway_options(settings, environ)  # refuses 0.0.0.0 if anything is open
    assert options.host == "0.0.0.0"
    assert options.public_url == "https://voice.example.com"
    assert options.twilio is not None
    assert options.twilio.auth_token == "secret-TWILIO_AUTH_TOKEN"
    assert options.twilio.stream_secret == "secret-VOICEGATE_STREAM_SECRET"
    others = ("browser", "telnyx", "plivo", "vonage", "exotel", "jambonz", "genesys", "freeswitch")
    assert [name for name in others if getattr(options, name) is not None] == []
    assert options.metrics_token == "secret-VOICEGATE_METRICS_TOKEN"
    assert options.calls_token == "secret-VOICEGATE_CALLS_TOKEN"
    assert options.call_logs is not None
    assert options.call_logs.directory == Path("/var/lib/voicegate/calls")
    assert settings.speech.stt == "deepgram"
    with pytest.raises(voicegate.ConfigError, match="TWILIO_AUTH_TOKEN"):
        gateway_options(settings, {k: v for k, v in environ.items() if "TWILIO" not in k})
