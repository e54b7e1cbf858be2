"""Tool lines in the attached client: what a tool did, shown as it is."""

from __future__ import annotations

import re

from tests.client.test_screen import is_idle, open_chat
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli


class TestVerbatim:
    """A tool's arguments and output are shown character for character."""

    def test_emoji_codes_stay_text(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`root:x:0:0` in a command and its output is not turned into `root❌0:0`, live or with /show."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "e1", "name": "terminal", "arguments": {"command": "echo root:x:0:0 :smile:"}}]},
                {"text": "Echoed."},
            )
            terminal.type("echo it\r")
            terminal.wait_for(lambda t: "Echoed." in t and is_idle(t), what="the tool and the answer")
            terminal.type("/show 1\r")
            text = terminal.wait_for(lambda t: t.count("root:x:0:0 :smile:") >= 4, what="/show's output")
            assert "❌" not in text and "😄" not in text, text


class TestToolLine:
    """A tool's line says what it runs, its arguments read as words; /show is offered only for what was cut."""

    def test_arguments_beyond_the_command(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`terminal` with a timeout reads `echo hi  timeout=60`, not the arguments' JSON."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "a1", "name": "terminal", "arguments": {"command": "echo hi", "timeout": 60}}]},
                {"text": "Done."},
            )
            terminal.type("go\r")
            text = terminal.wait_for(lambda t: "Done." in t and is_idle(t), what="the tool and the answer")
            assert re.search(r"\[1\] .*terminal echo hi  timeout=60 .*✓ exit 0", text), text
            assert '{"command"' not in text, text

    def test_show_offered_only_when_cut(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """No `… /show N` under a tool with no output or all of it shown; one under a tool with more lines."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "s1", "name": "terminal", "arguments": {"command": "true"}}]},
                {"tool_calls": [{"id": "s2", "name": "terminal", "arguments": {"command": "echo one-line"}}]},
                {"tool_calls": [{"id": "s3", "name": "terminal", "arguments": {"command": "seq 1 9"}}]},
                {"text": "Three done."},
            )
            terminal.type("go\r")
            text = terminal.wait_for(lambda t: "Three done." in t and is_idle(t), what="the tools and the answer")
            assert "/show 1" not in text and "/show 2" not in text, text
            assert "… /show 3 for the whole output" in text, text

    def test_no_show_in_one_shot(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`chat -q` has no /show, so it never offers it."""
        provider.reset()
        provider.push(
            {"tool_calls": [{"id": "q1", "name": "terminal", "arguments": {"command": "seq 1 9"}}]},
            {"text": "Counted."},
        )
        result = run_cli(shared_daemon.home, "chat", "-q", "count", *provider.chat_flags(), timeout=60)
        assert result.returncode == 0, result.stderr
        assert "seq 1 9" in result.stderr and "/show" not in result.stderr, result.stderr


SCRIPT = "from hermes_tools import terminal\nprint(terminal('echo from-inside')['output'].strip())\n"


class TestScriptCalls:
    """The tool calls an execute_code script makes are tool lines of their own, labelled with it."""

    def test_inner_call_shown(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """The script's `terminal` call is a line `[execute_code][N] … terminal echo from-inside`; the script's
        own line reads by its first line."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(
                {"tool_calls": [{"id": "x1", "name": "execute_code", "arguments": {"code": SCRIPT}}]},
                {"text": "Scripted."},
            )
            terminal.type("script it\r")
            text = terminal.wait_for(lambda t: "Scripted." in t and is_idle(t), what="the script and the answer")
            assert re.search(r"\[execute_code\]\[1\] .*terminal echo from-inside .*✓ exit 0", text), text
            assert re.search(r"\[2\] .*execute_code from hermes_tools import terminal …", text), text
