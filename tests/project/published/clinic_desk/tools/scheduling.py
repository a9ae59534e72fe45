"""Shared scheduling tools. Skills import the tools they need, and book_visit imports the
hook that checks the chosen date."""

import datetime

from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult

DOCTORS = {"dr_lee": "Dr. Lee (family medicine)", "dr_ortiz": "Dr. Ortiz (pediatrics)"}


class Calendar:
    """The clinic calendar, as the tools see it."""

    def __init__(self, context: ToolContext) -> None:
        self.context = context

    def book(self, doctor: str, date: str) -> str:
        visit_id = f"V-{doctor}-{date}"
        self.context.memory.set("visit_id", visit_id)
        booked = self.context.memory.get("project.visits_booked") or 0
        self.context.memory.set("project.visits_booked", booked + 1)
        return visit_id


@tool(description="List the clinic's doctors")
async def list_doctors(context: ToolContext = None) -> ToolResult:
    return ToolResult(llm_response={"doctors": DOCTORS})


@tool(description="Book a visit with a doctor on the chosen date")
async def book_visit(doctor: str, context: ToolContext = None) -> ToolResult:
    date = context.memory.get("visit_date")
    if doctor not in DOCTORS:
        return ToolResult(llm_response={"error": f"no doctor {doctor!r}"})
    return ToolResult(llm_response={"visit_id": Calendar(context).book(doctor, date)})


@tool(description="Check that the visit date is a weekday in the future")
async def run_after_setting_visit_date(context: ToolContext = None) -> ToolResult:
    day = datetime.date.fromisoformat(context.memory.get("visit_date"))
    context.memory.set("weekday", day.strftime("%A"))
    if day.weekday() >= 5:
        return ToolResult(llm_response={"error": "the clinic is closed at weekends"})
    return ToolResult(llm_response={"error": None})


@tool(description="Cancel a booked visit")
async def cancel_visit(visit_id: str, context: ToolContext = None) -> ToolResult:
    context.memory.set("cancelled_visit", visit_id)
    return ToolResult(llm_response={"cancelled": visit_id})
