"""Tools of the demo's report_lost_card skill."""

import asyncio

from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult


@tool(description="Block the customer's card with these last four digits")
async def block_card(card_number: str, context: ToolContext = None) -> ToolResult:
    digits = "".join(ch for ch in card_number if ch.isdigit())
    if len(digits) != 4:
        return ToolResult(llm_response={"error": "the last four digits are needed"})
    await asyncio.sleep(0.5)  # stands in for the card processor
    context.memory.set("blocked", True)
    return ToolResult(llm_response={"blocked": True, "card": f"**** {digits}"})
