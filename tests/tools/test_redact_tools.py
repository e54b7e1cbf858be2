"""Every tool's result is redacted on its way out, whatever the tool: real tools through dispatch,
and a real session, whose store, events and log must not hold one test secret either."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.platform.daemon.toolbox import Toolbox, build_toolbox
from config.loader import Config
from config.terminal import WebConfig
from messages.events import SessionEvent, ToolStarted
from messages.session import Interrupt, UserMessage
from tests.session.harness import collect_turn, open_harness, run_turn
from tests.tools.secret_samples import SAMPLES
from tests.web.server import FakeWeb, Send, running_server
from tools.dispatch import dispatch
from tools.redact import REDACTED
from tools.registry import ToolRegistry
from tools.results import ToolResult
from tools.testing import LocalToolContext
from tools.web import open_web_client

SECRETS_FILE = "".join(sample.line + "\n" for sample in SAMPLES)


def leaked(text: str) -> list[str]:
    """The kinds of test secret found in ``text``."""
    return [sample.kind for sample in SAMPLES if sample.secret in text]


class SecretsPage(FakeWeb):
    """The fake web server, serving the secrets file as a plain-text page at every path."""

    async def _route(self, path: str, query: dict[str, list[str]], headers: dict[str, str], send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": SECRETS_FILE.encode()})


@pytest.fixture
async def toolbox() -> AsyncIterator[Toolbox]:
    # A SearXNG URL makes the web tools available; web_extract never asks it anything.
    config = Config(web=WebConfig(allow_private_addresses=True, searxng_url="http://127.0.0.1:9/"))
    http = open_web_client(config.web)
    try:
        yield build_toolbox(config, http, environ={})
    finally:
        await http.aclose()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "secrets.env").write_text(SECRETS_FILE)
    return work


async def call(toolbox: Toolbox, ctx: LocalToolContext, name: str, **args: Any) -> str:
    """A tool call the way the session makes it."""
    return (await dispatch(toolbox.registry, name, args, ctx)).text


class TestEveryToolIsRedacted:
    """The same file of secrets, reached through each tool, comes back with none of them."""

    async def test_terminal_cat_and_echo(self, toolbox: Toolbox, workdir: Path, tmp_path: Path) -> None:
        ctx = LocalToolContext(home=tmp_path / "home", cwd=workdir)
        result = await call(toolbox, ctx, "terminal", command="cat secrets.env")
        assert [] == leaked(result)
        output = json.loads(result)["output"]
        assert "API_KEY=[REDACTED]" in output and "Authorization: Basic [REDACTED]" in output
        aws = next(sample for sample in SAMPLES if sample.kind == "aws secret")
        echoed = json.loads(await call(toolbox, ctx, "terminal", command=f"echo '{aws.line}'"))["output"]
        assert "aws_secret_access_key = [REDACTED]" == echoed.strip()

    async def test_read_file_and_search_files(self, toolbox: Toolbox, workdir: Path, tmp_path: Path) -> None:
        ctx = LocalToolContext(home=tmp_path / "home", cwd=workdir)
        read = await call(toolbox, ctx, "read_file", path="secrets.env")
        assert [] == leaked(read)
        assert "postgres://app:[REDACTED]@db.internal" in json.loads(read)["content"]
        found = await call(toolbox, ctx, "search_files", pattern=".", path=".", target="content")
        assert [] == leaked(found)
        assert REDACTED in found

    async def test_background_process_output(self, toolbox: Toolbox, workdir: Path, tmp_path: Path) -> None:
        async with trio.open_nursery() as nursery:
            ctx = LocalToolContext(home=tmp_path / "home", cwd=workdir, nursery=nursery)
            started = json.loads(await call(toolbox, ctx, "terminal", command="cat secrets.env", background=True))
            waited = await call(toolbox, ctx, "process", action="wait", session_id=started["session_id"], timeout=10)
            log = await call(toolbox, ctx, "process", action="log", session_id=started["session_id"])
        assert [] == leaked(waited) and [] == leaked(log)
        assert "export DB_PASSWORD=[REDACTED]" in json.loads(log)["output"]

    async def test_web_extract(self, toolbox: Toolbox, tmp_path: Path) -> None:
        ctx = LocalToolContext(home=tmp_path / "home", cwd=tmp_path)
        async with running_server(SecretsPage()) as base:
            result = await call(toolbox, ctx, "web_extract", urls=[f"{base}/secrets.txt"])
        [page] = json.loads(result)["results"]
        assert "API_KEY=[REDACTED]" in page["content"]
        assert [] == leaked(result)

    async def test_any_registered_tool_and_the_debug_log(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        """A tool nobody taught to redact (an MCP tool, say) returns secrets in values and under secret keys."""
        registry = ToolRegistry()

        async def leaky(args: dict[str, Any], ctx: Any) -> ToolResult:
            return ToolResult({"token": "abc123def456", "notes": SECRETS_FILE})

        schema = {"name": "leaky", "description": "d", "parameters": {"type": "object", "properties": {}}}
        registry.register("leaky", "mcp", schema, leaky)
        caplog.set_level(logging.DEBUG, logger="tools.dispatch")
        result = (await dispatch(registry, "leaky", {}, LocalToolContext(home=tmp_path, cwd=tmp_path))).text
        assert REDACTED == json.loads(result)["token"]
        assert [] == leaked(result) and [] == leaked(caplog.text)
        assert "tool leaky ->" in caplog.text


class TestSessionKeepsNoSecret:
    """Through a real session: the transcript, the stored history, the events and the log hold no test secret."""

    async def test_every_tool_through_the_session(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        caplog.set_level(logging.DEBUG)
        async with open_harness(tmp_path) as h:
            (h.workdir / "secrets.env").write_text(SECRETS_FILE)
            handle, events_in, sid = await h.start_session()
            path = repr(str(h.workdir / "secrets.env"))
            script = f"from hermes_tools import read_file\nprint(open({path}).read())\nprint(read_file({path})['content'])\n"
            h.provider.push(
                {"tool_calls": [
                    {"id": "c1", "name": "terminal", "arguments": {"command": "cat secrets.env"}},
                    {"id": "c2", "name": "read_file", "arguments": {"path": "secrets.env"}},
                    {"id": "c3", "name": "search_files", "arguments": {"pattern": ".", "target": "content"}},
                ]},
                {"tool_calls": [{"id": "c4", "name": "execute_code", "arguments": {"code": script}}]},
                {"text": "done"},
            )
            finished, events = await run_turn(handle, events_in, "look at the secrets")
            assert "done" == finished.final_text
            stored = await h.deps.store.load(sid)
            tools = [m["content"] for m in stored.messages if m["role"] == "tool"]
            assert 4 == len(tools)
            assert all(REDACTED in content for content in tools), tools
            transcript = await h.deps.store.load_transcript(sid)
            assert [] == leaked(json.dumps([r.record for r in transcript]))
            assert [] == leaked(json.dumps(stored.messages))
            assert [] == [e for e in events if leaked(repr(e))]
        assert [] == leaked(caplog.text)

    async def test_interrupted_command_keeps_no_secret(self, tmp_path: Path) -> None:
        """The partial output an interrupt keeps never went through dispatch; it is redacted all the same."""
        async with open_harness(tmp_path) as h:
            (h.workdir / "secrets.env").write_text(SECRETS_FILE)
            handle, events_in, sid = await h.start_session()
            command = "cat secrets.env; touch printed; sleep 60"
            h.provider.push({"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": command}}]})
            await handle.tell(UserMessage("run it"))
            seen: list[SessionEvent] = []
            async for event in events_in:
                seen.append(event)
                if isinstance(event, ToolStarted):
                    break
            with trio.fail_after(10):
                while not (h.workdir / "printed").exists():
                    await trio.sleep(0.02)
            await handle.tell(Interrupt())
            finished, events = await collect_turn(events_in)
            assert "interrupted" == finished.reason
            tool = next(m for m in (await h.deps.store.load(sid)).messages if m["role"] == "tool")
            assert "API_KEY=[REDACTED]" in tool["content"]
            assert [] == leaked(tool["content"]) and [] == leaked(repr(seen + events))
