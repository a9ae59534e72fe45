"""Conditions as a Python author writes them, end to end (fixtures/projects/lumen_energy).

Numbers as `1e3`, `.5`, `-2`, `1.5e2`, `-1e2`; chained comparisons; string equality and
ordering; `not` and nested parentheses: in response variants, `if:` paragraphs, `utter: when:`
and a tool's `requires` (contract §3). The project did not load before session 11.
"""

from pathlib import Path
from typing import Any

import yaml

from tests.loop.loop_kit import ROOT, Chat, said, started
from voicegate.cli.main import main

LUMEN = ROOT / "fixtures" / "projects" / "lumen_energy"
ANYTHING_ELSE = "Is there anything else I can help you with?"


def script(name: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = yaml.safe_load(Path(LUMEN / name).read_text())["turns"]
    return turns


def test_the_project_validates() -> None:
    assert main(["validate", str(LUMEN)]) == 0


async def test_a_gold_customer_with_high_usage() -> None:
    # seeds as a call's parameters carry them: text, read as the declared float
    chat = await Chat(LUMEN, script("conversation_gold.yml"), tier="gold", meter_kw="0.7").open()
    await chat.send("I'd like some advice")
    # meter_kw > .5 and tier != 'bronze'; tier >= "gold" and tier < "silver"
    assert "Mention the live meter reading of 0.7 kW." in chat.prompt()
    assert "Offer the gold hotline." in chat.prompt()
    assert "pick_plan" not in chat.tools()  # daily_kwh > 0.0 does not hold while unset

    second = await chat.send("about 1200 kwh")
    # daily_kwh >= 1e3
    assert said(second) == [
        "That is a very high usage of 1200.0 kWh a day.",
        "Do you run a business from home?",
    ]
    assert "Ask whether they run a business from home." in chat.prompt()
    assert "pick_plan" in chat.tools()  # budget == None or budget >= -1e2

    third = await chat.send("my budget is minus 50, 3 degrees cooler, solar panels, north")
    assert said(third) == [
        "A cut of more than two degrees saves a lot.",  # delta < -2
        # solar and (south or (north and not budget < 1.5e2)): not for a budget of -50
        "Consider a time-of-use plan.",
        "Your plan credit is on its way.",
        ANYTHING_ELSE,
    ]
    assert started(third) == ["pick_plan"]
    assert chat.stack == []


async def test_a_bronze_customer_with_almost_no_usage() -> None:
    chat = await Chat(
        LUMEN, script("conversation_bronze.yml"), tier="bronze", meter_kw="0.2"
    ).open()
    first = await chat.send("advice please, we use 0.3 kWh")
    assert said(first) == ["That is almost nothing.", "What is your budget?"]  # <= .5
    assert "live meter reading" not in chat.prompt()
    assert "gold hotline" not in chat.prompt()

    second = await chat.send("40 euros, 1.5 degrees warmer, solar in the south")
    assert said(second) == [
        "Small changes add up.",  # -2 <= delta <= 2.0
        "With solar in the south, run appliances at noon.",
        "Noted.",
    ]
