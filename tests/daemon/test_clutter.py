"""No clutter: a finished `chat -q` session does not linger live, and subagent sessions are listed under
their parent."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli, wait_for
from tests.daemon.test_honest_replies import _ps, _send, _session
from tests.daemon.test_sessions import NO_TOOLS, _chat


@pytest.fixture
def daemon(shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> Iterator[DaemonProcess]:
    """One daemon for the module; each test works in sessions of its own."""
    provider.reset()
    yield shared_daemon
    provider.reset()


def _live(daemon: DaemonProcess) -> set[str]:
    return {row["session_id"] for row in _ps(daemon)}


class TestOneShotHibernates:
    """A `chat -q` session hibernates as soon as it is done; an interactive one keeps its idle time."""

    def test_one_shot_leaves_ps(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """After `chat -q` ends its session leaves `ps` while a plain session, just as idle, stays."""
        plain = _session(daemon, provider)
        _send(daemon, plain, NO_TOOLS)
        wait_for("the plain session's turn to end", lambda: not any(r["turn_running"] for r in _ps(daemon) if r["session_id"] == plain))
        one_shot, result = _chat(daemon, provider, NO_TOOLS)
        assert result.returncode == 0, result.stderr
        wait_for("the one-shot session to hibernate", lambda: one_shot not in _live(daemon))
        assert plain in _live(daemon)
        assert f"session {one_shot} hibernated" in daemon.log()

    def test_woken_one_shot_still_answers(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A hibernated one-shot session is woken by a message like any other, and answers."""
        one_shot, _ = _chat(daemon, provider, NO_TOOLS)
        wait_for("the one-shot session to hibernate", lambda: one_shot not in _live(daemon))
        attached = run_cli(daemon.home, "attach", one_shot, stdin="once more, no tools\n", timeout=60)
        assert attached.returncode == 0, attached.stderr
        assert "plain answer to: once more, no tools" in attached.stdout


class TestSubagentsListedUnderParent:
    """`sessions list` shows top-level sessions with a subagent count; `--all` lists subagents flat."""

    def test_list_and_all(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The demo turn's two subagents are counted on their parent's row, and listed only with --all."""
        parent, result = _chat(daemon, provider, "look at the machine")
        assert result.returncode == 0, result.stderr
        listed = json.loads(run_cli(daemon.home, "sessions", "list", "--json").stdout)["sessions"]
        assert all(row["parent_session_id"] is None for row in listed)
        assert [row["subagents"] for row in listed if row["id"] == parent] == [2]
        text = run_cli(daemon.home, "sessions", "list").stdout
        assert any(line.startswith(parent) and line.endswith("[+2 subagents]") for line in text.splitlines()), text
        every = json.loads(run_cli(daemon.home, "sessions", "list", "--all", "--json").stdout)["sessions"]
        children = [row for row in every if row["parent_session_id"] == parent]
        assert len(children) == 2 and all(row["source"] == "subagent" for row in children)
