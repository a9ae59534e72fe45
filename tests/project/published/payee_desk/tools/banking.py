"""Shared banking tools; each skill imports only the ones it needs."""

from lib.ledger import ACCOUNTS, PAYEES
from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult


def _accounts(context: ToolContext) -> list[dict]:
    return ACCOUNTS.get(context.memory.get("customer_id"), [])


def _remember_payee(context: ToolContext, exists: bool) -> None:
    context.memory.set("payee_exists", exists)


@tool(description="List the customer's accounts with their balances")
async def list_accounts(context: ToolContext = None) -> ToolResult:
    accounts = _accounts(context)
    return ToolResult(llm_response={"accounts": accounts})


@tool(description="Check whether a payee is already on the customer's list")
async def check_payee_exists(payee_name: str, context: ToolContext = None) -> ToolResult:
    known = PAYEES.get(context.memory.get("customer_id"), set())
    exists = payee_name.strip().lower() in known
    _remember_payee(context, exists)
    return ToolResult(llm_response={"exists": exists})


@tool(description="Send money to a payee")
async def send_transfer(context: ToolContext = None) -> ToolResult:
    amount = context.memory.get("amount")
    context.memory.set("transfer_reference", f"TR-{int(amount * 100)}")
    count = context.memory.get("project.transfers_made") or 0
    context.memory.set("project.transfers_made", count + 1)
    return ToolResult(llm_response={"ok": True, "amount": amount})
