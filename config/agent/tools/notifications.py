"""A shared tool (skills attach it with import_tools): texts the caller a confirmation."""

import asyncio

from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult


@tool(description="Send the caller a text message confirming what was just done")
async def send_sms_confirmation(message: str, context: ToolContext = None) -> ToolResult:
    await asyncio.sleep(0)  # stands in for the SMS gateway
    return ToolResult(llm_response={"sent": True, "message": message})
