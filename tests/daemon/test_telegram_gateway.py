"""The gateway's behaviour through the Telegram bot, in a real daemon against the fake Bot API: DM
pairing, groups that answer only when addressed, /stop during a tool, an approval by button, a photo
received, files attached to a reply, and a background process's notification delivered."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.helpers import ScriptedProviderProcess, run_cli
from tests.daemon.jailed import processes_with
from tests.daemon.telegram_daemon import CHAT, OWNER, STRANGER, start_bot, wait
from tests.platform.telegram_fake import TOKEN, FakeTelegram

STRANGER_CHAT = 777


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The working directory of the bot's sessions."""
    path = tmp_path / "work"
    path.mkdir()
    return path


def _pairing(home: Path, *args: str) -> dict[str, Any]:
    result = run_cli(home, "pairing", *args, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def _user_texts(provider: ScriptedProviderProcess) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in provider.requests() if r["body"]["messages"][-1]["role"] == "user"]


def _chat_user_texts(provider: ScriptedProviderProcess) -> list[str]:
    """The user messages the model was sent (transcription requests left out)."""
    chats = [r for r in provider.requests() if r["path"] == "/v1/chat/completions"]
    return [r["body"]["messages"][-1]["content"] for r in chats if r["body"]["messages"][-1]["role"] == "user"]


def _script_a_removal(provider: ScriptedProviderProcess, tmp_path: Path) -> Path:
    """A directory, and a model that removes it with a command that asks for approval, then says so."""
    target = tmp_path / "victim"
    target.mkdir()
    provider.push(
        {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
        {"text": "Removed it."},
    )
    return target


class TestWhoMayTalk:
    """Strangers get a pairing code, never the model; groups answer only when addressed."""

    def test_pairing_approve_and_revoke(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, dm_policy="pairing")
        try:
            telegram.push(STRANGER_CHAT, STRANGER, "hello?")
            first = telegram.wait_for_texts(STRANGER_CHAT, 1)[0]
            listed = _pairing(home, "list")
            [waiting] = listed["pending"]
            assert waiting["user_id"] == str(STRANGER) and waiting["code"] in first and "pairing approve" in first
            telegram.push(STRANGER_CHAT, STRANGER, "hello again?")
            assert waiting["code"] in telegram.wait_for_texts(STRANGER_CHAT, 2)[1]  # the same code, not a new one
            assert provider.requests() == []  # the model never saw the stranger
            assert run_cli(home, "pairing", "approve", "NOT-A-CODE").returncode != 0
            approved = _pairing(home, "approve", waiting["code"].lower())  # codes read case-insensitively
            assert approved["pending"] == [] and [u["user_id"] for u in approved["paired"]] == [str(STRANGER)]
            assert "approved your pairing code" in telegram.wait_for_texts(STRANGER_CHAT, 3)[2]
            provider.push({"text": "Nice to meet you."})
            telegram.push(STRANGER_CHAT, STRANGER, "now?")
            assert telegram.wait_for_texts(STRANGER_CHAT, 4)[3] == "Nice to meet you."
            assert _user_texts(provider) == ["now?"]
        finally:
            daemon.stop()
        # The book outlives the daemon; a revoked user is a stranger again.
        daemon = start_bot(home, provider, telegram, dm_policy="pairing")
        try:
            assert [u["user_id"] for u in _pairing(home, "list")["paired"]] == [str(STRANGER)]
            assert _pairing(home, "revoke", "telegram", str(STRANGER))["paired"] == []
            telegram.push(STRANGER_CHAT, STRANGER, "still there?")
            assert "pairing code" in telegram.wait_for_texts(STRANGER_CHAT, 5)[4]
            assert _user_texts(provider) == ["now?"]
        finally:
            daemon.stop()
        assert oct((home / "state" / "pairing.json").stat().st_mode & 0o777) == "0o600"

    def test_groups_answer_when_addressed(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, require_mention=True)
        group = -100123
        try:
            telegram.push(group, OWNER, "chatting among ourselves", group=True)
            telegram.push(group, STRANGER, "@hermes_test_bot let me in", group=True)  # not answered at all, as in Hermes
            provider.push({"text": "Here I am."}, {"text": "Replying to your reply."})
            telegram.push(group, OWNER, "@hermes_test_bot are you there?", group=True)
            assert telegram.wait_for_texts(group, 1) == ["Here I am."]
            telegram.push(group, OWNER, "and this?", group=True, reply_to_message={"message_id": 1, "from": {"id": 42, "is_bot": True}})
            assert telegram.wait_for_texts(group, 2)[1] == "Replying to your reply."
            assert _user_texts(provider) == ["are you there?", "and this?"]  # the mention removed, the chatter unseen
            details = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)["details"]
            assert details["ignored"] == 1 and details["refused"] == 1, details
        finally:
            daemon.stop()


class TestHermesAccessKeys:
    """Hermes's allow_from, group lists, dm_policy and require_mention decide who is answered, and where."""

    def test_allow_lists_from_hermes_keys_and_variables(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        member, group, open_group = 3003, -100123, -100777
        daemon = start_bot(
            home, provider, telegram, allow_from=None,
            config={"telegram": {"allow_from": f"{OWNER}", "group_allow_from": [member], "require_mention": True}},
            env={"TELEGRAM_GROUP_ALLOWED_CHATS": str(open_group)},
        )
        try:
            telegram.push(STRANGER_CHAT, STRANGER, "let me in")  # an allow list is set: ignored, no code
            telegram.push(member, member, "hi in private")  # group_allow_from lets in groups only
            telegram.push(group, OWNER, "chatter among ourselves", group=True)  # not addressed
            telegram.push(group, STRANGER, "@hermes_test_bot me too", group=True)
            provider.push({"text": "Hello owner."}, {"text": "Hello member."}, {"text": "Hello everyone."})
            telegram.push(CHAT, OWNER, "hello")
            assert telegram.wait_for_texts(CHAT, 1) == ["Hello owner."]
            telegram.push(group, member, "@hermes_test_bot hi from the group", group=True)
            assert telegram.wait_for_texts(group, 1) == ["Hello member."]
            telegram.push(open_group, STRANGER, "@hermes_test_bot hi from the open group", group=True)
            assert telegram.wait_for_texts(open_group, 1) == ["Hello everyone."]
            assert _user_texts(provider) == ["hello", "hi from the group", "hi from the open group"]
            details = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)["details"]
            assert details["refused"] == 3 and details["ignored"] == 1, details
            assert telegram.texts_to(STRANGER_CHAT) == [] and telegram.texts_to(member) == []
        finally:
            daemon.stop()

    def test_dm_policy_disabled_and_groups_unmentioned(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        group = -100123
        daemon = start_bot(home, provider, telegram, allow_from=None, dm_policy="disabled", env={"TELEGRAM_ALLOWED_USERS": str(OWNER)})
        try:
            telegram.push(CHAT, OWNER, "a direct message")  # no direct message is answered
            provider.push({"text": "Heard you."})
            telegram.push(group, OWNER, "no mention needed", group=True)  # Telegram's require_mention is off by default
            assert telegram.wait_for_texts(group, 1) == ["Heard you."]
            assert _user_texts(provider) == ["no mention needed"] and telegram.texts_to(CHAT) == []
        finally:
            daemon.stop()


class TestWhileBusy:
    """Commands act at once while a turn runs; approvals are buttons."""

    def test_stop_during_a_tool(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram)
        marker = "sleep 417"
        try:
            provider.push({"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": marker, "timeout": 300}}]})
            telegram.push(CHAT, OWNER, "take your time")
            telegram.wait_until(lambda: any(marker in text for text in telegram.texts_to_locked(CHAT)), "the progress message")
            wait(lambda: processes_with(marker) != [], "the command to start")
            telegram.wait_until(lambda: "sendChatAction" in telegram.calls, "the typing indicator of a long turn")
            telegram.push(CHAT, OWNER, "/stop")
            telegram.wait_until(lambda: "Stopping." in telegram.texts_to_locked(CHAT), "the /stop answer")
            wait(lambda: processes_with(marker) == [], "the command to be killed")
            status = json.loads(run_cli(home, "sessions", "list", "--json").stdout)["sessions"]
            assert len(status) == 1
            wait(lambda: json.loads(run_cli(home, "status", "--json").stdout)["running_turns"] == 0, "the turn to end")
            telegram.push(CHAT, OWNER, "/stop")
            telegram.wait_until(lambda: "Nothing is running." in telegram.texts_to_locked(CHAT), "the second /stop")
        finally:
            daemon.stop()

    def test_a_new_message_interrupts_the_turn(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        """busy_input_mode interrupt (the default): a message mid-turn stops the turn, silently, and is
        answered next."""
        provider.reset()
        daemon = start_bot(home, provider, telegram, tool_progress=False)
        marker = "sleep 418"
        try:
            provider.push(
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": marker, "timeout": 300}}]},
                {"text": "Hi instead."},
            )
            telegram.push(CHAT, OWNER, "do the long thing")
            wait(lambda: processes_with(marker) != [], "the command to start")
            telegram.push(CHAT, OWNER, "never mind, just say hi")
            assert telegram.wait_for_texts(CHAT, 1) == ["Hi instead."]
            wait(lambda: processes_with(marker) == [], "the command to be killed")
            assert _user_texts(provider)[-1] == "never mind, just say hi"
            assert telegram.texts_to(CHAT) == ["Hi instead."]  # nothing said of the interrupted turn
        finally:
            daemon.stop()

    def test_an_approval_answered_by_button(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, tmp_path: Path
    ) -> None:
        provider.reset()
        # full-access: the target lies outside the session's writable roots, which a jail would protect.
        daemon = start_bot(home, provider, telegram, sandbox="full-access")
        target = _script_a_removal(provider, tmp_path)
        try:
            telegram.push(CHAT, OWNER, "remove that directory")
            telegram.wait_until(lambda: telegram.sent_with_buttons(CHAT) != [], "the approval's buttons")
            [asked] = telegram.sent_with_buttons(CHAT)
            assert str(target) in asked["text"]
            buttons = {b["text"]: b["callback_data"] for [b] in asked["reply_markup"]["inline_keyboard"]}
            assert list(buttons) == ["Allow once", "Allow for this session", "Always allow", "Deny"]
            telegram.press(CHAT, STRANGER, buttons["Allow once"])  # not theirs to answer
            telegram.wait_until(lambda: len(telegram.answered) == 1, "the stranger's press answered")
            assert telegram.answered[0]["text"] == "You may not answer this." and target.exists()
            telegram.press(CHAT, OWNER, buttons["Allow once"])
            telegram.wait_until(lambda: "Removed it." in telegram.texts_to_locked(CHAT), "the turn's answer")
            assert not target.exists()
            assert telegram.answered[1]["text"] == "Allow once"
            assert any("→ once" in edit["text"] for edit in telegram.edits)  # the buttons replaced by the answer
        finally:
            daemon.stop()


class TestOwnership:
    """In a group, only the user who started a conversation answers its approvals: a colleague's button
    press and ``/approve`` are refused, and who owns which conversation survives in the state file."""

    def test_a_colleague_may_talk_but_not_approve(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, tmp_path: Path
    ) -> None:
        provider.reset()
        group, member = -100123, 3003
        # full-access: the target lies outside the session's writable roots, which a jail would protect.
        daemon = start_bot(home, provider, telegram, sandbox="full-access", group_allow_from=[member])
        target = _script_a_removal(provider, tmp_path)
        try:
            telegram.push(group, OWNER, "remove that directory", group=True)
            telegram.wait_until(lambda: telegram.sent_with_buttons(group) != [], "the approval's buttons")
            [asked] = telegram.sent_with_buttons(group)
            buttons = {b["text"]: b["callback_data"] for [b] in asked["reply_markup"]["inline_keyboard"]}
            telegram.press(group, member, buttons["Allow once"])
            telegram.wait_until(lambda: len(telegram.answered) == 1, "the colleague's press answered")
            assert telegram.answered[0]["text"] == "Only the user who started this conversation may answer this."
            telegram.push(group, member, "/approve", group=True)
            telegram.wait_until(lambda: any("Only the user who started" in t for t in telegram.texts_to_locked(group)), "the refusal")
            assert target.exists()
            telegram.press(group, OWNER, buttons["Allow once"])
            telegram.wait_until(lambda: "Removed it." in telegram.texts_to_locked(group), "the turn's answer")
            assert not target.exists()
            details = json.loads(run_cli(home, "inspect", "platform/telegram", "--json").stdout)["details"]
            assert details["answers_refused"] == 2, details
        finally:
            daemon.stop()
        owners = json.loads((home / "state" / "telegram-owners.json").read_text())
        assert owners == {str(group): str(OWNER)}


class TestFiles:
    """Files in and out, and a background process's notification."""

    def test_a_photo_is_fetched_into_the_workspace(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, workspace: Path
    ) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, cwd=str(workspace))
        try:
            provider.push({"text": "A fine photo."})
            telegram.push_photo(CHAT, OWNER, b"\xff\xd8\xff fake jpeg bytes", caption="what is this?")
            assert telegram.wait_for_texts(CHAT, 1) == ["A fine photo."]
            [said] = _user_texts(provider)  # scripted-model is no vision model: the path alone
            assert said.startswith("what is this?\n[The user sent an image, saved at ")
            [saved] = (workspace / "incoming").iterdir()
            assert str(saved) in said and saved.read_bytes() == b"\xff\xd8\xff fake jpeg bytes"
        finally:
            daemon.stop()
        assert TOKEN not in daemon.log()  # a file's address holds the token

    def test_a_photo_is_shown_to_a_vision_model(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, workspace: Path
    ) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, cwd=str(workspace), config={"model": {
            "default": "scripted-model", "provider": "custom", "base_url": provider.base_url, "vision": True,
        }})
        try:
            provider.push({"text": "A cat, I think."})
            telegram.push_photo(CHAT, OWNER, b"\xff\xd8\xff fake jpeg bytes", caption="what is this?")
            assert telegram.wait_for_texts(CHAT, 1) == ["A cat, I think."]
            content = provider.requests()[-1]["body"]["messages"][-1]["content"]
            text, image = content
            assert text["type"] == "text" and text["text"].startswith("what is this?\n[The user sent an image, saved at ")
            encoded = base64.b64encode(b"\xff\xd8\xff fake jpeg bytes").decode()
            assert image == {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{encoded}"}}
        finally:
            daemon.stop()

    def test_media_tags_attach_what_the_session_may_read(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, workspace: Path
    ) -> None:
        provider.reset()
        (workspace / "chart.png").write_bytes(b"\x89PNG chart")
        (workspace / "notes.txt").write_text("the notes")
        daemon = start_bot(home, provider, telegram, cwd=str(workspace))
        try:
            secret = home / "config.yaml"  # the daemon's own home: hidden from every session
            provider.push({"text": f"Here you are.\nMEDIA:{workspace}/chart.png\nMEDIA:{workspace}/notes.txt\nMEDIA:{secret}"})
            telegram.push(CHAT, OWNER, "send me the chart")
            telegram.wait_until(lambda: len(telegram.uploads) == 2 and len(telegram.texts_to_locked(CHAT)) == 2, "the files")
            assert telegram.texts_to(CHAT)[0] == "Here you are."
            assert f"(Not attached: {secret}" in telegram.texts_to(CHAT)[1]
            photo, document = telegram.uploads
            assert photo["method"] == "sendPhoto" and photo["photo"]["content"] == b"\x89PNG chart"
            assert document["method"] == "sendDocument" and document["document"]["content"] == b"the notes"
        finally:
            daemon.stop()

    def test_a_background_notification_reaches_the_chat(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram
    ) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, tool_progress=False)
        try:
            command = {"command": "sleep 1; echo build finished", "background": True, "notify_on_complete": True}
            provider.push(
                {"tool_calls": [{"id": "b1", "name": "terminal", "arguments": command}]},
                {"text": "Started the build."},
                {"text": "The build finished."},
            )
            telegram.push(CHAT, OWNER, "build it in the background")
            assert telegram.wait_for_texts(CHAT, 1) == ["Started the build."]
            started = time.monotonic()
            assert telegram.wait_for_texts(CHAT, 2)[1] == "The build finished."
            assert time.monotonic() - started < 30
            notified = provider.requests()[-1]["body"]["messages"][-1]["content"]
            assert "build finished" in notified, notified
        finally:
            daemon.stop()


OPTED_IN = {"tools": {"enabled_toolsets": ["hermes-cli", "messaging"]}}
"""send_message is offered only to those who name its toolset, as Hermes offers it to no one."""


class TestVoiceNotes:
    """A voice note is transcribed at the configured OpenAI-compatible endpoint and the model reads the
    words (the user sees what was heard); without an endpoint, or when it fails, the model gets the file
    with a note saying so."""

    def test_transcribed_echoed_and_failing(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, workspace: Path
    ) -> None:
        provider.reset()
        stt = {"provider": "openai", "openai": {"model": "whisper-1", "base_url": provider.base_url, "api_key": "sk-voice-secret"}}
        daemon = start_bot(home, provider, telegram, cwd=str(workspace), config={"stt": stt})
        try:
            provider.push({"text": "Here are the files."}, {"text": "Sorry, I could not hear that."})
            telegram.push_voice(CHAT, OWNER, b"please list the files")  # the scripted provider hears the bytes as words
            assert telegram.wait_for_texts(CHAT, 2) == ['🎙️ "please list the files"', "Here are the files."]
            heard = [r for r in provider.requests() if r["path"] == "/v1/audio/transcriptions"]
            assert len(heard) == 1 and heard[0]["headers"]["authorization"] == "Bearer sk-voice-secret"
            assert _chat_user_texts(provider) == ['"please list the files"']
            telegram.push_voice(CHAT, OWNER, b"\xff\xfe not speech")
            assert telegram.wait_for_texts(CHAT, 3)[2] == "Sorry, I could not hear that."
            said = _chat_user_texts(provider)[1]
            assert "could not be transcribed" in said and str(workspace / "incoming") in said
        finally:
            daemon.stop()
        log = daemon.log()
        assert "a voice message was not transcribed: openai answered HTTP 400" in log
        assert "sk-voice-secret" not in log

    def test_without_an_endpoint_the_file_and_a_note(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, workspace: Path
    ) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, cwd=str(workspace), config={"stt": {"provider": "groq"}})
        try:
            provider.push({"text": "I see a recording."})
            telegram.push_voice(CHAT, OWNER, b"hello there")
            assert telegram.wait_for_texts(CHAT, 1) == ["I see a recording."]
            [said] = _chat_user_texts(provider)
            assert said.startswith("[The user sent a voice message, saved at ") and "No speech-to-text is configured" in said
            [saved] = (workspace / "incoming").iterdir()
            assert saved.read_bytes() == b"hello there"
        finally:
            daemon.stop()
        assert "voice notes: no speech-to-text key is set (GROQ_API_KEY)" in daemon.log()


class TestSendMessage:
    """The model's send_message reaches another chat, with what its policy lets it attach; asks first
    when configured; is not offered unless opted in."""

    def test_not_offered_by_default(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, tool_progress=False)
        try:
            provider.push({"text": "hello"})
            telegram.push(CHAT, OWNER, "hi")
            assert telegram.wait_for_texts(CHAT, 1) == ["hello"]
            offered = {t["function"]["name"] for t in provider.requests()[-1]["body"]["tools"]}
            assert "send_message" not in offered and "cronjob" in offered
        finally:
            daemon.stop()

    def test_a_message_to_another_chat(
        self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram, workspace: Path
    ) -> None:
        provider.reset()
        (workspace / "report.txt").write_text("the report")
        daemon = start_bot(home, provider, telegram, config=OPTED_IN, cwd=str(workspace), tool_progress=False)
        other = 888
        try:
            send = {"target": f"telegram:{other}", "message": f"The report is ready.\nMEDIA:{workspace}/report.txt"}
            leak = {"target": f"telegram:{other}", "message": f"Here.\nMEDIA:{home}/config.yaml"}
            provider.push(
                {"tool_calls": [{"id": "s1", "name": "send_message", "arguments": send}]},
                {"tool_calls": [{"id": "s2", "name": "send_message", "arguments": leak}]},
                {"text": "Sent it."},
            )
            telegram.push(CHAT, OWNER, "send the report to the team chat")
            assert telegram.wait_for_texts(CHAT, 1) == ["Sent it."]
            assert telegram.texts_to(other) == ["The report is ready."]  # the second send was refused whole
            [upload] = telegram.uploads
            assert upload["chat_id"] == str(other) and upload["document"]["content"] == b"the report"
            results = [m for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
            assert '"ok": true' in results[0]["content"] and "cannot be attached" in results[1]["content"]
        finally:
            daemon.stop()

    def test_approval_when_configured(self, home: Path, provider: ScriptedProviderProcess, telegram: FakeTelegram) -> None:
        provider.reset()
        daemon = start_bot(home, provider, telegram, config={**OPTED_IN, "approvals": {"send_message": True}}, tool_progress=False)
        try:
            provider.push(
                {"tool_calls": [{"id": "s1", "name": "send_message", "arguments": {"target": "telegram:888", "message": "psst"}}]},
                {"text": "It was not sent."},
            )
            telegram.push(CHAT, OWNER, "tell the team")
            telegram.wait_until(lambda: telegram.sent_with_buttons(CHAT) != [], "the approval's buttons")
            [asked] = telegram.sent_with_buttons(CHAT)
            assert "telegram:888: psst" in asked["text"]
            deny = next(b["callback_data"] for [b] in asked["reply_markup"]["inline_keyboard"] if b["text"] == "Deny")
            telegram.press(CHAT, OWNER, deny)
            telegram.wait_until(lambda: "It was not sent." in telegram.texts_to_locked(CHAT), "the turn's answer")
            assert telegram.texts_to(888) == []
            denied = [m for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "tool"][0]["content"]
            assert "Not sent: sending was denied" in denied
        finally:
            daemon.stop()
