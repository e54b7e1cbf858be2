"""``/rollback`` in the attached client on a terminal: the list, a diff, a restore and its undo hint, on screen."""

from __future__ import annotations

from tests.client.pty_terminal import PtyTerminal
from tests.client.test_screen import is_idle
from tests.daemon.helpers import ScriptedProviderProcess
from tests.daemon.checkpoint_helpers import ENABLED, checkpoint_daemon, session_with_edits


class TestRollbackOnTerminal:
    """/rollback typed at the prompt shows the checkpoints and restores one."""

    def test_list_and_restore(self, provider: ScriptedProviderProcess) -> None:
        """/rollback lists two checkpoints; /rollback 2 restores the older and says how to undo it."""
        with checkpoint_daemon(ENABLED) as (daemon, work):
            session_id = session_with_edits(daemon, provider, work)
            with PtyTerminal(daemon.home, "attach", session_id, "--history", "0", columns=120, lines=40) as terminal:
                terminal.wait_for(lambda text: "attached to" in text and is_idle(text), what="the attach banner")
                terminal.type("/rollback\r")
                text = terminal.wait_for(lambda t: "Restore one with: /rollback N" in t, what="the list")
                assert "1 is the newest" in text and text.count("before write_file") == 2, text
                terminal.type("/rollback 2\r")
                text = terminal.wait_for(lambda t: "Undo with: /rollback 1" in t, what="the restore")
                assert "original\n" == (work / "a.txt").read_text()
                assert not (work / "new.txt").exists()
