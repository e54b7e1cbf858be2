"""Each approval policy end to end: a real daemon, the scripted model running a command, ``chat -q`` with and without a terminal."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from messages import control as c
from tests.client.pty_terminal import PtyTerminal
from tests.approvals.helpers import script_command, tool_result
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli

# A dangerous pattern (a command string run by a new shell) that is harmless when it runs.
COMMAND = "bash -c 'echo $((6*7))'"
RAN = '"output": "42'

StartDaemon = Callable[..., DaemonProcess]


def _one_shot(daemon: DaemonProcess, provider: ScriptedProviderProcess, *extra: str) -> tuple[int, str, float]:
    """``chat -q`` without a terminal: exit status, stderr, seconds taken."""
    started = time.monotonic()
    result = run_cli(daemon.home, "chat", "-q", "run the command", *provider.chat_flags(), *extra, timeout=90)
    return result.returncode, result.stderr, time.monotonic() - started


class TestWithoutTerminal:
    """``chat -q`` in a pipe: nobody to ask, so manual denies at once with a hint; the other policies decide alone."""

    def test_manual_denies_at_once_naming_the_ways_out(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon()
        script_command(provider, COMMAND)
        status, stderr, seconds = _one_shot(daemon, provider)
        assert 0 == status, stderr
        assert seconds < 30  # never the 60 s approval deadline
        assert "--yolo" in stderr and "approvals.mode" in stderr
        told = tool_result(provider)
        assert "Command not run" in told and RAN not in told
        assert "denied by hermes-actors chat (pid " in told and "nobody could be asked (chat -q without a terminal)" in told

    def test_off_runs_without_asking(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon("approvals:\n  mode: off\n")  # a bare off, as people write it
        script_command(provider, COMMAND)
        status, stderr, _ = _one_shot(daemon, provider)
        assert 0 == status, stderr
        assert "approval" not in stderr
        assert RAN in tool_result(provider)

    def test_yolo_runs_and_hardline_is_still_refused(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon()
        script_command(provider, COMMAND)
        status, stderr, _ = _one_shot(daemon, provider, "--yolo")
        assert 0 == status, stderr
        assert RAN in tool_result(provider)
        script_command(provider, "dd if=/dev/zero of=/dev/sdz count=0", call_id="call_hard")
        status, stderr, _ = _one_shot(daemon, provider, "--yolo")
        assert 0 == status, stderr
        assert "hardline blocklist" in tool_result(provider, "call_hard")

    @pytest.mark.parametrize(
        ("rating", "ran", "denied_by"),
        [
            ("LOW", True, None),
            ("DANGEROUS", False, "the auxiliary model rated it dangerous"),
            ("UNCERTAIN", False, "nobody could be asked"),
        ],
    )
    def test_smart_asks_the_auxiliary_model(
        self, start_daemon: StartDaemon, provider: ScriptedProviderProcess, rating: str, ran: bool, denied_by: str | None
    ) -> None:
        provider.reset()
        daemon = start_daemon("approvals:\n  mode: smart\n")
        script_command(provider, COMMAND, {"text": rating})
        status, stderr, _ = _one_shot(daemon, provider)
        assert 0 == status, stderr
        told = tool_result(provider)
        assert ran == (RAN in told), told
        if denied_by is not None:
            assert denied_by in told
        # Only an uncertain rating reaches the user (here: nobody, so the hint).
        assert (rating == "UNCERTAIN") == ("--yolo" in stderr)
        rated = [r for r in provider.requests() if "Rate the command" in str(r.get("body"))]
        assert 1 == len(rated) and COMMAND in str(rated[0]["body"])

    @pytest.mark.parametrize(("cron_mode", "ran"), [("deny", False), ("approve", True)])
    def test_cron_sessions_follow_cron_mode(
        self, start_daemon: StartDaemon, provider: ScriptedProviderProcess, cron_mode: str, ran: bool
    ) -> None:
        provider.reset()
        daemon = start_daemon(f"approvals:\n  cron_mode: {cron_mode}\n")
        script_command(provider, COMMAND)
        flags = dict(zip(("model", "provider", "base_url", "api_mode"), provider.chat_flags()[1::2]))
        with daemon.client() as client:
            created = client.request(c.CreateSession(client.next_id(), cwd=str(daemon.home.parent), source="cron", **flags))
            client.request(c.Attach(client.next_id(), created.session_id, None))
            client.request(c.SendMessage(client.next_id(), created.session_id, "nightly job"))
            client.settimeout(60)
            while type(event := client.receive()).__name__ != "TurnFinished":
                assert type(event).__name__ != "ApprovalRequested"
        told = tool_result(provider)
        assert ran == (RAN in told), told
        if not ran:
            assert "approvals.cron_mode: deny" in told


class TestOnTerminal:
    """``chat -q`` in a terminal asks there; ``always`` is saved in config.yaml and honoured after a restart."""

    def test_once_typed_at_the_prompt(self, start_daemon: StartDaemon, provider: ScriptedProviderProcess) -> None:
        provider.reset()
        daemon = start_daemon()
        script_command(provider, COMMAND)
        client = PtyTerminal(daemon.home, "chat", "-q", "run the command", *provider.chat_flags(), columns=140, lines=45)
        try:
            screen = client.wait_for(lambda text: "approve? [once/session/always/deny]" in text)
            assert COMMAND in screen
            client.type("maybe\r")  # not an answer: asked again
            client.wait_for(lambda text: text.count("approve? [") == 2)
            client.type("once\r")
            assert 0 == client.wait_exit()
            assert "finished" in client.text()
        finally:
            client.close()
        assert RAN in tool_result(provider)

    def test_always_survives_a_daemon_restart(
        self, start_daemon: StartDaemon, provider: ScriptedProviderProcess, home: Path
    ) -> None:
        provider.reset()
        daemon = start_daemon("# mine\nmodel:\n  default: scripted-model\n")
        script_command(provider, COMMAND)
        client = PtyTerminal(daemon.home, "chat", "-q", "run the command", *provider.chat_flags(), columns=140, lines=45)
        try:
            client.wait_for(lambda text: "approve? [" in text)
            client.type("a\r")
            assert 0 == client.wait_exit()
        finally:
            client.close()
        assert RAN in tool_result(provider)
        saved = (home / "config.yaml").read_text()
        assert saved.startswith("# mine\nmodel:\n  default: scripted-model\n")
        assert ["shell_command_string"] == yaml.safe_load(saved)["approvals"]["allow"]
        daemon.stop()
        restarted = start_daemon()
        script_command(provider, "bash -c 'echo $((6*7))' # again", call_id="call_again")
        status, stderr, _ = _one_shot(restarted, provider)
        assert 0 == status, stderr
        assert "approval" not in stderr
        assert RAN in tool_result(provider, "call_again")
