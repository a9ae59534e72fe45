"""``mcp_servers`` parsing and ``${ENV_VAR}`` resolution (contract §10.1, §2.2)."""

import pytest

from voicegate.engine.yamlfile import parse_yaml
from voicegate.errors import ConfigError
from voicegate.mcp.config import HttpTransport, McpServerConfig, StdioTransport, parse_mcp_servers
from voicegate.mcp.secrets import resolve_secrets

YAML = """\
llm: {model_group: main}
mcp_servers:
  - name: branches
    command: python
    args: [mcp/branches/server.py, --verbose]
    env: {BRANCH_REGION: "${REGION}"}
    tool_timeout: 4
  - id: banking
    url: https://banking.example.com/mcp/
    token: ${BANK_TOKEN}
    headers: {X-Tenant: acme}
  - name: rates
    url: http://127.0.0.1:9000/mcp
    api_key: ${RATES_KEY}
    header_name: X-Api-Key
    header_format: "{key}"
"""


def parse(text: str) -> dict[str, McpServerConfig]:
    return parse_mcp_servers(parse_yaml(text, "integrations.yml"), "integrations.yml")


def test_both_transports_parse_with_their_lines() -> None:
    servers = parse(YAML)
    assert list(servers) == ["branches", "banking", "rates"]
    assert servers["branches"] == McpServerConfig(
        "branches",
        StdioTransport(
            "python", ("mcp/branches/server.py", "--verbose"), {"BRANCH_REGION": "${REGION}"}
        ),
        4.0,
        "integrations.yml:3",
    )
    banking = servers["banking"]
    assert banking.transport == HttpTransport(
        "https://banking.example.com/mcp/",
        {"X-Tenant": "acme", "Authorization": "Bearer ${BANK_TOKEN}"},
    )
    assert banking.tool_timeout is None  # agent.yml's tool_timeout applies
    assert banking.where == "integrations.yml:8"
    assert servers["rates"].transport == HttpTransport(
        "http://127.0.0.1:9000/mcp", {"X-Api-Key": "${RATES_KEY}"}
    )


def test_no_section_means_no_servers() -> None:
    assert parse("llm: {model_group: main}\n") == {}
    assert parse_mcp_servers(None, "integrations.yml") == {}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("- {command: python}", "needs a 'name'"),
        ("- {name: a}", "needs a 'url' (Streamable HTTP) or a 'command' (stdio)"),
        ("- {name: a, url: 'http://x/mcp', command: python}", "either 'url'"),
        ("- {name: a, url: 'http://x/mcp', token: abc123}", "'token' must be an ${ENV_VAR}"),
        ("- {name: a, url: 'http://x/mcp', token: '${A}', api_key: '${B}'}", "at most one auth"),
        ("- {name: a, url: 'http://x/mcp', headers: {Authorization: Bearer abc}}", "literal"),
        ("- {name: a, url: 'http://x/mcp', oauth: {client_id: x}}", "'oauth' auth is not"),
        ("- {name: a, url: 'ftp://x/mcp'}", "http:// or https://"),
        ("- {name: a, command: python, url_typo: 1}", "unknown keys ['url_typo']"),
        ("- {name: a, command: python, args: python}", "'args' must be a list"),
        ("- {name: a, command: python, env: [A]}", "'env' must map names"),
        ("- {name: a, command: python, tool_timeout: 0}", "positive number"),
        ("- {name: a, command: python, tool_timeout: true}", "positive number"),
        ("- {name: a, command: python}\n  - {name: a, command: python}", "declared twice"),
    ],
)
def test_bad_entries_are_refused_with_file_and_line(entry: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(f"llm: {{model_group: main}}\nmcp_servers:\n  {entry}\n")
    assert message in str(raised.value)
    assert str(raised.value).startswith("integrations.yml:")


def test_mcp_servers_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match=r"integrations.yml:1: 'mcp_servers' must be a list"):
        parse("mcp_servers: {name: a}\n")


def test_secrets_are_expanded_from_the_environment_passed_in() -> None:
    servers = resolve_secrets(
        parse(YAML), {"REGION": "north", "BANK_TOKEN": "s3cret", "RATES_KEY": "k-1"}
    )
    assert servers["branches"].transport.env == {"BRANCH_REGION": "north"}  # type: ignore[union-attr]
    assert servers["banking"].transport.headers["Authorization"] == "Bearer s3cret"  # type: ignore[union-attr]
    assert servers["rates"].transport.headers == {"X-Api-Key": "k-1"}  # type: ignore[union-attr]


def test_a_missing_variable_names_the_server_key_and_variable() -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_secrets(parse(YAML), {"REGION": "north", "RATES_KEY": "k"})
    text = str(raised.value)
    assert "integrations.yml:8: MCP server 'banking'" in text
    assert "'headers.Authorization' refers to the environment variable BANK_TOKEN" in text
