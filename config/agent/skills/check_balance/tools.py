"""Tools of the demo's check_balance skill, written against the documented import paths."""

import asyncio

from lib.accounts import ACCOUNTS
from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult


@tool(description="Look up the balance of one of the customer's accounts")
async def check_balance(account_id: str, context: ToolContext = None) -> ToolResult:
    context.memory.set("account_id", account_id)
    await context.send("One moment while I look that up.")
    await asyncio.sleep(1.5)  # stands in for a slow call to the bank's API
    if account_id not in ACCOUNTS:
        return ToolResult(llm_response={"error": f"no account {account_id}"})
    balance = ACCOUNTS[account_id]
    context.memory.set("current_balance", balance)
    context.memory.set("balance_checks", context.memory.get("balance_checks", 0) + 1)
    return ToolResult(llm_response={"balance": balance, "currency": "USD"})
