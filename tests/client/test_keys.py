"""The interactive client's keys and commands, and every way out of it, in a real pty."""

from __future__ import annotations

import re
import termios
from pathlib import Path

import pytest

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_screen import TOKENS, is_idle, open_chat, session_of, stored_session
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli


def _cooked(terminal: PtyTerminal) -> bool:
    """The terminal echoes and reads whole lines again (as a shell needs it)."""
    local_modes = terminal.modes()[3]
    assert isinstance(local_modes, int)
    return bool(local_modes & termios.ECHO) and bool(local_modes & termios.ICANON)


def _start_long_turn(terminal: PtyTerminal, provider: ScriptedProviderProcess) -> None:
    """Send a message whose answer streams for 20 s; return once its first tokens are on screen."""
    provider.push({"text": " ".join(TOKENS), "chunk_delay": 0.05})
    terminal.type("a long one\r")
    terminal.wait_for(lambda t: "tok5 " in t, what="the stream")


class TestLeaving:
    """Every way out restores the terminal's modes and says why the client ended."""

    def test_daemon_stopped(self, daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`hermes-actors stop` while attached: exit 1, echo and canonical mode back, the reason on screen."""
        provider.reset()
        with open_chat(daemon, provider) as terminal:
            assert not _cooked(terminal)  # the prompt has the terminal in raw mode
            assert run_cli(daemon.home, "stop").returncode == 0
            assert terminal.wait_exit() == 1
            assert _cooked(terminal)
            text = terminal.text()
            assert "[the daemon stopped (the connection closed)]" in text
            assert "· /help" not in text.splitlines()[-1]  # the toolbar is gone

    def test_ctrl_d_detaches_and_says_how_to_come_back(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Ctrl-D after a message: exit 0, the session goes on (stored), and the line to re-attach is printed."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            session_id = session_of(terminal)
            terminal.type("worth keeping, no tools\r")
            terminal.wait_for(lambda t: "plain answer to: worth" in t and is_idle(t), what="the answer")
            terminal.type("\x04")
            assert terminal.wait_exit() == 0
            assert _cooked(terminal)
            assert f"hermes-actors attach {session_id}" in terminal.text()
        assert run_cli(shared_daemon.home, "sessions", "show", session_id).returncode == 0

    def test_ctrl_c_twice_at_idle_prompt(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """One Ctrl-C at an idle prompt only says how to leave; a second one leaves."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            terminal.type("\x03")
            terminal.wait_for(lambda t: "Ctrl-C again to leave" in t, what="the hint")
            assert terminal.process.poll() is None
            terminal.type("\x03")
            assert terminal.wait_exit() == 0
            assert _cooked(terminal)

    def test_session_killed(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`hermes-actors kill` of the attached session ends the client with exit 1 and the reason."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            session_id = session_of(terminal)
            assert run_cli(shared_daemon.home, "kill", session_id).returncode == 0
            assert terminal.wait_exit() == 1
            assert _cooked(terminal)
            assert "the session ended" in terminal.text()


class TestCtrlC:
    """Ctrl-C during a turn interrupts it, whether text streams or a tool runs."""

    def test_during_a_stream(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The stream stops, the turn ends interrupted, and the client stays attached."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            _start_long_turn(terminal, provider)
            terminal.type("\x03")
            text = terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t), what="the interruption")
            assert "tok399" not in text
            assert terminal.process.poll() is None

    def test_during_a_tool(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A running tool shows its command and elapsed time in the toolbar; Ctrl-C stops it and the turn."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "call_s", "name": "terminal", "arguments": {"command": "sleep 30"}}]},
                {"text": "should not get here"},
            )
            terminal.type("sleep a while\r")
            terminal.wait_for(lambda t: re.search(r"terminal sleep 30 \d+s · Ctrl-C interrupts", t.splitlines()[-1]) is not None,
                              what="the running tool in the toolbar")
            terminal.type("\x03")
            text = terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t), what="the interruption")
            assert "should not get here" not in text


class TestCommands:
    """Slash commands answer: help, suggestions, acknowledgements, approvals."""

    def test_unknown_command_suggests(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """A mistyped command is an error naming the closest one; /help lists them all."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            terminal.type("/usgae\r")
            terminal.wait_for(lambda t: "unknown command /usgae; did you mean /usage?" in t, what="the suggestion")
            terminal.type("/help\r")
            terminal.wait_for(lambda t: "/reset-tools" in t and "Ctrl-R" in t, what="the help")
            terminal.type("/usage\r")
            terminal.wait_for(lambda t: "no usage reported yet" in t, what="the usage")

    def test_steer_is_acknowledged(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """/steer during a turn shows the daemon's answer to that request."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            _start_long_turn(terminal, provider)
            terminal.type("/steer be brief\r")
            # The acknowledgement's own line: the command's echo may have scrolled off the screen by then,
            # as the answer streams on (a loaded machine acknowledges later).
            terminal.wait_for(lambda t: re.search(r"^steer", t, re.M) is not None, what="the acknowledgement")
            terminal.type("\x03")
            terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t), what="the interruption")

    def test_approval_answered_at_the_prompt(
        self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess, tmp_path: Path
    ) -> None:
        """A command needing approval is shown; typing `once` at the `answer>` prompt runs it."""
        provider.reset()
        target = tmp_path / "victim"
        target.mkdir()
        with PtyTerminal(shared_daemon.home, "chat", *provider.chat_flags(), "--sandbox", "full-access") as terminal:
            terminal.wait_for(lambda t: "attached to" in t and is_idle(t), what="the prompt")
            provider.push(
                {"tool_calls": [{"id": "call_rm", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                {"text": "All done after the approval."},
            )
            terminal.type("remove that directory\r")
            terminal.wait_for(lambda t: "approval needed" in t and "answer>" in t, what="the approval")
            terminal.type("once\r")
            terminal.wait_for(lambda t: "All done after the approval." in t and is_idle(t), what="the end of the turn")
            assert not target.exists()



def _user_texts(provider: ScriptedProviderProcess) -> list[str]:
    """The content of every user message the model was sent so far."""
    bodies = [request.get("body") or {} for request in provider.requests()]
    return [str(m.get("content")) for body in bodies for m in body.get("messages", []) if m.get("role") == "user"]


def _next_message_after_the_interruption(terminal: PtyTerminal) -> None:
    """Once the turn is interrupted, send a message and wait for its answer: any turn started in between came first."""
    terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t), what="the interruption")
    terminal.type("and now this, no tools\r")
    terminal.wait_for(lambda t: "plain answer to: and now" in t and is_idle(t), what="the next turn")


class TestSteerThenInterrupt:
    """A steer still pending when its turn is interrupted is dropped: it never starts a turn of its own."""

    def test_steer_then_stop(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`/steer …` then `/stop`: the next turn is the next message typed, not the steer."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            _start_long_turn(terminal, provider)
            terminal.type("/steer answer in one word\r")
            terminal.wait_for(lambda t: re.search(r"^steer", t, re.M) is not None, what="the acknowledgement")
            terminal.type("/stop\r")
            _next_message_after_the_interruption(terminal)
        assert "answer in one word" not in _user_texts(provider)

    def test_cli_steer_then_interrupt(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`hermes-actors steer S TEXT` then `interrupt S`: the steer's text never reaches the model."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            session_id = session_of(terminal)
            _start_long_turn(terminal, provider)
            assert run_cli(shared_daemon.home, "steer", session_id, "keep it to one line").returncode == 0
            assert run_cli(shared_daemon.home, "interrupt", session_id).returncode == 0
            _next_message_after_the_interruption(terminal)
        assert "keep it to one line" not in _user_texts(provider)


class TestNothingSaid:
    """`chat` left without a message keeps no session; `sessions delete` asks first on a terminal."""

    def test_chat_left_at_once_is_not_stored(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Ctrl-D before any message: exit 0, says the session is not kept, and it is not stored."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            session_id = session_of(terminal)
            terminal.type("\x04")
            assert terminal.wait_exit() == 0
            assert "nothing was said, so the session is not kept" in terminal.text()
            assert f"hermes-actors attach {session_id}" not in terminal.text()
        assert run_cli(shared_daemon.home, "sessions", "show", session_id).returncode == 2

    @pytest.mark.parametrize(("answer", "status", "stored"), [("n", 1, True), ("y", 0, False)])
    def test_sessions_delete_asks(
        self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess, answer: str, status: int, stored: bool
    ) -> None:
        """On a terminal `sessions delete` names the session and asks; only `y` deletes."""
        session_id = stored_session(shared_daemon, provider)
        with PtyTerminal(shared_daemon.home, "sessions", "delete", session_id) as terminal:
            terminal.wait_for(lambda t: f"Delete session {session_id} (hello, no tools please, " in t and "[y/N]" in t,
                              what="the question")
            terminal.type(f"{answer}\r")
            assert terminal.wait_exit() == status
        assert (run_cli(shared_daemon.home, "sessions", "show", session_id).returncode == 0) == stored


class TestAsTheReadmeSays:
    """What /help, /compress, `steer` and `interrupt` do is what the README says they do."""

    def test_help_says_what_reset_tools_does(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """/help describes /reset-tools as the README does: it rebuilds the frozen tool list."""
        provider.reset()
        with open_chat(shared_daemon, provider, columns=140, lines=40) as terminal:
            terminal.type("/help\r")
            text = terminal.wait_for(lambda t: "/yolo" in t, what="the help")
        assert re.search(r"/reset-tools +rebuild the session's frozen tool list", text), text

    def test_compress_on_a_short_history_answers_once(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """/compress after one exchange: one answer, saying how much is kept and that it needs more conversation."""
        provider.reset()
        with open_chat(shared_daemon, provider, columns=200, lines=40) as terminal:
            terminal.type("hello, no tools\r")
            terminal.wait_for(lambda t: "plain answer to: hello" in t and is_idle(t), what="the answer")
            terminal.type("/compress\r")
            text = terminal.wait_for(lambda t: "it needs more conversation between them" in t and is_idle(t), what="the reply")
        assert text.count("nothing to compress") == 1, text
        assert "nothing compressed" not in text, text

    def test_steer_and_interrupt_by_title(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`steer TITLE TEXT` and `interrupt TITLE` reach the titled session, as `attach TITLE` does."""
        provider.reset()
        title = f"titled-{id(self)}"
        with PtyTerminal(shared_daemon.home, "chat", *provider.chat_flags(), "--title", title) as terminal:
            terminal.wait_for(lambda t: "attached to" in t and is_idle(t), what="the attach banner")
            _start_long_turn(terminal, provider)
            steered = run_cli(shared_daemon.home, "steer", title, "a word from outside")
            assert steered.returncode == 0, steered.stderr
            interrupted = run_cli(shared_daemon.home, "interrupt", title)
            assert interrupted.returncode == 0, interrupted.stderr
            terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t), what="the interruption")
