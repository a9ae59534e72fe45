"""Real MCP servers (the ledger test server as a subprocess): startup, calls, failures.

Over stdio and over Streamable HTTP on loopback. Every wait is bounded (mcp_kit.PATIENCE).
"""

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tests.engine.engine_kit import context_builder, sample_schema
from tests.mcp.mcp_kit import (
    LEDGER,
    PATIENCE,
    POLL,
    bounded,
    http_server,
    launch_options,
    server_state,
    servers_of,
    stdio_entry,
    until_state,
    until_waiting,
)
from voicegate.engine.tools.invoke import invoke_tool
from voicegate.engine.tools.result import ToolResult
from voicegate.errors import McpServerError, ToolExecutionError
from voicegate.mcp.imports import McpImport
from voicegate.mcp.runtime import McpRuntime
from voicegate.mcp.secrets import resolve_secrets
from voicegate.mcp.server import McpServer


def imports(*names: str, server: str = "ledger", skill: str = "cards") -> list[McpImport]:
    return [McpImport(skill, server, name, f"skills/{skill}/skill.md") for name in names]


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_only_allowlisted_tools_are_attached_with_the_servers_schema() -> None:
    async with McpRuntime(servers_of(stdio_entry(tool_timeout=7)), launch_options()) as runtime:
        wanted = [*imports("echo", "add", "fail", "pid"), *imports("echo", skill="loans")]
        tools = await bounded(runtime.connect(wanted))
        listed = set(runtime.servers["ledger"].tools)
        assert {"echo", "add", "wait", "hang_once", "cancellations"} <= listed
        assert {skill: sorted(found) for skill, found in tools.items()} == {
            "cards": ["add", "echo", "fail", "pid"],
            "loans": ["echo"],  # the same entry may appear in several skills
        }
        assert runtime.servers["ledger"].connections_opened == 1
        echo = tools["cards"]["echo"]
        assert echo.spec.name == "echo"
        assert echo.spec.description == "Echo a text back"
        assert echo.spec.parameters["properties"] == {"text": {"title": "Text", "type": "string"}}
        assert echo.spec.parameters["required"] == ["text"]
        assert (echo.source, echo.time_limit) == ("mcp", 7.0)
        assert await bounded(echo.call({"text": "hi"})) == ToolResult({"result": "hi"})
        assert await bounded(tools["cards"]["add"].call({"a": 2, "b": 3})) == ToolResult({"sum": 5})
        with pytest.raises(ToolExecutionError, match=r"MCP tool 'fail' .*failed: .*no such branch"):
            await bounded(tools["cards"]["fail"].call({"message": "no such branch"}))
        pid = (await bounded(tools["cards"]["pid"].call({}))).llm_response["result"]
        assert process_exists(pid)
    assert not process_exists(pid)  # shut down cleanly with the runtime


async def test_streamable_http_with_a_bearer_token_from_the_environment() -> None:
    token_env = {**os.environ, "LEDGER_TOKEN": "t0k-123"}
    with http_server("LEDGER_TOKEN", token_env) as (url, _):
        declared = servers_of({"name": "remote", "url": url, "token": "${LEDGER_TOKEN}"})
        servers = resolve_secrets(declared, {"LEDGER_TOKEN": "t0k-123"})
        async with McpRuntime(servers, launch_options()) as runtime:
            tools = await bounded(runtime.connect(imports("echo", "wait", server="remote")))
            echo = tools["cards"]["echo"]
            assert await bounded(echo.call({"text": "over http"})) == ToolResult(
                {"result": "over http"}
            )
            # a cancelled call: on a 2026-07-28 HTTP session the client closes the request's
            # stream (no notification frame), and the server's tool is cancelled
            server = runtime.servers["remote"]
            call = asyncio.create_task(tools["cards"]["wait"].call({"seconds": 60, "tag": "h"}))
            await until_waiting(server, "h")
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            state = await until_state(server, lambda state: bool(state["cancelled"]))
            assert [item["tag"] for item in state["cancelled"]] == ["h"]


async def test_a_wrong_token_stops_startup_naming_the_server_and_the_cause() -> None:
    with http_server("LEDGER_TOKEN", {**os.environ, "LEDGER_TOKEN": "right"}) as (url, _):
        declared = servers_of({"name": "remote", "url": url, "token": "${LEDGER_TOKEN}"})
        servers = resolve_secrets(declared, {"LEDGER_TOKEN": "wrong"})
        async with McpRuntime(servers, launch_options()) as runtime:
            with pytest.raises(McpServerError) as raised:
                await bounded(runtime.connect(imports("echo", server="remote")))
    message = str(raised.value)
    assert f"MCP server 'remote' (Streamable HTTP: {url})" in message
    assert "401" in message
    assert "wrong" not in message.replace("LEDGER", "")  # no secret in the message


@pytest.mark.parametrize(
    ("entry", "cause"),
    [
        ({"name": "ghost", "command": "/nonexistent/ledger-server"}, "FileNotFoundError"),
        (
            {"name": "ghost", "command": "python", "args": ["-c", "import sys; sys.exit(3)"]},
            "Connection closed",
        ),
        ({"name": "ghost", "url": "http://127.0.0.1:9/mcp"}, "onnect"),
    ],
)
async def test_a_server_that_cannot_start_stops_startup(
    entry: dict[str, object], cause: str
) -> None:
    async with McpRuntime(servers_of(entry), launch_options()) as runtime:
        with pytest.raises(McpServerError) as raised:
            await bounded(runtime.connect(imports("echo", server="ghost")))
    assert "integrations.yml (mcp_servers item 1): MCP server 'ghost'" in str(raised.value)
    assert cause in str(raised.value)


async def test_a_server_that_never_answers_times_out_at_startup() -> None:
    # reads its stdin until voicegate closes it, never answering
    mute = ["-c", "import sys; sys.stdin.read()"]
    hanging = {"name": "mute", "command": "python", "args": mute}
    options = launch_options(connect_timeout=0.5)
    async with McpRuntime(servers_of(hanging), options) as runtime:
        with pytest.raises(McpServerError, match=r"MCP server 'mute' .*no answer within 0.5 s"):
            await bounded(runtime.connect(imports("echo", server="mute")))


async def test_an_undeclared_server_or_an_unlisted_tool_stops_startup() -> None:
    async with McpRuntime(servers_of(stdio_entry()), launch_options()) as runtime:
        with pytest.raises(McpServerError, match="declares no MCP server 'banking'"):
            await runtime.connect(imports("get_balance", server="banking"))
        assert runtime.servers == {}  # refused before anything was started
        with pytest.raises(McpServerError) as raised:
            await bounded(runtime.connect(imports("echo", "get_balance")))
    assert "MCP server 'ledger' does not list a tool 'get_balance' (it offers: add," in str(
        raised.value
    )


async def test_the_server_timeout_and_else_the_agents_apply_and_the_server_is_told() -> None:
    own = stdio_entry("own", tool_timeout=0.3)
    plain = stdio_entry("plain")
    kit = context_builder(sample_schema())()
    async with McpRuntime(servers_of(own, plain), launch_options()) as runtime:
        wanted = [*imports("wait", server="own"), *imports("wait", server="plain", skill="b")]
        tools = await bounded(runtime.connect(wanted))
        slow = {"seconds": 30, "tag": "slow"}
        outcome = await bounded(invoke_tool(tools["cards"]["wait"], slow, kit.context, 30.0))
        assert (outcome.kind, outcome.error) == (
            "timeout",
            "tool 'wait' timed out after 0.3 s (tool_timeout)",
        )
        outcome = await bounded(invoke_tool(tools["b"]["wait"], slow, kit.context, 0.4))
        assert (outcome.kind, outcome.error) == (
            "timeout",
            "tool 'wait' timed out after 0.4 s (tool_timeout)",
        )
        for name in ("own", "plain"):
            state = await server_state(runtime.servers[name])
            assert [item["tag"] for item in state["cancelled"]] == ["slow"]
            assert state["notified"] == [state["cancelled"][0]["request_id"]]


async def test_a_server_killed_mid_call_fails_that_call_and_is_reconnected() -> None:
    kit = context_builder(sample_schema())()
    async with McpRuntime(servers_of(stdio_entry()), launch_options()) as runtime:
        tools = (await bounded(runtime.connect(imports("wait", "pid", "echo"))))["cards"]
        server = runtime.servers["ledger"]
        first_pid = (await bounded(tools["pid"].call({}))).llm_response["result"]
        call = asyncio.create_task(
            invoke_tool(tools["wait"], {"seconds": 60, "tag": "doomed"}, kit.context, 60.0)
        )
        await until_waiting(server, "doomed")
        os.kill(first_pid, signal.SIGKILL)
        outcome = await bounded(call)
        assert outcome.kind == "error"
        assert "the server 'ledger' went away during the call" in (outcome.error or "")
        assert "reconnected for the next call" in (outcome.error or "")
        # the next call opens a new connection (a new process) and works
        echoed = await bounded(tools["echo"].call({"text": "back"}))
        assert echoed == ToolResult({"result": "back"})
        second_pid = (await bounded(tools["pid"].call({}))).llm_response["result"]
        assert second_pid != first_pid
        assert server.connections_opened == 2
    assert not process_exists(second_pid)


async def until_disconnected(server: McpServer) -> None:
    """Wait until the connection has seen its server's side end (bounded)."""
    for _ in range(int(PATIENCE / POLL)):
        if not server.connected:
            return
        await asyncio.sleep(POLL)
    raise AssertionError("the dead server's connection still looks open")


async def test_a_server_that_died_while_idle_is_reconnected_before_the_next_call() -> None:
    async with McpRuntime(servers_of(stdio_entry()), launch_options()) as runtime:
        tools = (await bounded(runtime.connect(imports("pid", "echo"))))["cards"]
        server = runtime.servers["ledger"]
        first_pid = (await bounded(tools["pid"].call({}))).llm_response["result"]
        os.kill(first_pid, signal.SIGKILL)
        await until_disconnected(server)
        assert await bounded(tools["echo"].call({"text": "still here"})) == ToolResult(
            {"result": "still here"}
        )
        assert (await bounded(tools["pid"].call({}))).llm_response["result"] != first_pid
        assert server.connections_opened == 2


async def test_a_server_that_cannot_come_back_fails_calls_without_ending_anything(
    tmp_path: Path,
) -> None:
    flag = tmp_path / "gone"
    script = (
        "import pathlib, runpy, sys\n"
        f"if pathlib.Path({str(flag)!r}).exists(): sys.exit(1)\n"
        "sys.argv = ['ledger', '--name', 'ledger']\n"
        f"runpy.run_path({str(LEDGER)!r}, run_name='__main__')\n"
    )
    entry = {"name": "ledger", "command": "python", "args": ["-c", script]}
    async with McpRuntime(servers_of(entry), launch_options()) as runtime:
        tools = (await bounded(runtime.connect(imports("pid", "echo"))))["cards"]
        pid = (await bounded(tools["pid"].call({}))).llm_response["result"]
        flag.touch()  # from now on the server exits at once when started
        os.kill(pid, signal.SIGKILL)
        await until_disconnected(runtime.servers["ledger"])
        for _ in range(2):  # each call tries again, and fails as a tool failure
            with pytest.raises(ToolExecutionError) as raised:
                await bounded(tools["echo"].call({"text": "anyone?"}))
            assert str(raised.value).startswith(
                "MCP server 'ledger' is unavailable: cannot reconnect: integrations.yml"
            )


async def test_an_http_server_killed_mid_call_fails_that_call_and_then_each_call() -> None:
    with http_server() as (url, process):
        async with McpRuntime(servers_of({"name": "remote", "url": url}), launch_options()) as rt:
            tools = (await bounded(rt.connect(imports("wait", "echo", server="remote"))))["cards"]
            call = asyncio.create_task(tools["wait"].call({"seconds": 60, "tag": "doomed"}))
            await until_waiting(rt.servers["remote"], "doomed")
            process.kill()
            with pytest.raises(ToolExecutionError, match="'remote' went away during the call"):
                await bounded(call)
            with pytest.raises(ToolExecutionError, match="'remote' is unavailable: cannot recon"):
                await bounded(tools["echo"].call({"text": "anyone?"}))
