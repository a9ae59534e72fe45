"""The send_money skill's own tools."""

from lib.ledger import ACCOUNTS
from rasa.mantle.tools.buttons import Button
from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult


@tool(description="Offer one button per account (source of utter_pick_account)")
async def account_buttons(context: ToolContext = None) -> ToolResult:
    accounts = ACCOUNTS.get(context.memory.get("customer_id"), [])
    context.set_buttons(
        [
            Button(
                title=account["label"],
                value=account["id"],
                ref="session.send_money.from_account",
            )
            for account in accounts
        ]
    )
    return ToolResult()
