"""The learning loop as a user meets it: a chat whose turn the daemon reviews, the attach client's line,
and ``hermes-actors memory`` afterwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.daemon.helpers import REPO, DaemonProcess, LineReader, ScriptedProviderProcess, environment, run_cli

CONFIG = "memory:\n  nudge_interval: 1\nauxiliary:\n  model: aux-model\n"


class TestChatLearns:
    """A due turn of a chat is reviewed by the auxiliary model while the user stays in the chat."""

    def test_the_review_line_and_the_memory_command(self, home: Path, provider: ScriptedProviderProcess) -> None:
        """The attach client prints the 💾 line; `memory` then shows the entry and why it was kept."""
        home.mkdir(parents=True)
        (home / "config.yaml").write_text(CONFIG)
        daemon = DaemonProcess(home).start()
        try:
            provider.reset()
            save = {"action": "add", "target": "user", "content": "Indents Python with tabs"}
            provider.push(
                {"text": "Tabs it is."},
                {"tool_calls": [{"id": "m1", "name": "memory", "arguments": save}],
                 "text": "A lasting style preference the user asked me to keep."},
                {"text": "Kept it."},
            )
            chat = subprocess.Popen(
                [sys.executable, "-m", "cli", "chat", *provider.chat_flags()], env=environment(home), cwd=REPO,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )
            lines = LineReader(chat.stdout)
            assert chat.stdin is not None and chat.stdout is not None
            try:
                chat.stdin.write("I indent with tabs, remember that\n")
                chat.stdin.flush()
                seen = lines.until(lambda line: "memory updated by review" in line)
                assert any("Tabs it is." in line for line in seen)
                assert seen[-1].strip() == "💾 memory updated by review: user profile added"
                chat.stdin.close()
                assert chat.wait(30) == 0
                lines.drain()
            finally:
                if chat.poll() is None:
                    chat.kill()
                    chat.wait(10)
                chat.stdout.close()
            shown = run_cli(home, "memory").stdout
            assert "  - Indents Python with tabs" in shown
            assert "(why: A lasting style preference the user asked me to keep.)" in shown
            models = [r["body"]["model"] for r in provider.requests()[-3:]]
            assert models == ["scripted-model", "aux-model", "aux-model"]
        finally:
            daemon.stop()
