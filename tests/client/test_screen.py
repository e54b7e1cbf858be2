"""What a person sees in the interactive client: every streamed token, markdown, tools, subagents, history."""

from __future__ import annotations

import re

import pytest

from tests.client.pty_terminal import PtyTerminal
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli

TOKENS = [f"tok{n}" for n in range(400)]
NO_TOOLS = "hello, no tools please"


def open_chat(daemon: DaemonProcess, provider: ScriptedProviderProcess, columns: int = 80, lines: int = 24) -> PtyTerminal:
    """``chat`` in a pty, once its prompt is up."""
    terminal = PtyTerminal(daemon.home, "chat", *provider.chat_flags(), columns=columns, lines=lines)
    terminal.wait_for(lambda text: "attached to" in text and is_idle(text), what="the attach banner")
    return terminal


def session_of(terminal: PtyTerminal) -> str:
    """The session id the client attached to."""
    return re.search(r"attached to (\w+)", terminal.text()).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check


def is_idle(text: str) -> bool:
    """The toolbar (the last row) shows an idle session."""
    return "· /help" in text.splitlines()[-1]


def words(text: str) -> list[str]:
    """The streamed tokens on screen, in order."""
    return re.findall(r"tok\d+", text)


def stored_session(daemon: DaemonProcess, provider: ScriptedProviderProcess, *flags: str) -> str:
    """A session with one finished exchange (``chat -q``), its id."""
    result = run_cli(daemon.home, "chat", "-q", NO_TOOLS, *provider.chat_flags(), *flags, timeout=90)
    assert result.returncode == 0, result.stderr
    return re.search(r"session (\w+)", result.stderr).group(1)  # type: ignore[union-attr]  # no match fails the test on this line, which is the check


class TestStreamedText:
    """A long streamed paragraph is on screen whole, at any width, in every attached client."""

    @pytest.mark.parametrize(("columns", "lines"), [(80, 24), (140, 45)])
    def test_all_tokens_visible(
        self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess, columns: int, lines: int
    ) -> None:
        """All 400 tokens of a slow stream end up on screen or in its scrollback, once and in order."""
        provider.reset()
        with open_chat(shared_daemon, provider, columns, lines) as terminal:
            provider.push({"text": " ".join(TOKENS), "chunk_delay": 0.005})
            terminal.type("stream please\r")
            text = terminal.wait_for(lambda t: "tok399" in t and is_idle(t), what="the end of the stream")
            assert TOKENS == words(text)

    def test_two_clients_see_the_same_text(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A second client attached to the session (another width) shows every token too."""
        provider.reset()
        with open_chat(shared_daemon, provider, 80, 24) as first, PtyTerminal(
            shared_daemon.home, "attach", session_of(first), columns=120, lines=30
        ) as second:
            second.wait_for(lambda t: "attached to" in t and is_idle(t), what="the second client")
            provider.push({"text": " ".join(TOKENS), "chunk_delay": 0.005})
            first.type("stream to both\r")
            for terminal in (first, second):
                text = terminal.wait_for(lambda t: "tok399" in t and is_idle(t), what="the end of the stream")
                assert TOKENS == words(text)
                assert text.count("> stream to both") == 1  # the message shown once, in both clients


class TestRendering:
    """Answers are rendered markdown; tools show a preview; subagents are labelled."""

    def test_markdown_answer(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Reasoning lines, then headings, emphasis, code blocks and lists rendered, not shown as markdown source."""
        provider.reset()
        answer = "# Plan\n\nSome **bold** words.\n\n```python\nprint('hi')\n```\n\n- first item\n- second item\n"
        with open_chat(shared_daemon, provider) as terminal:
            provider.push({"reasoning": "weighing the plan\nthen the list", "text": answer, "chunks": 12, "chunk_delay": 0.01})
            terminal.type("markdown please\r")
            text = terminal.wait_for(lambda t: "second item" in t and is_idle(t), what="the rendered answer")
            assert "weighing the plan\nthen the list\n" in text  # reasoning, line by line, before the answer
            assert "Some bold words." in text
            assert "**" not in text and "```" not in text and "# Plan" not in text
            assert "print('hi')" in text
            assert re.search(r"• first item", text)

    def test_tool_preview_and_show(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A finished tool is a numbered line with its first output lines; /show N prints all of it."""
        provider.reset()
        command = "for n in 1 2 3 4 5; do echo row$n; done"
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "call_p", "name": "terminal", "arguments": {"command": command}}]},
                {"text": "Printed."},
            )
            terminal.type("print lines\r")
            text = terminal.wait_for(lambda t: "Printed." in t and is_idle(t), what="the tool and the answer")
            # The whole screen in the message: pytest's own report elides the middle of a long string.
            screen = f"the screen was:\n{text}"
            assert re.search(r"\[1\] .*terminal for n in 1 2 3 4 5; do echo row\$n; done .*✓ exit 0", text), screen
            assert "row3" in text and "row4" not in text, screen
            assert "/show 1" in text, screen
            terminal.type("/show 1\r")
            terminal.wait_for(lambda t: "row5" in t, what="the full output")

    def test_subagent_lines(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A subagent's start, tools and end are shown labelled with its name."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "d1", "name": "delegate_task", "arguments": {"tasks": [{"goal": "count files"}]}}]},
                {"tool_calls": [{"id": "c1", "name": "terminal", "arguments": {"command": "echo from-the-child"}}]},
                {"text": "child done"},
                {"text": "The subagent reported."},
            )
            terminal.type("delegate it\r")
            text = terminal.wait_for(lambda t: "The subagent reported." in t and is_idle(t), what="the parent's answer")
            assert re.search(r"↳ subagent:\S+ started: count files", text)
            assert re.search(r"\[subagent:\S+\]\[\d+\] .*terminal", text)
            assert re.search(r"↳ subagent:\S+ completed", text)


class TestHistory:
    """Attaching to a stored session shows its conversation first."""

    def test_history_on_attach(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The last stored messages are shown before live events; --history 0 shows none."""
        provider.reset()
        session_id = stored_session(shared_daemon, provider)
        with PtyTerminal(shared_daemon.home, "attach", session_id) as terminal:
            text = terminal.wait_for(lambda t: "attached to" in t, what="the attach banner")
            before = text.split("attached to", 1)[0]
            assert f"> {NO_TOOLS}" in before
            assert "You asked for no tools" in before
        with PtyTerminal(shared_daemon.home, "attach", session_id, "--history", "0") as bare:
            text = bare.wait_for(lambda t: "attached to" in t, what="the attach banner")
            assert NO_TOOLS not in text


