"""The Matrix bot in a real daemon, against the fake homeserver on loopback: an invite joined and a
stranger paired, history from before the start not answered and a restart not replaying, HTML answers,
an approval answered in the room by its owner only (a reply, or a reaction), a long answer split, a 429
waited out and a lost answer not doubled, a failed and a dropped sync resumed, a cron delivery to a room
id and an alias, and bad input and a refused token survived."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details
from tests.daemon.telegram_daemon import wait
from tests.platform.matrix_fake import BOT, TOKEN, FakeMatrix

OWNER, COLLEAGUE, STRANGER = "@owner:fake.test", "@colleague:fake.test", "@stranger:fake.test"
DM, ROOM, STRANGER_DM = "!dm:fake.test", "!team:fake.test", "!strangerdm:fake.test"


def _start(home: Path, provider: ScriptedProviderProcess, fake: FakeMatrix, *, token: str = TOKEN, **matrix: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    section = {"enabled": True, "allow_from": [OWNER, COLLEAGUE], "sync_timeout_seconds": 5, "retry_first_seconds": 0.05, **matrix}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"matrix": section},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"MATRIX_HOMESERVER": fake.homeserver, "MATRIX_ACCESS_TOKEN": token}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "matrix")


def _connected(home: Path) -> None:
    wait(lambda: _details(home).get("connection") == "connected", "the bot to connect")


def _user_texts(provider: ScriptedProviderProcess) -> list[str]:
    return [r["body"]["messages"][-1]["content"] for r in provider.requests() if r["body"]["messages"][-1]["role"] == "user"]


def _questions(fake: FakeMatrix) -> list[str]:
    """The event ids of the approvals the bot asked (not their edits)."""
    return [e["event_id"] for _, e in fake.sent_events() if e["content"].get("body", "").startswith("⚠️ Approval needed")]


def _pairing(home: Path, *args: str) -> dict[str, Any]:
    result = run_cli(home, "pairing", *args, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


class TestConversations:
    """An invite to a DM is joined and its stranger pairs; history is not answered, nor replayed after a
    restart; an answer is HTML beside its Markdown; a room needs a mention; status shows the bot."""

    def test_pairing_mentions_and_a_restart(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        provider.reset()
        matrix.add_room(DM, 2)
        matrix.add_room(ROOM, 5)
        matrix.push_message(DM, OWNER, "an old message, from before the bot started")
        daemon = _start(home, provider, matrix, allow_from=[OWNER], dm_policy="pairing")
        try:
            _connected(home)
            matrix.push_invite(STRANGER_DM, STRANGER, direct=True)
            matrix.wait_until(lambda: STRANGER_DM in matrix.joins, "the DM invite joined")
            matrix.push_message(STRANGER_DM, STRANGER, "let me in")
            [code_text] = matrix.wait_for_texts(STRANGER_DM, 1)
            [waiting] = _pairing(home, "list")["pending"]
            assert waiting["user_id"] == STRANGER and waiting["code"] in code_text
            _pairing(home, "approve", waiting["code"])
            assert "approved your pairing code" in matrix.wait_for_texts(STRANGER_DM, 2)[1]
            provider.push({"text": "Hello **there**, see [the docs](https://example.com/a?b=1) & <more>."},
                          {"text": "In the room."})
            asked = matrix.push_message(STRANGER_DM, STRANGER, "hi bot")
            matrix.wait_for_texts(STRANGER_DM, 3)
            answer = matrix.messages_to(STRANGER_DM)[2]
            assert answer["body"] == "Hello **there**, see [the docs](https://example.com/a?b=1) & <more>."
            assert answer["format"] == "org.matrix.custom.html"
            assert answer["formatted_body"] == 'Hello <b>there</b>, see <a href="https://example.com/a?b=1">the docs</a> &amp; &lt;more&gt;.'
            assert "Matrix" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            matrix.push_message(ROOM, OWNER, "talking among ourselves")
            matrix.push_message(ROOM, OWNER, f"{BOT}: what do you think?", **{"m.mentions": {"user_ids": [BOT]}})
            assert matrix.wait_for_texts(ROOM, 1) == ["In the room."]
            assert _user_texts(provider) == ["hi bot", "what do you think?"]  # not the old one, nor the unaddressed one
            matrix.wait_until(lambda: (asked, "✅") in matrix.reactions() and matrix.redactions, "the answered mark")
            assert matrix.reactions().index((asked, "👀")) < matrix.reactions().index((asked, "✅"))
            details = _details(home)
            assert details["ignored"] == 1 and details["refused"] == 1 and details["rooms_joined"] == 1, details
            [status] = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            assert status["name"] == "matrix" and status["connection"] == "connected" and status["chats"] >= 2, status
            assert json.loads(matrix.syncs[-1]["filter"])["room"]["timeline"]["types"] == ["m.room.message", "m.reaction"]
        finally:
            daemon.stop()
        assert TOKEN not in daemon.log()
        matrix.push_message(DM, OWNER, "sent while the bot was away")
        provider.push({"text": "Back again."})
        daemon = _start(home, provider, matrix, allow_from=[OWNER], dm_policy="pairing")
        try:
            assert matrix.wait_for_texts(DM, 1) == ["Back again."]
            assert _user_texts(provider)[2:] == ["sent while the bot was away"]  # the rest was not replayed
            assert "since" in matrix.syncs[-1]
        finally:
            daemon.stop()

    def test_an_invite_from_a_stranger_to_a_room_is_declined(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        daemon = _start(home, provider, matrix)
        try:
            _connected(home)
            matrix.push_invite("!spam:fake.test", STRANGER, direct=False)
            matrix.push_invite("!work:fake.test", COLLEAGUE, direct=False)
            matrix.wait_until(lambda: matrix.leaves and matrix.joins, "both invites answered")
            assert matrix.leaves == ["!spam:fake.test"] and matrix.joins == ["!work:fake.test"]
            assert _details(home)["invites_declined"] == 1
        finally:
            daemon.stop()


class TestApprovals:
    """An approval lists its choices; a colleague's answer is refused, the owner's reply or reaction
    answers it."""

    def test_an_approval_answered_in_the_room(
        self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix, tmp_path: Path
    ) -> None:
        provider.reset()
        matrix.add_room(ROOM, 5)
        daemon = _start(home, provider, matrix, sandbox="full-access", require_mention=False)
        first, second = tmp_path / "first", tmp_path / "second"
        first.mkdir()
        second.mkdir()
        try:
            _connected(home)
            provider.push(
                {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {first}"}}]},
                {"text": "Removed the first."},
                {"tool_calls": [{"id": "rm2", "name": "terminal", "arguments": {"command": f"rm -r {second}"}}]},
                {"text": "Kept the second."},
            )
            matrix.push_message(ROOM, OWNER, "remove the first directory")
            matrix.wait_until(lambda: any("Approval needed" in t for t in matrix.texts_to(ROOM)), "the approval")
            question = next(t for t in matrix.texts_to(ROOM) if "Approval needed" in t)
            assert "1. Allow once" in question and "4. Deny" in question and "react 👍 / 👎" in question
            matrix.push_message(ROOM, COLLEAGUE, "approve")  # allowed to talk, but not the conversation's owner
            matrix.wait_until(lambda: any("Only the user who started" in t for t in matrix.texts_to(ROOM)), "the refusal")
            assert first.exists()
            matrix.push_message(ROOM, OWNER, "approve")
            matrix.wait_until(lambda: "Removed the first." in matrix.texts_to(ROOM), "the first turn's answer")
            assert not first.exists()
            asked = _questions(matrix)[0]
            matrix.wait_until(lambda: any("→ once" in body for body in matrix.edits_of(asked)), "the question marked answered")
            matrix.push_message(ROOM, OWNER, "and the second")
            matrix.wait_until(lambda: sum("Approval needed" in t for t in matrix.texts_to(ROOM)) == 2, "the second approval")
            matrix.push_reaction(ROOM, OWNER, _questions(matrix)[1], "👎")
            matrix.wait_until(lambda: "Kept the second." in matrix.texts_to(ROOM), "the second turn's answer")
            assert second.exists()
            assert _details(home)["answers_refused"] == 1
            assert _user_texts(provider) == ["remove the first directory", "and the second"]  # answers never reached the model
        finally:
            daemon.stop()


class TestQuestionsAndProgress:
    """A question's choices are answered by their words or a keycap reaction, an open one by the next
    message; a turn's tools are one progress message, edited with m.replace as they run."""

    def test_clarify_and_progress_edits(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        provider.reset()
        matrix.add_room(DM, 2)
        daemon = _start(home, provider, matrix, reactions=False)
        try:
            _connected(home)
            provider.push(
                {"tool_calls": [{"id": "ask1", "name": "clarify", "arguments": {"question": "Which colour?", "choices": ["red", "dark green"]}}]},
                {"tool_calls": [{"id": "ask2", "name": "clarify", "arguments": {"question": "Which size?", "choices": ["small", "large"]}}]},
                {"tool_calls": [{"id": "ask3", "name": "clarify", "arguments": {"question": "And the shade?"}}]},
                {"tool_calls": [{"id": "t1", "name": "terminal", "arguments": {"command": "echo one"}},
                                {"id": "t2", "name": "terminal", "arguments": {"command": "echo two"}}]},
                {"text": "Dark green, large, deep."},
            )
            matrix.push_message(DM, OWNER, "paint it")
            matrix.wait_until(lambda: any(t.startswith("❓ Which colour?") for t in matrix.texts_to(DM)), "the first question")
            assert "1. red\n2. dark green" in next(t for t in matrix.texts_to(DM) if t.startswith("❓ Which colour?"))
            matrix.push_message(DM, OWNER, "Dark green")
            matrix.wait_until(lambda: any(t.startswith("❓ Which size?") for t in matrix.texts_to(DM)), "the second question")
            size = next(e["event_id"] for _, e in matrix.sent_events() if e["content"].get("body", "").startswith("❓ Which size?"))
            matrix.push_reaction(DM, OWNER, size, "2\ufe0f\u20e3")
            matrix.wait_until(lambda: any(t.startswith("❓ And the shade?") for t in matrix.texts_to(DM)), "the open question")
            matrix.push_message(DM, OWNER, "deep")
            matrix.wait_until(lambda: "Dark green, large, deep." in matrix.texts_to(DM), "the answer")
            results = [m["content"] for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
            assert "dark green" in results[0] and "large" in results[1] and "deep" in results[2]
            progress = next(e["event_id"] for _, e in matrix.sent_events() if e["content"].get("body", "").startswith("❓ clarify:"))
            matrix.wait_until(lambda: any("echo two" in body for body in matrix.edits_of(progress)), "the progress edited")
            assert _user_texts(provider) == ["paint it"]
        finally:
            daemon.stop()


class TestLimits:
    """A long answer is split at max_message_length; a 429 is waited out as retry_after_ms says; a send
    whose answer was lost is tried again under its transaction id and not doubled."""

    def test_a_long_answer_split_after_a_429_and_a_lost_answer(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        provider.reset()
        matrix.add_room(DM, 2)
        daemon = _start(home, provider, matrix, tool_progress=False, reactions=False, max_message_length=4000)
        try:
            _connected(home)
            matrix.fail_next_send(429, {"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 300})
            matrix.lose_next_answer()
            provider.push({"text": "\n\n".join(f"Paragraph {i}: " + "words " * 100 for i in range(20))})
            matrix.push_message(DM, OWNER, "write a lot")
            matrix.wait_until(lambda: any("Paragraph 19" in t for t in matrix.texts_to(DM)), "the whole answer")
            pieces = matrix.texts_to(DM)
            assert len(pieces) == 4 and all(len(piece) <= 4000 for piece in pieces), [len(p) for p in pieces]
            assert pieces[0].startswith("Paragraph 0:") and all(p.startswith("Paragraph ") for p in pieces)
            assert matrix.rate_limited == 1 and matrix.duplicate_txns == 1
            details = _details(home)
            assert details["rate_limited"] == 1 and details["rate_limited_seconds"] >= 0.25, details
        finally:
            daemon.stop()


class TestConnection:
    """A failed and a dropped sync are tried again from the same token, losing nothing; bad events and a
    refused token leave the daemon serving."""

    def test_sync_errors_are_resumed(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        provider.reset()
        matrix.add_room(DM, 2)
        daemon = _start(home, provider, matrix)
        try:
            _connected(home)
            matrix.wait_until(lambda: len(matrix.syncs) >= 2, "the first long poll")  # the first sync has no token
            start = len(matrix.syncs) - 1
            since = matrix.syncs[start]["since"]
            # Two 5xx the client tries again, then three dropped connections: the shared transport makes the
            # GET again twice, then the request fails and the sync loop backs off.
            for status in (502, 502, 0, 0, 0):
                matrix.fail_next_sync(status)
            matrix.wait_until(lambda: not matrix.sync_failures, "the failures served")
            provider.push({"text": "Still here."})
            matrix.push_message(DM, OWNER, "are you there?")
            assert matrix.wait_for_texts(DM, 1) == ["Still here."]
            assert _user_texts(provider) == ["are you there?"]
            assert [query["since"] for query in matrix.syncs[start:start + 6]] == [since] * 6  # resumed from the same token
            details = _details(home)
            assert details["sync_errors"] == 1 and details["retried"] >= 2 and details["connection"] == "connected", details
        finally:
            daemon.stop()

    def test_bad_input_is_skipped(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        provider.reset()
        matrix.add_room(DM, 2)
        daemon = _start(home, provider, matrix)
        try:
            _connected(home)
            matrix.push_raw(DM, "not an event")
            matrix.push_raw(DM, {"type": "m.room.message", "content": {"body": "no id"}})
            matrix.push_event(DM, {"type": "m.room.message", "sender": OWNER, "content": {"msgtype": "m.text", "body": 3}})
            matrix.push_event(DM, {"type": "m.reaction", "sender": OWNER, "content": {"m.relates_to": "none"}})
            matrix.push_event(DM, {"type": "m.room.message", "sender": OWNER, "content": {"msgtype": "m.image", "body": "x.png"}})
            matrix.push_message(DM, STRANGER, "who are you?")  # an unknown user: refused, logged
            provider.push({"text": "Still fine."})
            matrix.push_message(DM, OWNER, "hello")
            assert matrix.wait_for_texts(DM, 1) == ["Still fine."]
            details = _details(home)
            assert details["connection"] == "connected" and details["malformed"] == 5 and details["refused"] == 1, details
            assert "skipped an event" in daemon.log() and "refused a message from user @stranger:fake.test" in daemon.log()
        finally:
            daemon.stop()

    def test_a_refused_token_is_a_failed_state(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        daemon = _start(home, provider, matrix, token="syt_wrong-token")
        try:
            wait(lambda: _details(home).get("connection") == "failed", "the bot to report the refused token")
            assert "M_UNKNOWN_TOKEN" in str(_details(home)["connection_error"])
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()
        assert "syt_wrong-token" not in daemon.log()

    def test_a_token_revoked_while_syncing(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        daemon = _start(home, provider, matrix)
        try:
            _connected(home)
            matrix.revoke()
            matrix.push_message(DM, OWNER, "wake the sync")
            wait(lambda: _details(home).get("connection") == "failed", "the revoked token noticed")
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()


class TestDelivery:
    """A cron job delivers to a room by id and by alias; a room written wrong is refused when the job is
    made; files go both ways (a user's fetched through the authenticated media API, a reply's uploaded)."""

    def test_files_both_ways(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix, tmp_path: Path) -> None:
        provider.reset()
        matrix.add_room(DM, 2)
        workspace = tmp_path / "work"
        workspace.mkdir()
        (workspace / "report.txt").write_bytes(b"the report's bytes")
        matrix.media["fake.test/data"] = b"a,b\n1,2\n"
        daemon = _start(home, provider, matrix, cwd=str(workspace))
        try:
            _connected(home)
            provider.push({"text": f"Here it is.\nMEDIA:{workspace}/report.txt"})
            matrix.push_event(DM, {"type": "m.room.message", "sender": OWNER, "content": {
                "msgtype": "m.file", "body": "data.csv", "url": "mxc://fake.test/data", "info": {"mimetype": "text/csv", "size": 8}}})
            matrix.wait_until(lambda: any(m["msgtype"] == "m.file" for m in matrix.messages_to(DM)), "the reply's file")
            [sent] = [m for m in matrix.messages_to(DM) if m["msgtype"] == "m.file"]
            assert sent["body"] == "report.txt" and matrix.media[sent["url"].removeprefix("mxc://")] == b"the report's bytes"
            assert matrix.texts_to(DM)[0] == "Here it is."
            [text] = _user_texts(provider)
            [saved] = (workspace / "incoming").iterdir()
            assert saved.name.endswith("-data.csv") and saved.read_bytes() == b"a,b\n1,2\n" and str(saved) in text
        finally:
            daemon.stop()

    def test_cron_delivers_to_a_room(self, home: Path, provider: ScriptedProviderProcess, matrix: FakeMatrix) -> None:
        provider.reset()
        matrix.aliases["#ops:fake.test"] = ROOM
        daemon = _start(home, provider, matrix)
        try:
            _connected(home)
            provider.push({"text": "The nightly digest."}, {"text": "The alias digest."})
            for name, target in (("nightly", f"matrix:{DM}"), ("alias", "matrix:#ops:fake.test")):
                job = json.loads(run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.",
                                         "--name", name, "--deliver", target, "--json").stdout)["jobs"][0]
                assert run_cli(home, "cron", "run-now", job["id"]).returncode == 0
            assert matrix.wait_for_texts(DM, 1) == ["Cron job 'nightly':\n\nThe nightly digest."]
            assert matrix.wait_for_texts(ROOM, 1) == ["Cron job 'alias':\n\nThe alias digest."]
            refused = run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "x", "--deliver", "matrix:room")
            assert refused.returncode != 0 and "matrix" in refused.stderr
        finally:
            daemon.stop()
