"""The user's hooks (``hooks`` in config.yaml) in a real daemon, driven by the scripted provider: a
``pre_tool_call`` command blocks ``git push`` with a reason the model reads as the tool's result; a hook
that hangs is cut off at its timeout and holds up only its own call (``on_error`` deciding the call); a
Python hook that raises is logged and changes nothing; the turn, session and approval events reach their
hooks in Hermes's shapes; and a command hook sees none of the daemon's secrets."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from messages import control as c
from tests.daemon.helpers import ScriptedProviderProcess, run_cli
from tests.daemon.jailed import DAEMON_SECRET, DOTENV_SECRET, TURN_TIMEOUT, JailedDaemon, jailed_daemon, wait_until

#: The user's hook: records each event it is given (its stdin and environment), blocks ``git push``.
RECORDER = """\
import json, os, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps({"payload": event, "env": dict(os.environ), "cwd": os.getcwd()}) + "\\n")
command = (event.get("tool_input") or {}).get("command", "")
if event["hook_event_name"] == "pre_tool_call" and "git push" in command:
    print(json.dumps({"decision": "block", "reason": "pushing is not allowed from the agent"}))
if event["hook_event_name"] == "pre_llm_call" and "remind me" in event["extra"]["user_message"]:
    print(json.dumps({"context": "The hook says: today is a hook day."}))
"""
#: A hook that never answers (its child too: the whole group goes at the timeout).
HANGING = "import subprocess; subprocess.run(['sleep', '299.731'])"
#: A hook that waits until the test opens its FIFO for writing (argv[1]).
GATE = "import sys; open(sys.argv[1]).read()"
#: How long the hanging hooks may run.
HANG_TIMEOUT = 1


def _config(base: Path) -> str:
    recorder, hanging, gate = base / "recorder.py", base / "hanging.py", base / "gate.py"
    recorder.write_text(RECORDER)
    hanging.write_text(HANGING)
    gate.write_text(GATE)
    os.mkfifo(base / "gate.fifo")
    record = f"{sys.executable} {recorder} {base / 'events.jsonl'}"
    observed = ("on_session_start", "pre_llm_call", "post_llm_call", "on_session_end", "pre_approval_request", "post_approval_response")
    hooks: dict[str, Any] = {event: [{"command": record}] for event in observed}
    hooks["pre_tool_call"] = [
        {"command": record, "matcher": "terminal", "timeout": 20},
        # Only read_file, skills_list and search_files calls wait: the other tests' calls are not held up.
        {"command": f"{sys.executable} {gate} {base / 'gate.fifo'}", "matcher": "read_file", "timeout": 60},
        {"command": f"{sys.executable} {hanging}", "matcher": "skills_list", "timeout": HANG_TIMEOUT},
        {"command": f"{sys.executable} {hanging}", "matcher": "search_files", "timeout": HANG_TIMEOUT, "on_error": "block"},
        {"python": "tests.daemon.hook_functions:crash", "matcher": "todo"},
    ]
    hooks["post_tool_call"] = [{"command": record, "matcher": "terminal"}]
    return json.dumps({
        "sandbox": {"mode": "workspace-write", "max_mode": "workspace-write"}, "terminal": {"timeout": 40}, "hooks": hooks,
    })


@pytest.fixture(scope="module")
def jailed() -> Iterator[JailedDaemon]:
    """One daemon with the hooks above, a secret in its environment and in ``.env``."""
    with jailed_daemon(lambda running: (running.home / "config.yaml").write_text(_config(running.base))) as running:
        yield running


@pytest.fixture
def provider(provider: ScriptedProviderProcess) -> ScriptedProviderProcess:
    """The module's scripted provider, emptied of what an earlier test left."""
    provider.reset()
    return provider


def _events(jailed: JailedDaemon, session_id: str) -> list[dict[str, Any]]:
    """What the recorder hook was given for ``session_id``, in order."""
    path = jailed.base / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [entry for entry in map(json.loads, lines) if entry["payload"]["session_id"] == session_id]


def _names(jailed: JailedDaemon, session_id: str) -> list[str]:
    return [entry["payload"]["hook_event_name"] for entry in _events(jailed, session_id)]


class TestPreToolHookBlocks:
    """A pre_tool_call command hook that answers block stops the call; the model reads its reason."""

    def test_git_push_is_blocked_with_the_reason(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        marker = jailed.workspace / "pushed"
        result = jailed.tool_turn(provider, session, "terminal", {"command": f"git push origin main; touch {marker}"})
        assert json.loads(result) == {"error": "pushing is not allowed from the agent"}
        assert not marker.exists()
        # The next request to the model carries the reason as the call's tool message.
        tool_messages = [m for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
        assert "pushing is not allowed from the agent" in tool_messages[-1]["content"]

    def test_a_model_retrying_a_blocked_call_is_warned_by_the_guardrails(
        self, jailed: JailedDaemon, provider: ScriptedProviderProcess
    ) -> None:
        session = jailed.create_session(provider)
        push = {"tool_calls": [{"id": "call_1", "name": "terminal", "arguments": {"command": "git push"}}]}
        provider.push(push, {**push, "tool_calls": [{**push["tool_calls"][0], "id": "call_2"}]})
        second = jailed.tool_turn(provider, session, "terminal", {"command": "git push"})
        first = jailed.tool_results(session)[0]
        assert json.loads(first) == {"error": "pushing is not allowed from the agent"}
        assert second.startswith(first) and len(second) > len(first)

    def test_other_commands_run_and_the_hooks_see_hermes_shapes(
        self, jailed: JailedDaemon, provider: ScriptedProviderProcess
    ) -> None:
        session = jailed.create_session(provider)
        result = jailed.tool_turn(provider, session, "terminal", {"command": "echo hook-allowed"})
        assert "hook-allowed" in result
        pre, post = [e for e in _events(jailed, session) if e["payload"]["tool_name"] == "terminal"]
        assert pre["payload"]["hook_event_name"] == "pre_tool_call"
        assert pre["payload"]["tool_input"] == {"command": "echo hook-allowed"}
        assert pre["payload"]["cwd"] == str(jailed.workspace) == pre["cwd"]
        assert pre["payload"]["extra"]["tool_call_id"] == "call_1"
        assert post["payload"]["hook_event_name"] == "post_tool_call"
        assert post["payload"]["extra"]["status"] == "ok"
        assert "hook-allowed" in post["payload"]["extra"]["result"]

    def test_a_blocked_call_is_seen_by_post_tool_call_as_blocked(
        self, jailed: JailedDaemon, provider: ScriptedProviderProcess
    ) -> None:
        session = jailed.create_session(provider)
        jailed.tool_turn(provider, session, "terminal", {"command": "git push"})
        post = [e["payload"] for e in _events(jailed, session) if e["payload"]["hook_event_name"] == "post_tool_call"]
        assert [p["extra"]["status"] for p in post] == ["blocked"]


class TestHookEnvironment:
    """A command hook runs unjailed as the user's code, but without the daemon's secrets."""

    def test_no_secret_reaches_a_hook(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        jailed.tool_turn(provider, session, "terminal", {"command": "true"})
        seen = json.dumps(_events(jailed, session))
        assert DAEMON_SECRET not in seen
        assert DOTENV_SECRET not in seen
        env = _events(jailed, session)[0]["env"]
        assert not [name for name in env if name.startswith("HERMES_ACTORS_")]
        assert env["HOME"] == str(jailed.user_home)


class TestTurnAndSessionHooks:
    """The turn's and session's events reach their hooks in Hermes's order, before TurnFinished."""

    def test_a_sessions_turns(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        provider.push({"text": "first reply"}, {"text": "second reply"})
        with jailed.daemon.client() as client:
            for text in ("hello", "again"):
                client.request(c.Attach(client.next_id(), session, None))
                client.request(c.SendMessage(client.next_id(), session, text))
                client.settimeout(TURN_TIMEOUT)
                while type(client.receive()).__name__ != "TurnFinished":
                    pass
        assert _names(jailed, session) == [
            "on_session_start", "pre_llm_call", "post_llm_call", "on_session_end",
            "pre_llm_call", "post_llm_call", "on_session_end",
        ]
        events = [entry["payload"] for entry in _events(jailed, session)]
        assert events[1]["extra"]["user_message"] == "hello"
        assert events[1]["extra"]["is_first_turn"] is True
        assert events[2]["extra"]["assistant_response"] == "first reply"
        assert events[3]["extra"]["completed"] is True
        assert events[4]["extra"]["is_first_turn"] is False
        assert events[0]["extra"]["platform"] == "cli"


    def test_pre_llm_call_context_reaches_the_model_not_the_history(
        self, jailed: JailedDaemon, provider: ScriptedProviderProcess
    ) -> None:
        session = jailed.create_session(provider)
        jailed.tool_turn(provider, session, "terminal", {"command": "true"}, text="remind me")
        # Both requests of the turn (before and after the tool call) carry it on the turn's message.
        for request in provider.requests()[-2:]:
            users = [m["content"] for m in request["body"]["messages"] if m["role"] == "user"]
            assert users[-1] == "remind me\n\nThe hook says: today is a hook day."
        with jailed.daemon.client() as client:
            shown = client.request(c.ShowSession(client.next_id(), session, head=10, tail=0))
        assert [m["message"]["content"] for m in shown.head if m["message"]["role"] == "user"] == ["remind me"]


class TestApprovalHooks:
    """Asking the user to approve a command is told to the approval hooks, with the answer."""

    def test_request_and_answer(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        junk = jailed.workspace / "junk"
        junk.mkdir()
        jailed.tool_turn(provider, session, "terminal", {"command": f"rm -r {junk}"})
        approvals = [e["payload"] for e in _events(jailed, session) if "approval" in e["payload"]["hook_event_name"]]
        assert [a["hook_event_name"] for a in approvals] == ["pre_approval_request", "post_approval_response"]
        assert approvals[0]["extra"]["command"] == f"rm -r {junk}"
        assert approvals[1]["extra"]["choice"] == "once"


class TestFailingHooks:
    """A hook that hangs or crashes affects only its own call of its own session."""

    def test_a_waiting_hook_holds_up_only_its_own_call(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        target = jailed.workspace / "notes.txt"
        target.write_text("read once the hook answered\n")
        slow, other = jailed.create_session(provider), jailed.create_session(provider)
        provider.push({"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": str(target)}}]})
        with jailed.daemon.client() as client:
            client.settimeout(TURN_TIMEOUT)
            client.request(c.Attach(client.next_id(), slow, None))
            client.request(c.SendMessage(client.next_id(), slow, "read it"))
            while type(client.receive()).__name__ != "ToolStarted":
                pass
            # The slow session's hook waits on its FIFO; another session's whole turn goes through meanwhile.
            provider.push({"text": "not held up"})
            with jailed.daemon.client() as other_client:
                other_client.settimeout(TURN_TIMEOUT)
                other_client.request(c.Attach(other_client.next_id(), other, None))
                other_client.request(c.SendMessage(other_client.next_id(), other, "hi"))
                while type(finished := other_client.receive()).__name__ != "TurnFinished":
                    pass
            assert finished.final_text == "not held up"
            assert jailed.tool_results(slow) == []
            provider.push({"text": "read"})
            with open(jailed.base / "gate.fifo", "w") as gate:
                gate.write("go")
            while type(client.receive()).__name__ != "TurnFinished":
                pass
        assert "read once the hook answered" in jailed.tool_results(slow)[-1]

    def test_a_hanging_hook_is_cut_off_and_the_call_runs(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        result = json.loads(jailed.tool_turn(provider, session, "skills_list", {}))
        # Its on_error is allow (Hermes's): the call ran once the hook was cut off.
        assert "error" not in result
        assert f"timed out after {HANG_TIMEOUT} s" in jailed.daemon.log()
        wait_until(lambda: not _hanging_processes(), 10, "the hook's process group to be gone")

    def test_on_error_block_blocks_the_call(self, jailed: JailedDaemon, provider: ScriptedProviderProcess) -> None:
        session = jailed.create_session(provider)
        result = json.loads(jailed.tool_turn(provider, session, "search_files", {"pattern": "x"}))
        assert "timed out" in result["error"] and "set to block on failure" in result["error"]

    def test_a_crashing_python_hook_is_logged_and_the_call_runs(
        self, jailed: JailedDaemon, provider: ScriptedProviderProcess
    ) -> None:
        session = jailed.create_session(provider)
        result = json.loads(jailed.tool_turn(provider, session, "todo", {"todos": [{"id": "1", "content": "x", "status": "pending"}]}))
        assert "error" not in result
        assert "hook python tests.daemon.hook_functions:crash (pre_tool_call" in jailed.daemon.log()
        assert "RuntimeError: the hook broke" in jailed.daemon.log()


class TestHooksList:
    """``hermes-actors hooks list`` shows the daemon's hooks."""

    def test_lists_each_hook(self, jailed: JailedDaemon) -> None:
        listed = run_cli(jailed.home, "hooks", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        hooks = json.loads(listed.stdout)["hooks"]
        assert {"event": "pre_tool_call", "matcher": "search_files", "timeout": HANG_TIMEOUT, "on_error": "block"}.items() <= [
            h for h in hooks if h["matcher"] == "search_files"
        ][0].items()
        assert len(hooks) == 12  # six observers, five pre_tool_call, one post_tool_call


def _hanging_processes() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"hanging.py" in cmdline or cmdline == b"sleep\x00299.731\x00":
            found.append(proc.name)
    return found
