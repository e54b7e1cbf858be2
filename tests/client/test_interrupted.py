"""An interrupted turn as the attached client shows it: its footer counts what streamed, its subagents end visibly."""

from __future__ import annotations

import json
import re

from tests.client.test_new_session import footers
from tests.client.test_screen import TOKENS, is_idle, open_chat
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli, wait_for


class TestInterruptedFooter:
    """The tokens an interrupted reply streamed are counted."""

    def test_footer_counts_streamed_tokens(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Ctrl-C mid-stream: the footer's in and out are not 0 (the provider answered that much)."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push({"text": " ".join(TOKENS), "chunk_delay": 0.05})
            terminal.type("a long one\r")
            terminal.wait_for(lambda t: "tok40" in t, what="the stream")
            terminal.type("\x03")
            text = terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t) and footers(t), what="the footer")
            (footer,) = footers(text)
            tokens_in, tokens_out = (int(n) for n in re.match(r"(\d+) in · (\d+) out", footer).groups())  # type: ignore[union-attr]  # no match fails the test on this line, which is the check
            assert tokens_in > 0 and tokens_out >= 40, text


DELEGATE = {"tool_calls": [{"id": "d1", "name": "delegate_task", "arguments": {"tasks": [{"goal": "wait a while"}]}}]}
CHILD_SLEEPS = {"tool_calls": [{"id": "c1", "name": "terminal", "arguments": {"command": "sleep 30"}}]}


def _subagent_path(daemon: DaemonProcess) -> str:
    """The path of the one live subagent, once it runs its tool."""
    def probe() -> str:
        rows = json.loads(run_cli(daemon.home, "ps", "--json").stdout)["sessions"]
        return next((row["path"] for row in rows if row["kind"] == "subagent" and row["tools"]), "")
    return str(wait_for("the subagent's tool", probe))


class TestSubagentEnds:
    """A subagent stopped before its turn ended still gets its `↳ subagent:N interrupted` line."""

    def test_parent_interrupted(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """Ctrl-C while a subagent works: its end is shown, then the parent's."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(DELEGATE, CHILD_SLEEPS, {"text": "never"}, {"text": "never either"})
            terminal.type("delegate it\r")
            terminal.wait_for(lambda t: re.search(r"↳ subagent:\S+ started", t) is not None, what="the subagent's start")
            _subagent_path(shared_daemon)
            terminal.type("\x03")
            text = terminal.wait_for(lambda t: "[turn interrupted" in t and is_idle(t), what="the interruption")
            assert re.search(r"↳ subagent:\S+ interrupted", text), text

    def test_subagent_killed(self, shared_daemon: DaemonProcess, provider: ScriptedProviderProcess) -> None:
        """`hermes-actors kill` of the subagent: its end is shown, and the parent's turn goes on."""
        provider.reset()
        with open_chat(shared_daemon, provider) as terminal:
            provider.push(DELEGATE, CHILD_SLEEPS, {"text": "the parent carries on"})
            terminal.type("delegate it\r")
            path = _subagent_path(shared_daemon)
            assert run_cli(shared_daemon.home, "kill", path).returncode == 0
            text = terminal.wait_for(lambda t: "the parent carries on" in t and is_idle(t), what="the parent's answer")
            assert re.search(r"↳ subagent:\S+ interrupted", text), text
