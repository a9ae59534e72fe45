"""agent.yml and integrations.yml (contract §2.1, §2.2, §10.1)."""

from pathlib import Path

import pytest

from tests.project.project_kit import codes, write
from voicegate.engine.project.loader import load_project

GROUPS = "model_groups:\n  - id: main\n    models:\n      - {provider: openai, model: m}\n"


def test_agent_defaults(tmp_path: Path) -> None:
    agent = load_project(write(tmp_path, {})).agent
    assert (agent.persona, agent.language, agent.agent_id, agent.tool_timeout) == (
        "You help with cards.",
        "en",
        "",
        10.0,
    )
    assert (
        agent.references.chunk_size,
        agent.references.chunk_overlap,
        agent.references.embeddings,
    ) == (1000, 20, None)
    assert agent.prompts == {}
    assert agent.before_end == ()
    assert agent.voice is None


def test_agent_settings_are_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "agent.yml": (
                "agent:\n  id: demo\n  language: de\n  persona: Hallo.\n  voice: {enabled: true}\n"
                "  tool_timeout: 99   # nested under agent: silently ignored, as in Mantle\n"
                "rules: ['Be brief.']\n"
                "prompts: {ack_enabled: false, routing_no_active_skill: Greet.}\n"
                "references: {embeddings: embedder, chunking: {chunk_size: 300}}\n"
                "tool_timeout: 2.5\nsession_config: {session_expiration_time: 60}\n"
                "unknown_section: {a: 1}\n"
            )
        },
    )
    agent = load_project(tmp_path).agent
    assert (agent.agent_id, agent.language, agent.persona, agent.tool_timeout) == (
        "demo",
        "de",
        "Hallo.",
        2.5,
    )
    assert agent.voice == {"enabled": True}
    assert agent.rules == ("Be brief.",)
    assert agent.prompts["ack_enabled"] is False
    assert (
        agent.references.embeddings,
        agent.references.chunk_size,
        agent.references.chunk_overlap,
    ) == ("embedder", 300, 20)
    assert agent.session_config == {"session_expiration_time": 60}


@pytest.mark.parametrize(
    ("agent", "code"),
    [
        ("agent: {persona: '   '}\n", "config.agent.missing_persona"),
        ("agent: You help.\n", "config.agent.missing_section"),
        ("", "config.agent.missing_section"),
        ("agent: {persona: x, language: 3}\n", "config.agent.invalid"),
        ("agent: {persona: x}\nrules: Be brief.\n", "config.agent.invalid"),
        ("agent: {persona: x}\nprompts: {ack_enabled: sometimes}\n", "config.agent.invalid"),
        (
            "agent: {persona: x}\nprompts: {ack_examples: [{user: hi, reply: hello}]}\n",
            "config.agent.invalid",
        ),
        (
            "agent: {persona: x}\nconversation: {before_end: default_customer_satisfaction}\n",
            "config.agent.invalid",
        ),
        (
            "agent: {persona: x}\nreferences: {chunking: {chunk_size: 0}}\n",
            "config.agent.invalid_references",
        ),
        (
            "agent: {persona: x}\nreferences: {chunking: {chunk_size: 100, overlap: 5}}\n",
            "config.agent.invalid_references",
        ),
        (
            "agent: {persona: x}\nreferences: {chunking: {chunk_overlap: -1}}\n",
            "config.agent.invalid_references",
        ),
        ("agent: {persona: x}\nreferences: {embeddings: 3}\n", "config.agent.invalid_references"),
        ("agent: {persona: x}\ntool_timeout: 0\n", "config.agent.invalid"),
        ("agent: {persona: x}\nrules: [\n", "config.agent.invalid"),
    ],
)
def test_agent_problems(tmp_path: Path, agent: str, code: str) -> None:
    assert codes(write(tmp_path, {"agent.yml": agent})) == [code]


def test_a_stdio_mcp_server_is_declared_by_its_command(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "integrations.yml": (
                "llm: {model_group: main}\n" + GROUPS + "mcp_servers:\n"
                "  - name: branches\n    command: python\n    args: [server.py]\n"
            )
        },
    )
    server = load_project(tmp_path).integrations.mcp_servers["branches"]
    assert server.url == ""
    assert server.options == {"command": "python", "args": ["server.py"]}


def test_mcp_servers_accept_id_as_the_older_name_and_keep_options(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "integrations.yml": (
                "llm: {model_group: main}\n" + GROUPS + "mcp_servers:\n"
                "  - id: legacy\n    url: https://a.example/mcp\n    api_key: ${API_KEY}\n"
                "    header_name: X-Key\n"
                "  - name: auth\n    url: https://b.example/mcp\n"
                "    oauth: {client_id: c, client_secret: '${SECRET}', token_url: https://t}\n"
            )
        },
    )
    servers = load_project(tmp_path).integrations.mcp_servers
    assert servers["legacy"].auth == {"api_key": "${API_KEY}"}
    assert servers["legacy"].options == {"header_name": "X-Key"}
    assert set(servers["auth"].auth) == {"oauth"}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("llm: main\n", "config.integrations.invalid"),
        ("llm: {model_group: main, temperature: 0}\n" + GROUPS, "config.integrations.inline_llm"),
        ("llm: {model_group: main}\nmodel_groups: main\n", "config.integrations.invalid"),
        ("llm: {model_group: main}\nmodel_groups:\n  - id: main\n", "config.integrations.invalid"),
        ("llm: {model_group: fast}\n" + GROUPS, "config.integrations.unknown_model_group"),
        ("llm: {deployment: gpt}\n", "config.integrations.inline_llm"),
        (
            "llm: {model_group: main}\n" + GROUPS + "channels: [rest]\n",
            "config.integrations.invalid",
        ),
        (
            "llm: {model_group: main}\n" + GROUPS + "mcp_servers: {banking: {}}\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\n" + GROUPS + "mcp_servers:\n  - url: https://a\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\n" + GROUPS + "mcp_servers:\n  - name: a\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\n"
            + GROUPS
            + "mcp_servers:\n  - {name: a, url: u, command: c}\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\n"
            + GROUPS
            + "mcp_servers:\n  - {name: a, url: u, token: '${A}', api_key: '${B}'}\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\n"
            + GROUPS
            + "mcp_servers:\n  - {name: a, url: u, tool_timeout: -1}\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\n"
            + GROUPS
            + "mcp_servers:\n  - {name: a, url: u}\n  - {name: a, url: v}\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\n"
            + GROUPS
            + "mcp_servers:\n  - {name: a, url: u, oauth: {client_secret: s3cret}}\n",
            "config.integrations.invalid_mcp_server",
        ),
        (
            "llm: {model_group: main}\nmodel_groups:\n  - id: main\n    models:\n"
            "      - {provider: openai, model: gpt-4.1-mini, api_key: '${OPENAI_API_KEY}'}\n",
            "config.integrations.key_in_model",
        ),
    ],
)
def test_integrations_problems(tmp_path: Path, text: str, code: str) -> None:
    assert codes(write(tmp_path, {"integrations.yml": text})) == [code]


def test_integrations_yml_is_optional(tmp_path: Path) -> None:
    project = load_project(write(tmp_path, {}))
    assert project.integrations.mcp_servers == {}
    assert project.llm_config == {}
