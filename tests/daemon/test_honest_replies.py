"""Replies that say what happened: interrupt, kill and steer with no turn running, titles, and the
states `ps`, `tree` and `inspect` report while a turn runs a tool."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cli.render import format_ps
from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli, wait_for
from tests.daemon.test_sessions import NO_TOOLS, _chat


@pytest.fixture
def daemon(shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> Iterator[DaemonProcess]:
    """One daemon for the module; each test works in sessions of its own and leaves no script behind."""
    provider.reset()
    yield shared_daemon
    provider.reset()


def _session(daemon: DaemonProcess, provider: ScriptedProviderProcess, title: str | None = None) -> str:
    """A new live session (not one-shot) pointed at the scripted provider."""
    with daemon.client() as client:
        created = client.request(c.CreateSession(
            client.next_id(), cwd=str(daemon.home.parent), model="scripted-model", provider="custom",
            base_url=provider.base_url, api_mode="chat_completions", title=title,
        ))
    return created.session_id


def _send(daemon: DaemonProcess, session_id: str, text: str) -> str:
    with daemon.client() as client:
        return client.request(c.SendMessage(client.next_id(), session_id, text)).message


def _ps(daemon: DaemonProcess) -> list[dict[str, Any]]:
    return json.loads(run_cli(daemon.home, "ps", "--json").stdout)["sessions"]


def _row(daemon: DaemonProcess, session_id: str) -> dict[str, Any] | None:
    return next((row for row in _ps(daemon) if row["path"] == f"sessions/session:{session_id}"), None)


def _stored_texts(daemon: DaemonProcess, session_id: str) -> list[str]:
    shown = json.loads(run_cli(daemon.home, "sessions", "show", session_id, "--json").stdout)
    return [str(m["message"].get("content")) for m in shown["head"] + shown["tail"]]


class TestNothingToDo:
    """Interrupt, kill of the turn and steer on an idle session say so and exit 1, in text and --json."""

    def test_interrupt_idle(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`interrupt` on an idle session: "nothing to interrupt", exit 1, code no_turn."""
        session_id = _session(daemon, provider)
        text = run_cli(daemon.home, "interrupt", session_id)
        assert (text.returncode, text.stdout) == (1, "")
        assert text.stderr == f"hermes-actors: nothing to interrupt: session {session_id} has no turn running\n"
        as_json = run_cli(daemon.home, "interrupt", session_id, "--json")
        assert as_json.returncode == 1
        assert json.loads(as_json.stdout)["error"]["code"] == "no_turn"

    def test_kill_turn_idle(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`kill SESSION/turn` with no turn running: "no turn running", exit 1, by id and by path."""
        session_id = _session(daemon, provider)
        for path in (f"{session_id}/turn", f"sessions/session:{session_id}/turn"):
            result = run_cli(daemon.home, "kill", path, "--json")
            assert result.returncode == 1, result.stderr
            error = json.loads(result.stdout)["error"]
            assert error == {"code": "no_turn", "message": f"no turn running in session {session_id}: nothing to kill"}

    def test_steer_idle_is_refused_and_not_stored(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`steer` on an idle session is refused (exit 1) and starts no turn: the text is not in the history."""
        session_id = _session(daemon, provider)
        result = run_cli(daemon.home, "steer", session_id, "steer text that must not be stored")
        assert result.returncode == 1
        assert "no turn to steer" in result.stderr and "send it as a message" in result.stderr
        assert not any("must not be stored" in text for text in _stored_texts(daemon, session_id))
        tree = json.loads(run_cli(daemon.home, "tree", session_id, "--json").stdout)["tree"]
        assert [child["name"] for child in tree["children"]] == []


class TestDoneWhileRunning:
    """The same commands during a turn do what they say, and say it."""

    def test_steer_then_interrupt(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A steer is accepted while the turn waits for the model; an interrupt names the turn it stops."""
        session_id = _session(daemon, provider)
        provider.push({"text": "too slow", "delay_first_byte": 60})
        assert _send(daemon, session_id, "a turn to steer") == "sent: a turn started"
        steered = run_cli(daemon.home, "steer", session_id, "also this", "--json")
        assert steered.returncode == 0, steered.stderr
        assert json.loads(steered.stdout) == {
            "ok": True, "message": "steered: the text reaches the model with the next tool result"
        }
        interrupted = run_cli(daemon.home, "interrupt", session_id)
        assert (interrupted.returncode, interrupted.stdout) == (0, "interrupting turn 1\n")
        wait_for("the turn to end", lambda: (_row(daemon, session_id) or {}).get("turn_running") is False)


class TestStatesAgree:
    """While a tool runs, the session is busy and says so in ps, tree and inspect (text and --json)."""

    def test_tool_running(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Session busy, turn "running tool terminal", the same in every view; idle again once killed."""
        session_id = _session(daemon, provider)
        provider.push(
            {"tool_calls": [{"id": "call_nap", "name": "terminal", "arguments": {"command": "sleep 60"}}]},
            {"text": "woke up"},
        )
        _send(daemon, session_id, "run a slow command")
        row = wait_for("the tool to run", lambda: (r := _row(daemon, session_id)) and r["tools"] and r)
        assert row["state"] == "busy" and row["turn_running"] is True
        assert row["activity"] == "turn 1: running tool terminal"
        inspected = json.loads(run_cli(daemon.home, "inspect", session_id, "--json").stdout)
        assert (inspected["state"], inspected["activity"]) == ("busy", "turn 1: running tool terminal")
        tree = json.loads(run_cli(daemon.home, "tree", session_id, "--json").stdout)["tree"]
        turn = next(child for child in tree["children"] if child["name"] == "turn")
        assert (tree["state"], turn["activity"]) == ("busy", "running tool terminal")
        text = run_cli(daemon.home, "tree", session_id).stdout
        assert " idle " not in text.splitlines()[0] and "running tool terminal" in text
        killed = run_cli(daemon.home, "kill", f"{session_id}/turn")
        assert (killed.returncode, killed.stdout) == (0, f"stopping session:{session_id}/turn\n")
        idle = wait_for("the session to be idle", lambda: (r := _row(daemon, session_id)) and not r["turn_running"] and r)
        assert (idle["state"], idle["activity"]) == ("idle", "")


class TestSubagentsInPs:
    """`ps --json` calls a subagent "subagent"; the text table keeps its columns with long paths."""

    def test_subagent_kind_and_columns(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The subagent's row has kind subagent and its whole path in JSON; every text row is aligned."""
        session_id = _session(daemon, provider)
        long_id = "call_" + "x" * 60
        provider.push(
            {"tool_calls": [{"id": long_id, "name": "delegate_task", "arguments": {"goal": "wait for a slow model"}}]},
            {"text": "slow", "delay_first_byte": 60},
        )
        _send(daemon, session_id, "delegate something")
        rows = wait_for("the subagent", lambda: [r for r in _ps(daemon) if long_id in r["path"]])
        assert [r["kind"] for r in rows] == ["subagent"]
        assert rows[0]["path"].startswith(f"sessions/session:{session_id}/turn/tool:{long_id}/subagent:")
        parent = _row(daemon, session_id)
        assert parent is not None and (parent["kind"], parent["subagents"]) == ("session", 1)
        table = run_cli(daemon.home, "ps").stdout.splitlines()
        state_column = table[0].index("STATE")
        assert all(line[state_column - 1] == " " and line[state_column] != " " for line in table[1:]), table
        assert any(line.startswith("  subagent:") for line in table)
        run_cli(daemon.home, "kill", f"{session_id}/turn")
        wait_for("the subagent to go", lambda: not [r for r in _ps(daemon) if long_id in r["path"]])


class TestTitles:
    """Titles: a duplicate is a plain error; attach and sessions show take a title for an id."""

    def test_duplicate_title(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The second `chat --title` with the same title exits 1 naming the session that has it, no class names."""
        title = f"dup-{time.monotonic_ns()}"
        first_id, first = _chat(daemon, provider, NO_TOOLS, "--title", title)
        assert first.returncode == 0, first.stderr
        second = run_cli(daemon.home, "chat", "-q", NO_TOOLS, "--title", title, *provider.chat_flags(), timeout=60)
        assert second.returncode == 1
        assert second.stderr == f"hermes-actors: a session titled {title!r} already exists (id {first_id})\n"

    def test_show_and_attach_by_title(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`sessions show TITLE` and `attach TITLE` reach the titled session (its events shown); an unknown name exits 2."""
        title = f"named-{time.monotonic_ns()}"
        session_id, _ = _chat(daemon, provider, "the titled question, no tools", "--title", title)
        shown = json.loads(run_cli(daemon.home, "sessions", "show", title, "--json").stdout)
        assert shown["session"]["id"] == session_id
        attached = run_cli(daemon.home, "attach", title, stdin="sent by title, no tools\n", timeout=60)
        assert attached.returncode == 0, attached.stderr
        assert "plain answer to: sent by title, no tools" in attached.stdout
        missing = run_cli(daemon.home, "sessions", "show", "no-such-title-or-id")
        assert missing.returncode == 2
        assert missing.stderr == "hermes-actors: no session with id or title 'no-such-title-or-id'\n"

    def test_an_id_wins_over_a_title(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A session titled with another session's id: that id still names the other session."""
        target = _session(daemon, provider)
        impostor = _session(daemon, provider, title=target)
        shown = json.loads(run_cli(daemon.home, "sessions", "show", target, "--json").stdout)
        assert shown["session"]["id"] == target != impostor


class TestSessionReplies:
    """/reset-tools and /compress answer with what they did."""

    def test_reset_tools_names_them(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The reply counts and names the tools the session has now."""
        session_id = _session(daemon, provider)
        with daemon.client() as client:
            reply = client.request(c.ResetSessionTools(client.next_id(), session_id))
        count, _, names = reply.message.removeprefix("tools reset: ").partition(" tools (")
        assert "terminal" in names.rstrip(")").split(", ") and int(count) == len(names.split(", "))

    def test_compress_short_history(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A history too short to compress says so, and what it needs, instead of "compression requested"."""
        session_id = _session(daemon, provider)
        with daemon.client() as client:
            reply = client.request(c.CompressSession(client.next_id(), session_id))
        assert reply.message.startswith("nothing to compress yet: all ")
        assert reply.message.endswith("it needs more conversation between them")


class TestPsColumns:
    """`ps`'s text table keeps its columns whatever the length of a session's name."""

    def test_long_names_keep_columns(self) -> None:
        """An API session's long id loses its middle; a subagent row is indented under its parent."""
        api = f"sessions/session:api-{'0123456789abcdef' * 2}"
        rows = [
            {"path": api, "kind": "session", "state": "busy", "age_seconds": 5, "turn_running": True,
             "tools": [], "processes": [], "subagents": 1, "activity": "turn 1: running tool delegate_task"},
            {"path": f"{api}/turn/tool:call_{'y' * 50}/subagent:0", "kind": "subagent", "state": "busy",
             "age_seconds": 2, "turn_running": True, "tools": [], "processes": [], "subagents": 0, "activity": ""},
        ]
        header, parent, child = format_ps(rows).splitlines()
        column = header.index("STATE")
        assert [line[column:column + 4] for line in (parent, child)] == ["busy", "busy"]
        assert parent.startswith("session:api-0") and "…" in parent[:column] and parent[column - 2] == "f"
        assert child.startswith("  subagent:0 ")
