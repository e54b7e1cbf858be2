"""MCP server actors against real servers written with the SDK's server side, in their own processes."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from supervisor import ActorSystem
from actors.platform.daemon.control.mcp_commands import reload_mcp
from control.paths import DaemonPaths
from config.mcp import InvalidMcpServer, McpServerConfig
from messages import control as c
from tests.mcp.helpers import (
    TOY,
    free_port,
    http_server,
    processes_with,
    running_mcp,
    server_snapshot,
    stdio,
    tag,
    wait_state,
)
from tools.dispatch import dispatch
from tools.testing import LocalToolContext


@pytest.fixture
def marker() -> str:
    """This test's tag on its servers' command lines; none may be left running after it."""
    value = tag()
    yield value
    assert processes_with(value) == [], "an MCP server process was left running"


def _ctx(tmp_path: Path) -> LocalToolContext:
    return LocalToolContext(home=tmp_path)


async def _call(registry, tmp_path: Path, name: str, **args):
    reply = await dispatch(registry, name, args, _ctx(tmp_path))
    return reply, json.loads(reply.text)


class TestStdio:
    """A stdio server's tools are registered as mcp-NAME and called through the one tool path."""

    async def test_tools_registered_and_called(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        async with running_mcp(system, {"toy": stdio("toy", marker)}) as registry:
            snapshot = await wait_state(system, "toy", "ready")
            assert snapshot.kind == "mcp-server"
            assert snapshot.details["tools"] == 8
            assert snapshot.activity == "ready: 8 tools"
            assert registry.tools_in_toolset("mcp-toy") == {
                "mcp_toy_add", "mcp_toy_crash", "mcp_toy_doc", "mcp_toy_echo", "mcp_toy_fail", "mcp_toy_grow",
                "mcp_toy_picture", "mcp_toy_slow",
            }
            reply, body = await _call(registry, tmp_path, "mcp_toy_add", a=2, b=3)
            assert (reply.ok, body) == (True, {"result": "5"})
            # Only a tool the server marks read-only may run beside others.
            assert registry.get("mcp_toy_echo").parallel_safe
            assert not registry.get("mcp_toy_add").parallel_safe
            schema = registry.get("mcp_toy_add").schema
            assert schema["parameters"]["required"] == ["a", "b"]
            assert "title" not in schema["parameters"]
        assert registry.tools_in_toolset("mcp-toy") == set()

    async def test_images_resources_and_errors(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        async with running_mcp(system, {"toy": stdio("toy", marker)}) as registry:
            await wait_state(system, "toy", "ready")
            reply, body = await _call(registry, tmp_path, "mcp_toy_picture")
            assert reply.ok
            assert body["media"] == [{"type": "image", "mime_type": "image/png", "bytes": 70}]
            assert body["result"] == "[image: image/png, 70 bytes]\na red pixel"
            reply, body = await _call(registry, tmp_path, "mcp_toy_doc")
            assert body["resources"] == [{"uri": "file:///notes.txt", "mime_type": "text/plain", "text": "notes body"}]
            reply, body = await _call(registry, tmp_path, "mcp_toy_fail", reason="no way")
            assert not reply.ok
            assert body == {"error": "Error executing tool fail: refused: no way"}

    async def test_environment_is_scrubbed(self, system: ActorSystem, marker: str, tmp_path: Path, monkeypatch) -> None:
        """The server sees the safe variables and its entry's env, not the daemon's secrets."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
        monkeypatch.setenv("HERMES_ACTORS_HOME", "/nowhere")
        from actors.mcp.stdio import server_environment

        env = server_environment(stdio("toy", marker, env={"GITHUB_TOKEN": "mine"}), dict(__import__("os").environ))
        assert "OPENAI_API_KEY" not in env and "HERMES_ACTORS_HOME" not in env
        assert env["GITHUB_TOKEN"] == "mine" and "PATH" in env


class TestHttp:
    """A server over streamable HTTP on loopback works like a stdio one."""

    async def test_call_over_http(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        async with http_server(marker) as url:
            entry = McpServerConfig(name="web", url=url, connect_timeout=10)
            async with running_mcp(system, {"web": entry}) as registry:
                snapshot = await wait_state(system, "web", "ready")
                assert snapshot.details["transport"] == "http"
                reply, body = await _call(registry, tmp_path, "mcp_web_echo", text="over http")
                assert body == {"result": "over http"}

    async def test_endpoint_that_goes_away_is_reconnected(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        """The actor finds the endpoint gone and retries until it is back."""
        port = free_port()
        entry = McpServerConfig(name="web", url=f"http://127.0.0.1:{port}/mcp", connect_timeout=2)
        async with running_mcp(system, {"web": entry}, ping_interval=0.1, backoff_max=0.2) as registry:
            async with http_server(marker, port=port):
                await wait_state(system, "web", "ready")
            snapshot = await wait_state(system, "web", "failed")
            # The SDK's event stream or the next health check finds it gone, whichever is first.
            assert "ConnectError" in snapshot.details["error"] or "health check" in snapshot.details["error"]
            # Its tools stay registered (a session's frozen list keeps working) and say what is wrong.
            reply, body = await _call(registry, tmp_path, "mcp_web_echo", text="x")
            assert "MCP server 'web' is not connected" in body["error"]
            async with http_server(marker, port=port):
                snapshot = await wait_state(system, "web", "ready", attempts=snapshot.details["attempts"] + 1)
                reply, body = await _call(registry, tmp_path, "mcp_web_echo", text="again")
                assert body == {"result": "again"}


class TestFailures:
    """Crashes, hangs and bad entries are a server's state; they hold up nothing else."""

    async def test_crash_mid_call_is_actionable_and_restarts(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        async with running_mcp(system, {"toy": stdio("toy", marker)}) as registry:
            await wait_state(system, "toy", "ready")
            reply, body = await _call(registry, tmp_path, "mcp_toy_crash")
            assert not reply.ok
            assert "MCP server 'toy' closed the connection during a call to 'crash'" in body["error"]
            assert "exited with status 3" in body["error"]
            assert "It is restarting" in body["error"]
            # A call while it is down says so, and when to come back.
            snapshot = await wait_state(system, "toy", "ready", attempts=2)
            assert snapshot.restarts == 0  # the actor reconnected; it did not fail
            reply, body = await _call(registry, tmp_path, "mcp_toy_echo", text="back")
            assert body == {"result": "back"}

    async def test_hanging_server_fails_without_blocking_the_others(
        self, system: ActorSystem, marker: str, tmp_path: Path
    ) -> None:
        entries = {
            "stuck": stdio("stuck", marker, "--hang", connect_timeout=0.5),
            "toy": stdio("toy", marker),
        }
        with trio.fail_after(1):
            # The supervisor is up at once: nothing waits for a server to connect.
            starting = running_mcp(system, entries, backoff_initial=30)
            registry = await starting.__aenter__()
        try:
            snapshot = await wait_state(system, "stuck", "failed")
            assert snapshot.details["error"] == "no answer within connect_timeout (0.5s)"
            assert snapshot.activity.startswith("failed: no answer within connect_timeout (0.5s); retrying in")
            assert snapshot.last_error is not None
            await wait_state(system, "toy", "ready")
            reply, body = await _call(registry, tmp_path, "mcp_toy_echo", text="fine")
            assert body == {"result": "fine"}
        finally:
            await starting.__aexit__(None, None, None)

    async def test_invalid_entry_and_missing_program(self, system: ActorSystem, marker: str) -> None:
        entries = {
            "bad": InvalidMcpServer("bad", "mcp_servers.bad.timeout must be a number > 0, got -1"),
            "gone": McpServerConfig(name="gone", command="/no/such/program", args=(marker,), connect_timeout=5),
        }
        async with running_mcp(system, entries, backoff_initial=30):
            snapshot = await wait_state(system, "bad", "failed", attempts=0)
            assert snapshot.details["error"] == "mcp_servers.bad.timeout must be a number > 0, got -1"
            snapshot = await wait_state(system, "gone", "failed")
            assert "/no/such/program: No such file or directory" in snapshot.details["error"]
            assert "exited with status 127" in snapshot.details["error"]

    async def test_a_call_while_not_connected(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        async with running_mcp(system, {"toy": stdio("toy", marker)}) as registry:
            await wait_state(system, "toy", "ready")
            reply, _ = await _call(registry, tmp_path, "mcp_toy_crash")
            # Right after the crash, before the reconnection: the tool says it is not connected.
            reply, body = await _call(registry, tmp_path, "mcp_toy_echo", text="x")
            assert body["error"].startswith("MCP server 'toy' is not connected: ")
            assert body["error"].endswith("It reconnects by itself; try again in a little while, or do without this tool.")
            await wait_state(system, "toy", "ready", attempts=2)


class TestToolListChanged:
    """notifications/tools/list_changed refreshes the registry."""

    async def test_new_tool_appears(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        async with running_mcp(system, {"toy": stdio("toy", marker)}) as registry:
            await wait_state(system, "toy", "ready")
            generation = registry.generation
            reply, body = await _call(registry, tmp_path, "mcp_toy_grow")
            assert body == {"result": "grown"}
            with trio.fail_after(5):
                while "mcp_toy_extra" not in registry:
                    await trio.sleep(0.02)
            assert registry.generation > generation
            assert server_snapshot(system, "toy").details["tools"] == 9
            reply, body = await _call(registry, tmp_path, "mcp_toy_extra")
            assert body == {"result": "extra!"}


class TestCallLimits:
    """A per-call timeout, and an interrupt, cancel the request at the server."""

    async def test_timeout(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        mark = tmp_path / "cancelled"
        entry = stdio("toy", marker, timeout=0.5, env={"TOY_CANCEL_MARK": str(mark)})
        async with running_mcp(system, {"toy": entry}) as registry:
            await wait_state(system, "toy", "ready")
            reply, body = await _call(registry, tmp_path, "mcp_toy_slow", seconds=30)
            assert body == {
                "error": "MCP tool 'slow' of server 'toy' gave no answer within 0.5s; the call was cancelled. "
                "Try a smaller request, or another way."
            }
            with trio.fail_after(5):
                while not mark.exists():
                    await trio.sleep(0.02)
            assert server_snapshot(system, "toy").details["state"] == "ready"

    async def test_interrupt_sends_cancellation(self, system: ActorSystem, marker: str, tmp_path: Path) -> None:
        mark = tmp_path / "cancelled"
        entry = stdio("toy", marker, env={"TOY_CANCEL_MARK": str(mark)})
        async with running_mcp(system, {"toy": entry}) as registry:
            await wait_state(system, "toy", "ready")
            scope = trio.CancelScope()

            async def call_until_cancelled() -> None:
                with scope:
                    await _call(registry, tmp_path, "mcp_toy_slow", seconds=30)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call_until_cancelled)
                # Cancelled once the server runs it: a cancel that came earlier would never reach the tool.
                with trio.fail_after(10):
                    while not Path(f"{mark}.started").exists():
                        await trio.sleep(0.02)
                scope.cancel()
            assert scope.cancelled_caught
            with trio.fail_after(5):
                while not mark.exists():
                    await trio.sleep(0.02)
            assert mark.read_text() == "cancelled"
            reply, body = await _call(registry, tmp_path, "mcp_toy_echo", text="still here")
            assert body == {"result": "still here"}


class TestNoOrphans:
    """A stdio server dies with the daemon, even when the daemon is killed with SIGKILL."""

    async def test_kill_9_of_the_parent(self, tmp_path: Path, marker: str) -> None:
        import sys

        script = tmp_path / "parent.py"
        script.write_text(
            "import os, sys, trio\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "from supervisor import open_actor_system\n"
            "from tests.mcp.helpers import running_mcp, stdio, wait_state, processes_with\n"
            "async def main():\n"
            "    async with open_actor_system() as system:\n"
            "        async with running_mcp(system, {'toy': stdio('toy', sys.argv[2])}):\n"
            "            await wait_state(system, 'toy', 'ready')\n"
            "            print('ready', flush=True)\n"
            "            await trio.sleep_forever()\n"
            "trio.run(main)\n"
        )
        repo = str(Path(__file__).resolve().parents[2])
        parent = await trio.lowlevel.open_process(
            [sys.executable, str(script), repo, marker], stdout=__import__("subprocess").PIPE
        )
        try:
            with trio.fail_after(30):
                assert (await parent.stdout.receive_some(100)).startswith(b"ready")
            assert len(processes_with(marker)) >= 1
            parent.send_signal(signal.SIGKILL)
            await parent.wait()
            with trio.fail_after(5):
                while processes_with(marker):
                    await trio.sleep(0.02)
        finally:
            if parent.returncode is None:
                parent.kill()
                await parent.wait()
            await parent.stdout.aclose()


@pytest.fixture
def lagging_clock() -> trio.testing.MockClock:
    """Virtual time that jumps only after 0.2 s of real idleness (a server process starts in real time)."""
    return trio.testing.MockClock(autojump_threshold=0.2)


class TestReload:
    """A reload answers the moment the last server's first attempt has ended, ready or failed."""

    async def test_answers_as_the_servers_settle(
        self, system: ActorSystem, marker: str, tmp_path: Path, lagging_clock: trio.testing.MockClock
    ) -> None:
        """A server that never answers fails at its connect_timeout: the reply comes the moment it has
        failed (its retry is still a whole backoff away), not at a later tick."""
        server = {"command": sys.executable, "args": [TOY, "stdio", marker, "--hang"], "connect_timeout": 7.03}
        (tmp_path / "config.yaml").write_text(json.dumps({"mcp_servers": {"stuck": server}}), encoding="utf-8")
        async with running_mcp(system, {}, backoff_initial=600, backoff_max=600):
            started = trio.current_time()
            reply = await reload_mcp(system, DaemonPaths(tmp_path), c.ReloadMcp("r1", wait_seconds=30))
            elapsed = trio.current_time() - started
            retry_in = server_snapshot(system, "stuck").details["retry_in"]
        assert [(status.name, status.state) for status in reply.servers] == [("stuck", "failed")]
        assert elapsed >= 7.03
        assert retry_in == pytest.approx(600, abs=1e-9)
