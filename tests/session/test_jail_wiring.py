"""A session's jail: its mode from the request (never wider than allowed), kept in the store, shared with
its subagents; its directories created at start and removed at stop."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from actors.session import SessionOptions, new_session_id
from config.loader import Config
from config.sandbox import SandboxConfig
from messages.session import Subscribe
from tests.session.harness import Harness, open_harness, run_turn
from tools.jail.policy import SandboxModeRefused
from tools.jail.runtime import DaemonJails, RuntimeDir
from tools.results import ToolResult


@pytest.fixture
def base() -> Iterator[Path]:
    """A short directory outside /tmp (a jailed session's /tmp means its private one)."""
    path = tempfile.mkdtemp(prefix="ha-", dir="/var/tmp")
    try:
        yield Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def _probe(args: dict[str, Any], ctx: Any) -> ToolResult:
    """A tool that reports the jail its call context carries."""
    policy = ctx.jail.policy
    return ToolResult({"mode": policy.mode.value, "tmp_dir": policy.tmp_dir, "workspace": policy.workspace,
                       "hidden": [h.path for h in policy.hidden], "launcher": ctx.jail.launcher is not None})


def _call_probe(call_id: str = "p1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "jail_probe", "arguments": {}}]}


@asynccontextmanager
async def jailed_harness(base: Path, sandbox: SandboxConfig) -> AsyncIterator[tuple[Harness, RuntimeDir]]:
    """The session harness with the daemon's jails (no launcher: nothing here starts a process)."""
    async with open_harness(base, Config(sandbox=sandbox)) as h:
        runtime = RuntimeDir.for_home(h.home, base / "runtime")
        runtime.prepare()
        h.deps = attrs.evolve(h.deps, jails=DaemonJails(config=sandbox, runtime=runtime, home=str(h.home)))
        h.deps.registry.register("jail_probe", "probe", {"name": "jail_probe", "description": "probe"}, _probe)
        yield h, runtime


async def _start(h: Harness, session_id: str, options: SessionOptions | None) -> Any:
    return await h.spawn_session(session_id, options)


def _options(h: Harness, **extra: Any) -> SessionOptions:
    return SessionOptions(cwd=str(h.workdir), model="scripted-model", provider="custom", base_url=h.provider.base_url,
                          toolsets=("probe", "delegation"), **extra)


def _tool_results(messages: list[dict[str, Any]]) -> list[Any]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


class TestSessionJail:
    """A session's calls carry its own jail, built from its mode, its cwd and its private tmp dir."""

    async def test_mode_dirs_and_stop(self, base: Path) -> None:
        """The requested mode is used and stored; the tmp dir exists while the session runs, not after."""
        async with jailed_harness(base, SandboxConfig(max_mode="workspace-write")) as (h, runtime):
            sid = new_session_id()
            handle = await _start(h, sid, _options(h, sandbox="read-only"))
            events = await handle.ask(Subscribe("test"))
            h.provider.push(_call_probe(), {"text": "probed"})
            await run_turn(handle, events, "probe")
            [probe] = _tool_results((await h.deps.store.load(sid)).messages)
            assert probe["mode"] == "read-only"
            assert probe["tmp_dir"] == os.path.join(runtime.session_dir(sid), "tmp")
            assert probe["workspace"] == str(h.workdir)
            assert {str(h.home), runtime.parent} <= set(probe["hidden"])
            assert os.path.isdir(probe["tmp_dir"])
            assert (await h.deps.store.load(sid)).state["options"]["sandbox"] == "read-only"
            assert handle.statistics().details["sandbox"] == "read-only"
            await h.system.root.terminate_child(f"session:{sid}", "test over")
            assert not os.path.exists(runtime.session_dir(sid))

    async def test_default_mode_is_settled(self, base: Path) -> None:
        """A session that asked for nothing stores sandbox.mode as it was at creation."""
        async with jailed_harness(base, SandboxConfig(mode="read-only")) as (h, _):
            sid = new_session_id()
            await _start(h, sid, _options(h))
            assert (await h.deps.store.load(sid)).state["options"]["sandbox"] == "read-only"
            await h.system.root.terminate_child(f"session:{sid}", "test over")

    async def test_subagent_runs_in_parents_jail(self, base: Path) -> None:
        """A delegated child's calls carry the parent's mode, workspace and tmp dir; its own stop removes nothing."""
        async with jailed_harness(base, SandboxConfig()) as (h, runtime):
            sid = new_session_id()
            handle = await _start(h, sid, _options(h, sandbox="read-only"))
            events = await handle.ask(Subscribe("test"))
            h.provider.push(
                _call_probe("parent"),
                {"tool_calls": [{"id": "d1", "name": "delegate_task", "arguments": {"goal": "probe it"}}]},
                _call_probe("child"),
                {"text": "child done"},
                {"text": "all done"},
            )
            await run_turn(handle, events, "probe, then delegate")
            parent, delegated = _tool_results((await h.deps.store.load(sid)).messages)
            assert delegated["results"][0]["status"] == "completed", delegated
            child_id = next(s.id for s in await h.deps.store.list_sessions(limit=10) if s.parent_session_id == sid)
            [child] = _tool_results((await h.deps.store.load(child_id)).messages)
            assert child == parent
            assert os.path.isdir(parent["tmp_dir"]), "the child's stop removed its parent's directory"
            await h.system.root.terminate_child(f"session:{sid}", "test over")
            assert not os.path.exists(runtime.session_dir(child_id))


class TestModeLimits:
    """No session runs wider than sandbox.max_mode allows, now or after a restart."""

    async def test_wider_request_refused(self, base: Path) -> None:
        """The sessions service refuses a wider mode before anything starts, naming sandbox.max_mode."""
        async with jailed_harness(base, SandboxConfig(mode="read-only", max_mode="read-only")) as (h, _):
            from actors.session.service import SessionService

            service = SessionService(h.deps, h.system.registry, h.deps.config.daemon)
            with pytest.raises(SandboxModeRefused, match="sandbox.max_mode: read-only"):
                await service.create_session(_options(h, sandbox="workspace-write"))
            with pytest.raises(SandboxModeRefused, match="unknown sandbox mode"):
                await service.create_session(_options(h, sandbox="root"))
            assert await h.deps.store.list_sessions(limit=10) == []

    async def test_restored_session_keeps_or_narrows(self, base: Path) -> None:
        """A woken session keeps its stored mode; one wider than today's max_mode runs at max_mode."""
        async with jailed_harness(base, SandboxConfig()) as (h, _):
            kept, narrowed = new_session_id(), new_session_id()
            for sid, mode in ((kept, "read-only"), (narrowed, "full-access")):
                await _start(h, sid, _options(h, sandbox=mode))
                await h.system.root.terminate_child(f"session:{sid}", "hibernating")
            narrower = SandboxConfig(mode="workspace-write", max_mode="workspace-write")
            h.deps = attrs.evolve(h.deps, config=Config(sandbox=narrower), jails=attrs.evolve(h.deps.jails, config=narrower))
            modes = {}
            for sid in (kept, narrowed):
                handle = await _start(h, sid, None)
                events = await handle.ask(Subscribe("test"))
                h.provider.push(_call_probe(), {"text": "probed"})
                await run_turn(handle, events, "probe")
                modes[sid] = _tool_results((await h.deps.store.load(sid)).messages)[-1]["mode"]
                await h.system.root.terminate_child(f"session:{sid}", "test over")
            assert modes == {kept: "read-only", narrowed: "workspace-write"}
            await trio.lowlevel.checkpoint()
