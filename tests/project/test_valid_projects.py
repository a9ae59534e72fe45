"""A realistic multi-skill project written to the contract loads unchanged, into the model."""

import json
from pathlib import Path

import pytest

from voicegate.cli.main import main
from voicegate.engine.memory.schema import FieldRef
from voicegate.engine.project.loader import load_project
from voicegate.engine.project.model import ToolOrigin
from voicegate.engine.project.response_model import ButtonSource
from voicegate.engine.project.skill_model import BodyShape
from voicegate.engine.project.step_model import (
    ActionStep,
    CallStep,
    CollectStep,
    EndStep,
    ExecuteToolStep,
    InstructionsStep,
    LinkStep,
    NoopStep,
    SetMemoryStep,
)
from voicegate.engine.project.token_model import TokenKind

REPO = Path(__file__).resolve().parents[2]
CARD_SERVICES = REPO / "fixtures" / "projects" / "card_services"


@pytest.fixture(scope="module")
def project():  # type: ignore[no-untyped-def]
    return load_project(CARD_SERVICES)


@pytest.mark.parametrize(
    "folder",
    [
        "fixtures/projects/card_services",
        "examples/bank_balance",
        "config/agent",
        "fixtures/projects/slow_bank",
        "fixtures/projects/spoke_rentals",
    ],
)
def test_validate_accepts_the_project_with_a_one_line_summary(
    folder: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(REPO / folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert ": valid — " in lines[0]


def test_validate_json_reports_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(CARD_SERVICES), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["valid"] is True
    assert result["problems"] == []
    assert result["summary"] == {
        "skills": 6,
        "blocks": 5,
        "local_tools": 7,
        "shared_tools": 3,
        "mcp_tools": 3,
        "responses": 23,
        "reference_files": 3,
        "reference_chunks": 3,
    }


def test_skill_ids_are_folder_names_and_bodies_decide_routability(project) -> None:  # type: ignore[no-untyped-def]
    shapes = {skill_id: skill.body.shape for skill_id, skill in project.skills.items()}
    assert shapes == {
        "authenticate": BodyShape.BLOCKS,
        "card_replace": BodyShape.HYBRID,
        "check_balance": BodyShape.PROSE,
        "default_session_start": BodyShape.BLOCKS,
        "gift_cards": BodyShape.PROSE,
        "travel_notice": BodyShape.HYBRID,
    }
    assert project.skills["authenticate"].body.entry_block == "main"
    assert project.skills["card_replace"].body.entry_block is None
    assert project.skills["card_replace"].frontmatter.name == "Card Replace"
    assert project.skills["gift_cards"].frontmatter.disabled is True
    assert project.skills["default_session_start"].frontmatter.engine_managed is True


def test_tools_resolve_local_shared_and_mcp_by_bare_name(project) -> None:  # type: ignore[no-untyped-def]
    toolset = project.skills["card_replace"].toolset
    origins = {name: tool.origin for name, tool in toolset.items()}
    assert origins == {
        "lock_card": ToolOrigin.LOCAL,
        "process_card_replacement": ToolOrigin.LOCAL,
        "list_cards": ToolOrigin.LOCAL,  # from tools/cards.py
        "card_buttons": ToolOrigin.LOCAL,
        "get_customer_info": ToolOrigin.SHARED,
        "send_sms_confirmation": ToolOrigin.SHARED,
        "get_card_status": ToolOrigin.MCP,
    }
    assert toolset["get_card_status"].server == "banking"
    assert toolset["get_customer_info"].tool is project.shared_tools["get_customer_info"]
    assert set(project.skills["card_replace"].hooks) == {"run_after_setting_replacement_reason"}
    # A shared tool is attached only where import_tools lists it.
    assert "get_customer_info" not in project.skills["travel_notice"].toolset
    balance = project.skills["check_balance"].toolset
    assert {(tool.server, name) for name, tool in balance.items()} == {
        ("banking", "get_balance"),
        ("fx.rates", "convert-amount"),
    }


def test_frontmatter_properties_are_parsed(project) -> None:  # type: ignore[no-untyped-def]
    front = project.skills["card_replace"].frontmatter
    assert front.requires.references() == (FieldRef("project", "authenticated"),)
    assert front.complete_when.condition.source == "session.card_replace.replacement_submitted"
    replacement = front.tool_constraints["process_card_replacement"]
    assert replacement.confirmation.enabled is True
    assert replacement.confirmation.utter_for_confirmation == "utter_ask_replacement_confirmation"
    assert (replacement.on_success, replacement.on_failure) == (
        "utter_replacement_disclaimer",
        "utter_replacement_failed",
    )
    assert [(t.response, t.on_activate, t.when is not None) for t in front.utter] == [
        ("utter_recording_notice", True, False),
        ("utter_stolen_warning", False, True),
    ]
    balance = project.skills["check_balance"].frontmatter.complete_when
    assert balance.condition.source == "session.check_balance.balance_read"
    assert len(balance.criteria) == 2


def test_prose_paragraphs_keep_if_conditions_and_tokens(project) -> None:  # type: ignore[no-untyped-def]
    paragraphs = project.skills["card_replace"].body.paragraphs
    assert [p.condition is not None for p in paragraphs] == [False, False, True, True, True]
    tokens = [(token.kind, token.target, token.line) for p in paragraphs for token in p.tokens]
    assert tokens == [
        (TokenKind.SKILL, "authenticate", 35),
        (TokenKind.BLOCK, "pick_card", 39),
        (TokenKind.MEMORY, "card_replace.selected_card_label", 49),
        (TokenKind.MEMORY, "project.caller_phone", 51),
    ]
    assert paragraphs[2].text == (
        "Tell the customer the card will be locked for their protection, then call lock_card."
    )


def test_ordered_blocks_hold_every_step_kind(project) -> None:  # type: ignore[no-untyped-def]
    steps = [
        step
        for skill in project.skills.values()
        for block in skill.body.blocks.values()
        for step in block.steps
    ]
    kinds = {type(step) for step in steps}
    assert kinds == {
        InstructionsStep,
        CollectStep,
        ActionStep,
        ExecuteToolStep,
        NoopStep,
        SetMemoryStep,
        CallStep,
        LinkStep,
        EndStep,
    }
    main = project.skills["authenticate"].body.blocks["main"]
    verify = next(step for step in main.steps if step.step_id == "verify")
    assert isinstance(verify, ExecuteToolStep)
    assert verify.parameters["phone"].ref == FieldRef("project", "caller_phone")
    route = next(step for step in main.steps if step.step_id == "route")
    assert [(branch.target, branch.condition is None) for branch in route.next] == [
        ("verified", False),
        ("give_up", False),
        ("retry", True),
    ]
    notice = project.skills["travel_notice"].body.blocks["register_notice"]
    set_memory = next(step for step in notice.steps if isinstance(step, SetMemoryStep))
    assert set_memory.values == {"notice_requested": True}


def test_responses_merge_into_one_registry_with_variants_and_buttons(project) -> None:  # type: ignore[no-untyped-def]
    responses = project.responses
    assert responses["utter_greet"].owner is None
    assert responses["utter_pick_card"].owner == "card_replace"
    fee = responses["utter_replacement_fee"].variants
    assert [variant.condition is None for variant in fee] == [False, False, True]
    assert responses["utter_pick_card"].variants[0].buttons == ButtonSource("card_buttons")
    shipping = responses["utter_ask_shipping_type"].variants[0].buttons
    assert [button.set_payload.value for button in shipping] == ["express", "standard"]
    contact = responses["utter_confirm_contact"].variants[0].buttons
    assert [button.set_payload.value for button in contact] == [True, False]
    ask = responses["utter_ask_replacement_confirmation"].variants[0]
    assert [p.entry for p in ask.placeholders] == ["selected_card_label", "shipping_type"]


def test_references_are_chunked_into_one_index_with_source_and_scope(project) -> None:  # type: ignore[no-untyped-def]
    chunks = project.references.chunks
    assert {(chunk.source, chunk.scope) for chunk in chunks} == {
        ("references/fees.md", "global"),
        ("references/security/lost_cards.md", "global"),
        ("skills/card_replace/references/replacement_policy.md", "card_replace"),
    }  # references/empty_notes.md holds only whitespace and is skipped
    best = project.references.search("what does express shipping cost", limit=1)
    assert best[0].chunk.source == "references/fees.md"


def test_integrations_and_agent_settings(project) -> None:  # type: ignore[no-untyped-def]
    assert project.agent.tool_timeout == 8.0
    assert (project.agent.references.chunk_size, project.agent.references.chunk_overlap) == (
        600,
        40,
    )
    assert project.agent.before_end == ("default_customer_satisfaction",)
    servers = project.integrations.mcp_servers
    assert servers["banking"].tool_timeout == 20.0
    assert servers["banking"].auth == {"token": "${MCP_BANKING_TOKEN}"}
    assert project.llm_config["llm"] == {"model_group": "main"}
