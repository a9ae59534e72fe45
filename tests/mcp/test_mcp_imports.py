"""Import checks that need no server: unknown server, name rule, bare-name collisions."""

import pytest

from tests.mcp.mcp_kit import servers_of, stdio_entry
from voicegate.errors import McpServerError
from voicegate.mcp.imports import McpImport, check_imports

SERVERS = servers_of(stdio_entry("a"), stdio_entry("b"), stdio_entry("bank.eu"))


def test_distinct_names_and_the_same_entry_in_two_skills_pass() -> None:
    check_imports(
        [
            McpImport("cards", "a", "echo", "skills/cards/skill.md:5"),
            McpImport("cards", "b", "add"),
            McpImport("loans", "a", "echo"),
            McpImport("loans", "bank.eu", "get_rate"),  # a server id may contain dots
        ],
        SERVERS,
        {"cards": {"lock_card"}},
    )


def test_two_servers_offering_the_same_bare_name_collide() -> None:
    imports = [McpImport("cards", "a", "echo"), McpImport("cards", "b", "echo", "skill.md:7")]
    with pytest.raises(McpServerError) as raised:
        check_imports(imports, SERVERS, {})
    assert str(raised.value) == (
        "skill.md:7: skill 'cards' imports 'mcp/a:echo' and 'mcp/b:echo', "
        "which both resolve to the bare name 'echo'"
    )


def test_an_import_colliding_with_a_local_or_shared_tool_is_refused() -> None:
    with pytest.raises(McpServerError, match="collides with the skill's own or shared tool 'echo'"):
        check_imports([McpImport("cards", "a", "echo")], SERVERS, {"cards": {"echo"}})


def test_an_undeclared_server_is_refused() -> None:
    with pytest.raises(McpServerError) as raised:
        check_imports([McpImport("cards", "banking", "get_balance", "s.md:3")], SERVERS, {})
    assert "s.md:3: skill 'cards' imports 'mcp/banking:get_balance'" in str(raised.value)
    assert "no MCP server 'banking' under mcp_servers (declared: a, b, bank.eu)" in str(
        raised.value
    )


@pytest.mark.parametrize("name", ["get.balance", "has space", "x" * 65, ""])
def test_a_tool_name_the_model_cannot_call_is_refused(name: str) -> None:
    with pytest.raises(McpServerError, match="may only contain letters, digits"):
        check_imports([McpImport("cards", "a", name)], SERVERS, {})
