"""Contract §4.6: a ``pii: true`` value is never placed in a prompt, even once it was spoken.

A response may speak a PII value (``{member_email}``). What the bot said then reaches the model
twice: the system prompt's "Already said to the user this turn" and, once heard, the history's
assistant messages. Both must carry ``[set]`` instead of the value.
"""

from __future__ import annotations

from pathlib import Path

from tests.engine.engine_kit import RecordingLLM, collect, open_call
from voicegate.engine.llm.port import AssistantMessage, SystemMessage
from voicegate.engine.llm.script import load_script
from voicegate.engine.llm.scripted import ScriptedLLM
from voicegate.engine.loop.engine import ProjectEngine
from voicegate.engine.memory.store import InMemoryStore
from voicegate.engine.project.loader import load_project
from voicegate.engine.seam import Say, Transcript

EMAIL = "sam.caller@example.org"

FILES = {
    "agent.yml": "agent:\n  persona: A gift card agent.\n",
    "memory.yml": "member_email:\n  type: text\n  pii: true\n  mutable: true\n",
    "skills/gift/skill.md": (
        "---\nname: Gift card\ndescription: Buy a gift card.\n"
        "tool_constraints:\n  - issue_card:\n      on_success: utter_gift_issued\n---\n"
        "Issue the card.\n"
    ),
    "skills/gift/responses.yml": (
        'responses:\n  utter_gift_issued:\n    - text: "Done. The card goes to {member_email}."\n'
    ),
    "skills/gift/tools.py": (
        "from rasa.mantle.tools.decorator import ToolContext, tool\n"
        "from rasa.mantle.tools.result import ToolResult\n\n\n"
        '@tool(description="Issue the gift card")\n'
        "async def issue_card(context: ToolContext) -> ToolResult:\n"
        f'    context.memory.set("member_email", "{EMAIL}")\n'
        '    return ToolResult(llm_response={"ok": True})\n'
    ),
    "conversation.yml": (
        "turns:\n"
        "  - steps:\n"
        "      - calls: [{activate: {flow_id: gift}}, issue_card]\n"
        "      - say: Anything else?\n"
        "  - say: Bye.\n"
    ),
}


def write_project(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


async def test_a_spoken_pii_value_is_masked_in_the_prompt_and_the_history(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    recorder: list[RecordingLLM] = []

    def model(call_id: str) -> RecordingLLM:
        recorder.append(RecordingLLM(ScriptedLLM(load_script(project / "conversation.yml"))))
        return recorder[-1]

    engine = ProjectEngine(load_project(project), model, InMemoryStore())
    await open_call(engine)
    events = await collect(engine, "c1", Transcript("a gift card please"))
    said = " ".join(event.text for event in events if isinstance(event, Say))
    assert f"The card goes to {EMAIL}." in said  # the caller hears it: the response says so
    await engine.heard("c1", "t1", said, interrupted=False)
    await collect(engine, "c1", Transcript("no thanks"))

    requests = recorder[0].requests
    after_tool = requests[1][0]  # the model step after issue_card: the response was said
    assert isinstance(after_tool, SystemMessage)
    assert "The card goes to [set]." in after_tool.text
    history = [m.text for m in requests[-1] if isinstance(m, AssistantMessage) and m.text]
    assert any("The card goes to [set]." in text for text in history)
    for request in requests:
        assert all(EMAIL not in str(message) for message in request)
