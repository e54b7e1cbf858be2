"""The API owns its sessions: a CLI session is out of its reach, whatever id a client sends.

The CLI session is made over the real control socket; the API is called with the
official openai SDK (and raw HTTP for runs), against the scripted provider.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.platform.api.gateway import api_session_id
from control.client import ControlClient
from control.paths import DaemonPaths
from actors.session.options import SessionOptions
from config.loader import ConfigError, load_config
from config.sandbox import SandboxLimits
from messages import control as c
from providers.scripted import ScriptedProvider
from tests.api.harness import ApiDaemon, api_daemon, sse_frames, stored_texts

MODEL = "scripted-model"
CLI_SECRET = "cli-only question about the launch codes"


def _cli_session(home: Path, cwd: Path) -> str:
    """A CLI session, created over the control socket, that has run one turn (call in a thread)."""
    with ControlClient.connect(DaemonPaths(home)) as client:
        created = client.request(c.CreateSession(client.next_id(), str(cwd)))
        client.request(c.Attach(client.next_id(), created.session_id))
        client.request(c.SendMessage(client.next_id(), created.session_id, CLI_SECRET))
        while client.receive_raw().get("type") != "TurnFinished":
            pass
        return created.session_id


def _source_of(home: Path, session_id: str) -> str | None:
    import sqlite3

    from store.sqlite import DB_FILENAME

    conn = sqlite3.connect(f"file:{home / DB_FILENAME}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT source FROM sessions WHERE id = ?", (session_id,)).fetchone()
    finally:
        conn.close()
    return None if row is None else row[0]


async def _completion(api: ApiDaemon, name: str, text: str) -> tuple[int, dict[str, Any], str | None]:
    async with api.client() as client:
        raw = await client.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": text}], extra_headers={"X-Hermes-Session-Id": name}
        )
    body = json.loads(raw.content)
    return raw.status_code, body, raw.headers.get("x-hermes-session-id")


def _sent_texts(api: ApiDaemon) -> str:
    """Everything the last provider request carried, as one string."""
    return json.dumps(api.provider.requests[-1].body)


class TestCliSessionOutOfReach:
    """X-Hermes-Session-Id and /v1/runs naming a CLI session reach a fresh API session instead."""

    async def test_header_with_a_cli_session_id(self, api: ApiDaemon) -> None:
        """Answered exactly as an unknown name is; the CLI session is neither read nor written."""
        api.provider.push({"text": "cli answer"})
        cli_id = await trio.to_thread.run_sync(_cli_session, api.home, api.workdir)
        api.provider.push({"text": "api answer"}, {"text": "api answer"})

        status, body, echoed = await _completion(api, cli_id, "hello")
        assert CLI_SECRET not in _sent_texts(api) and "cli answer" not in _sent_texts(api)
        unknown_status, unknown_body, unknown_echoed = await _completion(api, "never-seen-name", "hello")

        assert (status, echoed) == (200, cli_id) and (unknown_status, unknown_echoed) == (200, "never-seen-name")
        strip = ("id", "created")
        assert {k: v for k, v in body.items() if k not in strip} == {k: v for k, v in unknown_body.items() if k not in strip}
        assert body["choices"][0]["message"]["content"] == "api answer"
        stored = await trio.to_thread.run_sync(stored_texts, api.home)
        assert [t for s, r, t in stored if s == cli_id and r != "system"] == [CLI_SECRET, "cli answer"]
        api_id = api_session_id(cli_id)
        assert [t for s, r, t in stored if s == api_id and r == "user"] == ["hello"]
        assert await trio.to_thread.run_sync(_source_of, api.home, api_id) == "api"

    async def test_run_with_a_cli_session_id(self, api: ApiDaemon) -> None:
        """A run naming the CLI session runs in the API's session of that name; the CLI session is untouched."""
        api.provider.push({"text": "cli answer"})
        cli_id = await trio.to_thread.run_sync(_cli_session, api.home, api.workdir)
        api.provider.push({"text": "run answer"})
        async with api.http() as http:
            created = await http.post("/v1/runs", json={"input": "go", "session_id": cli_id})
            assert created.status_code == 202
            run_id = created.json()["run_id"]
            async with http.stream("GET", f"/v1/runs/{run_id}/events") as stream:
                frames = sse_frames((await stream.aread()).decode())
            status = (await http.get(f"/v1/runs/{run_id}")).json()
        assert frames[-1]["event"] == "end"
        assert status["session_id"] == cli_id and status["output"] == "run answer" and status["status"] == "completed"
        assert CLI_SECRET not in _sent_texts(api)
        stored = await trio.to_thread.run_sync(stored_texts, api.home)
        assert [t for s, r, t in stored if s == cli_id and r == "user"] == [CLI_SECRET]
        assert [t for s, r, t in stored if s == api_session_id(cli_id) and r == "user"] == ["go"]


class TestSourceChecked:
    """A session found under a derived id is used only when the API created it."""

    async def test_foreign_session_under_a_derived_id(self, api: ApiDaemon) -> None:
        """Such a session (only a bug or a hand-edited store could make one) is answered 404 and left alone."""
        gateway = api.api_actor()._actor.gateway
        squatted = api_session_id("squatter")
        await gateway.sessions.create_session(SessionOptions(cwd=str(api.workdir), source="cli"), session_id=squatted)
        async with api.http() as http:
            response = await http.post(
                "/v1/chat/completions", json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                headers={"X-Hermes-Session-Id": "squatter"},
            )
        assert response.status_code == 404 and response.json()["error"]["message"] == "no session 'squatter'"
        assert api.provider.requests == []
        stored = await trio.to_thread.run_sync(stored_texts, api.home)
        assert [r for s, r, _ in stored if s == squatted] == ["system"]


class TestNamesAreStable:
    """A name finds the same API session again, also after the daemon restarts."""

    async def test_after_restart(self, provider: ScriptedProvider) -> None:
        """The second daemon's model call holds the first daemon's exchange under that name."""
        with tempfile.TemporaryDirectory(prefix="ha-") as base:
            provider.push({"text": "before the restart"})
            async with api_daemon(provider, base=Path(base)) as first:
                await _completion(first, "survivor", "first question")
            provider.push({"text": "after the restart"})
            async with api_daemon(provider, base=Path(base)) as second:
                status, body, _ = await _completion(second, "survivor", "second question")
                sent = _sent_texts(second)
        assert status == 200 and body["choices"][0]["message"]["content"] == "after the restart"
        assert "first question" in sent and "before the restart" in sent

    def test_ids_are_their_own_namespace(self) -> None:
        """Derived ids differ per name, never look like a generated session id, and fit every path."""
        ids = {api_session_id(name) for name in ("a", "b", "abcdef012345", "x" * 64)}
        assert len(ids) == 4
        assert all(i.startswith("api-") and len(i) == 36 for i in ids)


class TestApiSandboxMode:
    """API sessions run under ``platforms.api_server.sandbox`` and ``limits``; a wider mode or an unknown limit is refused at load."""

    async def test_api_sessions_take_the_configured_mode(self, provider: ScriptedProvider) -> None:
        provider.push({"text": "fine"})
        async with api_daemon(provider, "    sandbox: read-only\n") as api:
            status, _, _ = await _completion(api, "jailed", "hello")
            session = api.system.lookup(f"sessions/session:{api_session_id('jailed')}")
            assert status == 200 and session.statistics().details["sandbox"] == "read-only"

    async def test_api_sessions_take_the_configured_limits(self, provider: ScriptedProvider) -> None:
        """``platforms.api_server.limits`` lowers what API sessions may use, as ``sandbox`` narrows their mode."""
        provider.push({"text": "fine"})
        async with api_daemon(provider, "    limits: {pids: 64, memory_mb: 999999}\n") as api:
            status, _, _ = await _completion(api, "limited", "hello")
            session = api.system.lookup(f"sessions/session:{api_session_id('limited')}")
            limits = session.statistics().details["limits"]
            assert status == 200 and (limits["pids"], limits["memory_mb"]) == (64, SandboxLimits().memory_mb)

    def test_unknown_limit_is_a_config_error(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text("platforms:\n  api_server:\n    limits: {pid: 64}\n")
        with pytest.raises(ConfigError, match="unknown sandbox limit 'pid'"):
            load_config(tmp_path)

    def test_wider_than_max_mode_is_a_config_error(self, tmp_path: Path) -> None:
        (tmp_path / "config.yaml").write_text(
            "sandbox:\n  max_mode: workspace-write\nplatforms:\n  api_server:\n    sandbox: full-access\n"
        )
        with pytest.raises(ConfigError, match="platforms.api_server.sandbox 'full-access' is wider than sandbox.max_mode"):
            load_config(tmp_path)
