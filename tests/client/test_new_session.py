"""``/new`` in the attached client: the new session starts with its own figures, toolbar and numbers."""

from __future__ import annotations

import re

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_screen import is_idle, open_chat, session_of
from messages import control as c
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, events_until_turn_finished


def switch(terminal: PtyTerminal) -> str:
    """Type ``/new``; the new session's id once the client has switched."""
    terminal.type("/new\r")
    text = terminal.wait_for(lambda t: "new session " in t and is_idle(t), what="the switch")
    return re.findall(r"new session (\w+)", text)[-1]


def footers(text: str) -> list[str]:
    """The footers printed after turns, in order."""
    return re.findall(r"-?\d+ in · -?\d+ out · \S+ · [\d.]+s", text)


class TestFiguresAfterNew:
    """The footer and /usage after /new count the new session alone."""

    def test_footer_counts_the_new_session_turn(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A turn in the new session is footed with its own tokens, not minus the old session's."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push({"text": "first answer", "usage": {"prompt_tokens": 20, "completion_tokens": 10}})
            terminal.type("one\r")
            terminal.wait_for(lambda t: "first answer" in t and is_idle(t) and len(footers(t)) == 1, what="the first footer")
            switch(terminal)
            provider.push({"text": "second answer", "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
            terminal.type("two\r")
            text = terminal.wait_for(lambda t: "second answer" in t and len(footers(t)) == 2, what="the second footer")
            assert footers(text)[0].startswith("20 in · 10 out"), text
            assert footers(text)[1].startswith("5 in · 3 out"), text

    def test_usage_counts_every_call_of_the_session(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """/usage gives the session's provider calls over all its turns, as its tokens are."""
        provider.reset()
        usage = {"prompt_tokens": 7, "completion_tokens": 2}
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "u1", "name": "terminal", "arguments": {"command": "true"}}], "usage": usage},
                {"text": "after the tool", "usage": usage},
                {"text": "second turn", "usage": usage},
            )
            terminal.type("one\r")
            terminal.wait_for(lambda t: "after the tool" in t and is_idle(t), what="the first turn")
            terminal.type("two\r")
            terminal.wait_for(lambda t: "second turn" in t and len(footers(t)) == 2, what="the second turn")
            terminal.type("/usage\r")
            text = terminal.wait_for(lambda t: "api calls" in t, what="/usage")
            assert "prompt 21 · completion 6" in text, text
            assert "api calls 3" in text, text


class TestReattachHintAfterNew:
    """Leaving after /new names the new session and a --since that session has reached."""

    def test_since_is_the_new_session_seq(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The hint's --since is the seq of the new session's last event, not the old session's."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push({"reasoning": "a b c d e f g h", "text": " ".join(f"w{n}" for n in range(30)), "chunks": 20})
            terminal.type("a long first turn\r")
            terminal.wait_for(lambda t: "w29" in t and len(footers(t)) == 1, what="the first turn")
            new_id = switch(terminal)
            provider.push({"text": "short"})
            terminal.type("two\r")
            terminal.wait_for(lambda t: "short" in t and len(footers(t)) == 2, what="the second turn")
            terminal.type("\x04")
            assert terminal.wait_exit() == 0
            hint = re.search(r"hermes-actors attach (\w+),\s+or\s+with\s+--since\s+(\d+)", terminal.text())
        assert hint is not None, terminal.text()
        with shared_daemon.client() as client:
            client.request(c.Attach(client.next_id(), new_id, 0))
            last = events_until_turn_finished(client)[-1]
        assert (new_id, last.seq) == (hint.group(1), int(hint.group(2)))


class TestYoloAfterNew:
    """The toolbar's YOLO mark belongs to the session that has it."""

    def test_new_session_toolbar_has_no_yolo(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """After `chat --yolo` then /new, the toolbar of the new (not yolo) session shows no ⚠ YOLO."""
        provider.reset()
        with PtyTerminal(shared_daemon.home, "chat", "--yolo", *provider.chat_flags()) as terminal:
            terminal.wait_for(lambda t: is_idle(t) and "YOLO" in t.splitlines()[-1], what="the yolo toolbar")
            new_id = switch(terminal)
            text = terminal.wait_for(lambda t: new_id in t.splitlines()[-1], what="the new session's toolbar")
            assert "YOLO" not in text.splitlines()[-1], text


class TestToolNumbersAfterNew:
    """Tools are numbered per session: /new starts at [1], and /show 1 is the new session's tool."""

    def test_numbers_start_again(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The new session's first tool is [1], and /show 1 prints its output, not the old session's."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "n1", "name": "terminal", "arguments": {"command": "echo old-session-output"}}]},
                {"text": "old done"},
            )
            terminal.type("one\r")
            terminal.wait_for(lambda t: "old done" in t and is_idle(t), what="the old session's tool")
            switch(terminal)
            provider.push(
                {"tool_calls": [{"id": "n2", "name": "terminal", "arguments": {"command": "echo new-session-output"}}]},
                {"text": "new done"},
            )
            terminal.type("two\r")
            text = terminal.wait_for(lambda t: "new done" in t and is_idle(t), what="the new session's tool")
            assert re.search(r"\[1\] .*terminal echo new-session-output", text), text
            terminal.type("/show 1\r")
            shown = terminal.wait_for(lambda t: "/show 1" in t and t.count("new-session-output") >= 4, what="/show 1")
            assert shown.count("old-session-output") == 2, shown  # its line and output, before /new
