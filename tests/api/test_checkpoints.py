"""The HTTP API's checkpoints: a named API session's run deletes a file with an approved terminal command
(checkpointed first), and the endpoints list, diff and restore, only for the API's own sessions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from control.client import ControlClient
from control.paths import DaemonPaths
from messages import control as c
from providers.scripted import ScriptedProvider
from tests.api.harness import ApiDaemon, api_daemon, sse_frames

ENABLED = "checkpoints:\n  enabled: true\n"


@pytest.fixture
async def enabled(provider: ScriptedProvider) -> AsyncIterator[ApiDaemon]:
    """A daemon serving the API with checkpoints.enabled."""
    async with api_daemon(provider, ENABLED) as running:
        yield running


async def _approved_run(api: ApiDaemon, name: str, command: str, choice: str = "once") -> None:
    """A run in API session ``name`` whose model runs ``command``, answered ``choice``; returns when it completed."""
    api.provider.push(
        {"tool_calls": [{"id": "call_rm", "name": "terminal", "arguments": {"command": command}}]},
        {"text": "Done."},
    )
    async with api.http() as http:
        started = await http.post("/v1/runs", json={"input": "clean up", "session_id": name})
        assert 202 == started.status_code, started.text
        run_id = started.json()["run_id"]
        with trio.fail_after(20):
            while not (await http.get(f"/v1/runs/{run_id}")).json()["pending_approvals"]:
                await trio.sleep(0.02)
        assert 200 == (await http.post(f"/v1/runs/{run_id}/approval", json={"choice": choice})).status_code
        with trio.fail_after(20):
            events = await http.get(f"/v1/runs/{run_id}/events")
        assert "completed" == json.loads(sse_frames(events.text)[-1]["data"])["status"]


class TestCheckpointEndpoints:
    """An approved terminal command is checkpointed first; the API lists, diffs and restores, undoably."""

    async def test_restore_after_an_approved_command(self, enabled: ApiDaemon) -> None:
        """rm -r of a directory is undone by POST .../checkpoints/1/restore; the restore itself is undoable."""
        victim = enabled.workdir / "victim"
        victim.mkdir()
        (victim / "notes.txt").write_text("precious\n")
        await _approved_run(enabled, "cleanup", f"rm -r {victim}")
        assert not victim.exists()
        async with enabled.http() as http:
            listed = (await http.get("/v1/sessions/cleanup/checkpoints")).json()
            assert str(enabled.workdir) == listed["workdir"]
            assert ["before terminal: " + f"rm -r {victim}"[:60]] == [cp["reason"] for cp in listed["data"]]
            diff = (await http.get("/v1/sessions/cleanup/checkpoints/1/diff")).json()
            assert "-precious" in diff["diff"] and diff["truncated"] is False
            restored = await http.post("/v1/sessions/cleanup/checkpoints/1/restore")
            assert 200 == restored.status_code, restored.text
            assert "precious\n" == (victim / "notes.txt").read_text()
            undo = restored.json()["undo"]
            assert 1 == undo["number"] and 2 == len(restored.json()["data"])
            assert 200 == (await http.post("/v1/sessions/cleanup/checkpoints/1/restore")).status_code
            assert not victim.exists()

    async def test_a_denied_command_takes_none(self, enabled: ApiDaemon) -> None:
        """A command the user denies changes nothing, so nothing is snapshotted."""
        victim = enabled.workdir / "kept"
        victim.mkdir()
        await _approved_run(enabled, "denied", f"rm -r {victim}", choice="deny")
        assert victim.exists()
        async with enabled.http() as http:
            assert [] == (await http.get("/v1/sessions/denied/checkpoints")).json()["data"]

    async def test_errors(self, enabled: ApiDaemon) -> None:
        """An unknown session, a bad number and a missing checkpoint are 404 / 400 / 404 in OpenAI's error shape."""
        await _approved_run(enabled, "errs", f"rm -rf {enabled.workdir / 'nothing-here'}")
        async with enabled.http() as http:
            unknown = await http.get("/v1/sessions/nobody/checkpoints")
            assert 404 == unknown.status_code and "error" in unknown.json()
            assert 400 == (await http.get("/v1/sessions/errs/checkpoints/0/diff")).status_code
            missing = await http.post("/v1/sessions/errs/checkpoints/7/restore")
            assert 404 == missing.status_code and "no checkpoint 7" in missing.json()["error"]["message"]
            assert 401 == (await http.get("/v1/sessions/errs/checkpoints", headers={"Authorization": "Bearer no"})).status_code

    async def test_cli_sessions_are_out_of_reach(self, enabled: ApiDaemon) -> None:
        """An API session's checkpoints answer; a CLI session's id reads as unknown, as everywhere in the API."""
        await _approved_run(enabled, "mine", f"rm -rf {enabled.workdir / 'nothing-here'}")
        cli_session = await trio.to_thread.run_sync(_cli_session, enabled.home, enabled.workdir)
        async with enabled.http() as http:
            assert 200 == (await http.get("/v1/sessions/mine/checkpoints")).status_code
            assert 404 == (await http.get(f"/v1/sessions/{cli_session}/checkpoints")).status_code


class TestOff:
    """Without checkpoints.enabled the endpoints answer 503 saying how to turn them on."""

    async def test_off(self, api: ApiDaemon) -> None:
        """503, the config key named; no shadow repository is made."""
        await _approved_run(api, "plain", f"rm -rf {api.workdir / 'nothing-here'}")
        async with api.http() as http:
            answer = await http.get("/v1/sessions/plain/checkpoints")
        assert 503 == answer.status_code and "checkpoints.enabled" in answer.json()["error"]["message"]
        assert not (api.home / "checkpoints").exists()


def _cli_session(home: Path, cwd: Path) -> str:
    with ControlClient.connect(DaemonPaths(home)) as client:
        return str(client.request(c.CreateSession(client.next_id(), str(cwd))).session_id)
