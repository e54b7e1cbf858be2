"""The WhatsApp bot in a real daemon, against a fake Graph API, with signed webhook events posted at the
daemon's real HTTP port as Meta posts them: the verify-token handshake, pairing, an approval answered by
a list row, a long answer split at 4,096 characters after a rate limit waited out, an event Meta delivers
twice taken once and a send made again after a network failure, the 24-hour window named and a template
sent instead, a cron delivery, files both ways, and bad input and a revoked token survived."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli
from tests.daemon.platform_helpers import bot_details, pairing, user_texts, wait_connected
from tests.daemon.telegram_daemon import wait
from tests.platform.whatsapp_fake import (
    APP_SECRET, PHONE_ID, TOKEN, VERIFY_TOKEN, FakeGraph, event, new_wamid, post_event, pressed, text,
)

OWNER, STRANGER, OTHER, HOME = "15551230001", "15551230002", "15551230003", "15551230004"
API_KEY = "whatsapp-test-api-key-0123456789"


def _start(home: Path, provider: ScriptedProviderProcess, graph: FakeGraph, *, token: str = TOKEN, **section: Any) -> DaemonProcess:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    config = {"enabled": True, "phone_number_id": PHONE_ID, "graph_url": graph.url, "allow_from": [OWNER],
              "retry_first_seconds": 0.05, **section}
    (home / "config.yaml").write_text(json.dumps({
        "model": {"default": "scripted-model", "provider": "custom", "base_url": provider.base_url},
        "platforms": {"api_server": {"enabled": True, "port": 0, "key": API_KEY}, "whatsapp_cloud": config},
    }))
    daemon = DaemonProcess(home)
    daemon.extra_env = {"WHATSAPP_CLOUD_ACCESS_TOKEN": token, "WHATSAPP_CLOUD_APP_SECRET": APP_SECRET,
                        "WHATSAPP_CLOUD_VERIFY_TOKEN": VERIFY_TOKEN}
    return daemon.start()


def _details(home: Path) -> dict[str, Any]:
    return bot_details(home, "whatsapp")


def _api_url(home: Path) -> str:
    wait(lambda: bot_details(home, "api").get("urls"), "the API server to listen")
    return str(bot_details(home, "api")["urls"][0])


def _cron_job(home: Path, name: str, destination: str) -> str:
    """A daily job delivering to ``destination``; its id."""
    added = run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "Digest.", "--name", name, "--deliver", destination, "--json")
    return str(json.loads(added.stdout)["jobs"][0]["id"])


def _ready(home: Path) -> str:
    wait_connected(home, "whatsapp")
    return _api_url(home)


class TestWebhook:
    """Meta's handshake is answered with the challenge only for the verify token; events need the app
    secret's signature of the exact bytes; what is refused says why in the log, never crashing anything."""

    def test_handshake_and_signatures(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        provider.reset()
        daemon = _start(home, provider, graph)
        try:
            url = _ready(home)
            hook = f"{url}/whatsapp/webhook"
            ok = httpx2.get(hook, params={"hub.mode": "subscribe", "hub.verify_token": VERIFY_TOKEN, "hub.challenge": "1158201444"})
            assert (ok.status_code, ok.text) == (200, "1158201444")
            wrong = httpx2.get(hook, params={"hub.mode": "subscribe", "hub.verify_token": "guess", "hub.challenge": "1"})
            assert wrong.status_code == 403 and "1" != wrong.text
            provider.push({"text": "Only once."})
            body = json.dumps(event(text(OWNER, "hello"))).encode()
            assert post_event(url, None, raw=body, signed="sha256=" + "0" * 64).status_code == 401
            assert post_event(url, None, raw=body, signed="").status_code == 401
            assert post_event(url, None, raw=body, secret="not-the-app-secret").status_code == 401
            assert post_event(url, None, raw=b"[1, 2]").status_code == 400  # signed, but not an event
            assert post_event(url, None, raw=b"{not json").status_code == 400
            assert post_event(url, None, raw=body).status_code == 200
            assert graph.wait_for_texts(OWNER, 1) == ["Only once."]
            details = _details(home)
            assert details["bad_signatures"] == 3 and details["malformed"] == 2 and details["events"] == 1, details
            assert details["verified"] == 1
            log = daemon.log()
            assert "does not match the body" in log and "no X-Hub-Signature-256 header" in log and "wrong verify token" in log
        finally:
            daemon.stop()
        for secret in (TOKEN, APP_SECRET, VERIFY_TOKEN):
            assert secret not in daemon.log()


class TestConversations:
    """A stranger pairs; the owner's messages are answered in WhatsApp's marks and read receipts; status shows the bot."""

    def test_pairing_and_an_answer(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        provider.reset()
        daemon = _start(home, provider, graph, dm_policy="pairing")
        try:
            url = _ready(home)
            post_event(url, event(text(STRANGER, "let me in")))
            [code_text] = graph.wait_for_texts(STRANGER, 1)
            [waiting] = pairing(home, "list")["pending"]
            assert waiting["user_id"] == STRANGER and waiting["code"] in code_text
            pairing(home, "approve", waiting["code"])
            assert "approved your pairing code" in graph.wait_for_texts(STRANGER, 2)[1]
            provider.push({"text": "Hello **there**, see [the docs](https://example.com/a).\n\n# Next\n- one\n- two"})
            post_event(url, event(text(STRANGER, "hi bot")))
            answer = graph.wait_for_texts(STRANGER, 3)[2]
            assert answer == "Hello *there*, see the docs (https://example.com/a).\n\n*Next*\n• one\n• two"
            assert "WhatsApp" in provider.requests()[-1]["body"]["messages"][0]["content"]  # the platform hint
            assert user_texts(provider) == ["hi bot"]
            statuses = json.loads(run_cli(home, "status", "--json").stdout)["platforms"]
            [status] = [s for s in statuses if s["name"] == "whatsapp"]
            assert status["connection"] == "connected" and status["chats"] >= 1, status
        finally:
            daemon.stop()


class TestApprovals:
    """An approval's four choices go as a list (rows of at most 24 characters); the owner's press answers
    it through the desk; a question of two choices goes as reply buttons, answered by its number too."""

    def test_an_approval_answered_by_a_list_row(
        self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph, tmp_path: Path
    ) -> None:
        provider.reset()
        daemon = _start(home, provider, graph, sandbox="full-access")
        target = tmp_path / "victim"  # a directory of the test's own: the command removes nothing else
        target.mkdir()
        try:
            url = _ready(home)
            provider.push(
                {"tool_calls": [{"id": "rm1", "name": "terminal", "arguments": {"command": f"rm -r {target}"}}]},
                {"text": "Removed it."},
            )
            post_event(url, event(text(OWNER, "remove that directory")))
            graph.wait_until(lambda: any(m["type"] == "interactive" for m in graph.messages_to(OWNER)), "the approval")
            [asked] = [m for m in graph.messages_to(OWNER) if m["type"] == "interactive"]
            interactive = asked["interactive"]
            rows = interactive["action"]["sections"][0]["rows"]
            assert interactive["type"] == "list" and "Approval needed" in interactive["body"]["text"]
            assert [r["title"] for r in rows] == ["Allow once", "Allow for this session", "Always allow", "Deny"]
            assert all(len(r["title"]) <= 24 for r in rows) and len(interactive["action"]["button"]) <= 20
            assert target.exists()
            post_event(url, event(pressed(OWNER, rows[0]["id"], rows[0]["title"], row=True)))
            graph.wait_until(lambda: "Removed it." in graph.texts_to(OWNER), "the turn's answer")
            assert not target.exists()
            assert "Allow once" in graph.texts_to(OWNER)  # the press acknowledged
            assert user_texts(provider) == ["remove that directory"]  # the press answered, not asked
        finally:
            daemon.stop()

    def test_a_question_with_buttons(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        provider.reset()
        daemon = _start(home, provider, graph)
        try:
            url = _ready(home)
            provider.push(
                {"tool_calls": [{"id": "ask1", "name": "clarify", "arguments": {"question": "Which colour?", "choices": ["red", "a very long shade of green"]}}]},
                {"tool_calls": [{"id": "ask2", "name": "clarify", "arguments": {"question": "Warm or cold?", "choices": ["warm", "cold"]}}]},
                {"text": "Green, cold."},
            )
            post_event(url, event(text(OWNER, "paint it")))
            graph.wait_until(lambda: any(m["type"] == "interactive" for m in graph.messages_to(OWNER)), "the question")
            [asked] = [m["interactive"] for m in graph.messages_to(OWNER) if m["type"] == "interactive"]
            buttons = asked["action"]["buttons"]
            assert asked["type"] == "button" and [b["reply"]["title"] for b in buttons] == ["red", "a very long shade o…"]
            post_event(url, event(pressed(OWNER, buttons[1]["reply"]["id"], buttons[1]["reply"]["title"])))
            graph.wait_until(lambda: sum(m["type"] == "interactive" for m in graph.messages_to(OWNER)) == 2, "the second question")
            post_event(url, event(text(OWNER, "2")))  # answered by its number
            graph.wait_until(lambda: "Green, cold." in graph.texts_to(OWNER), "the answer")
            results = [m["content"] for m in provider.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
            assert "a very long shade of green" in results[0] and "cold" in results[1]
            assert user_texts(provider) == ["paint it"]
        finally:
            daemon.stop()


class TestLimits:
    """A long answer is split at 4,096 characters; a rate limit (code 130429) is waited out."""

    def test_a_long_answer_split_after_a_rate_limit(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        provider.reset()
        daemon = _start(home, provider, graph)
        try:
            url = _ready(home)
            graph.fail_next_send(130429)
            provider.push({"text": "\n\n".join(f"Paragraph {i}: " + "words " * 100 for i in range(20))})
            post_event(url, event(text(OWNER, "write a lot")))
            graph.wait_until(lambda: any("Paragraph 19" in t for t in graph.texts_to(OWNER)), "the whole answer")
            pieces = graph.texts_to(OWNER)
            assert len(pieces) == 4 and all(len(piece) <= 4096 for piece in pieces)
            assert pieces[0].startswith("Paragraph 0:") and "".join(pieces).count("Paragraph") == 20
            details = _details(home)
            assert details["rate_limited"] == 1 and details["rate_limited_seconds"] >= 0.05, details
            assert "rate limited (code 130429)" in daemon.log()
        finally:
            daemon.stop()


class TestResume:
    """An event Meta delivers again is taken once (by message id); a send Graph read before its connection
    dropped is logged as lost, never made twice; Graph's later report of a failed delivery is logged."""

    def test_retried_deliveries_and_sends(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        provider.reset()
        daemon = _start(home, provider, graph)
        try:
            url = _ready(home)
            provider.push({"text": "The first answer."}, {"text": "The second answer."})
            first = event(text(OWNER, "hello"))
            assert post_event(url, first).status_code == 200
            graph.wait_for_texts(OWNER, 1)
            assert post_event(url, first).status_code == 200  # Meta was not sure it was taken: sent again
            graph.fail_next_send(None)  # Graph reads the next send and its connection drops before an answer
            post_event(url, event(text(OWNER, "and then?")))
            graph.wait_until(lambda: len(graph.dropped) == 1, "the dropped send")
            wait(lambda: "no answer (RemoteProtocolError)" in daemon.log(), "the lost send logged")
            assert graph.texts_to(OWNER) == ["The first answer."]  # Graph may have sent it: not made twice
            assert graph.dropped[0]["text"]["body"] == "The second answer."
            assert user_texts(provider) == ["hello", "and then?"]  # each once
            failed = {"id": new_wamid(), "status": "failed", "recipient_id": OTHER, "timestamp": "1",
                      "errors": [{"code": 131026, "title": "Message undeliverable"}]}
            post_event(url, event(statuses=(failed,)))
            wait(lambda: _details(home)["delivery_failures"] == 1, "the failed delivery noticed")
            details = _details(home)
            assert details["duplicates"] == 1 and details["network_retries"] == 0, details
            assert "graph error 131026: Message undeliverable" in daemon.log()
        finally:
            daemon.stop()


class TestBadInput:
    """Events not as Meta documents them are counted and skipped, an oversized message is cut and said so,
    an unknown user refused; a revoked token (190) stops the bot with a clear line, the daemon serving."""

    def test_bad_input_is_skipped(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        provider.reset()
        daemon = _start(home, provider, graph, dm_policy="allowlist")
        try:
            url = _ready(home)
            assert post_event(url, {"object": "page", "entry": []}).status_code == 200
            assert post_event(url, {"object": "whatsapp_business_account", "entry": "no"}).status_code == 200
            assert post_event(url, event({"from": OWNER, "type": "text"})).status_code == 200  # no id
            assert post_event(url, event(text(OWNER, "for another number"), phone_id="999")).status_code == 200
            post_event(url, event({"from": OWNER, "id": new_wamid(), "type": "reaction", "reaction": {"emoji": "👍"}}))
            post_event(url, event(text(STRANGER, "who are you?")))  # an unknown user: refused, logged
            provider.push({"text": "Still fine."})
            post_event(url, event(text(OWNER, "x" * 5000)))  # more than WhatsApp takes: cut, and said so
            assert graph.wait_for_texts(OWNER, 1) == ["Still fine."]
            details = _details(home)
            assert details["connection"] == "connected" and details["skipped"] == 3 and details["refused"] == 1, details
            [said] = user_texts(provider)
            assert said.startswith("x" * 4096 + "\n\n[The message was longer than WhatsApp's 4,096 characters")
            log = daemon.log()
            assert f"refused a message from user {STRANGER}" in log and "over WhatsApp's 4096; cut" in log
            assert "another business number" in log
        finally:
            daemon.stop()

    def test_a_revoked_token(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        """At start, a refused token (190) keeps the bot off; revoked while running, the first refused send says so."""
        daemon = _start(home, provider, graph, token="EAAG-not-the-token")
        try:
            wait(lambda: _details(home).get("connection") == "failed", "the refused token noticed")
            assert "graph error 190" in str(_details(home)["connection_error"])
            assert post_event(_api_url(home), event(text(OWNER, "hello"))).status_code == 503  # Meta delivers it again later
        finally:
            daemon.stop()
        assert "stays off until the token is fixed" in daemon.log() and "expired or was revoked" in daemon.log()
        provider.reset()
        daemon = _start(home, provider, graph)
        try:
            url = _ready(home)
            graph.revoke()
            provider.push({"text": "Nobody will read this."})
            post_event(url, event(text(OWNER, "hello")))
            wait(lambda: _details(home).get("connection") == "failed", "the revoked token noticed")
            assert "graph error 190" in str(_details(home)["connection_error"])
            assert run_cli(home, "status").returncode == 0
        finally:
            daemon.stop()
        assert "sends nothing until the token is fixed" in daemon.log() and TOKEN not in daemon.log()


class TestDelivery:
    """Cron jobs deliver to numbers (a closed window named, a template sent instead); a reply's file goes up to /media and is sent by its id; a user's
    voice note is fetched by its media id with the token."""

    def test_cron_deliveries_and_the_24_hour_window(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph) -> None:
        """A job delivers to a number; to the home number, whose window is closed, the refusal (131047) is named
        in the log and the configured template sent instead."""
        provider.reset()
        daemon = _start(home, provider, graph, home_channel=HOME, window_template="hello_again")
        try:
            _ready(home)
            provider.push({"text": "The nightly digest."}, {"text": "The weekly digest."})
            nightly = _cron_job(home, "nightly", f"whatsapp:+{OTHER}")
            assert run_cli(home, "cron", "run-now", nightly).returncode == 0
            assert graph.wait_for_texts(OTHER, 1) == ["Cron job 'nightly':\n\nThe nightly digest."]
            refused = run_cli(home, "cron", "add", "--schedule", "every 1d", "--prompt", "x", "--deliver", "whatsapp:bob")
            assert refused.returncode != 0 and "whatsapp" in refused.stderr
            graph.closed_windows.add(HOME)
            assert run_cli(home, "cron", "run-now", _cron_job(home, "weekly", "whatsapp")).returncode == 0
            graph.wait_until(lambda: any(m["type"] == "template" for m in graph.messages_to(HOME)), "the template")
            [template] = graph.messages_to(HOME)
            assert template["template"] == {"name": "hello_again", "language": {"code": "en_US"}}
            wait(lambda: _details(home)["templates_sent"] == 1, "the template counted")
            assert _details(home)["window_refusals"] == 1 and graph.refused == 1
            assert "graph error 131047" in daemon.log() and "outside the 24-hour customer-service window" in daemon.log()
        finally:
            daemon.stop()

    def test_files_both_ways(self, home: Path, provider: ScriptedProviderProcess, graph: FakeGraph, tmp_path: Path) -> None:
        provider.reset()
        workspace = tmp_path / "work"
        workspace.mkdir()
        (workspace / "report.txt").write_bytes(b"the report's bytes")
        graph.media["4455667788"] = (b"OggS-voice", "audio/ogg; codecs=opus")
        daemon = _start(home, provider, graph, cwd=str(workspace))
        try:
            url = _ready(home)
            provider.push({"text": f"Here it is.\nMEDIA:{workspace}/report.txt"})
            voice = {"from": OWNER, "id": new_wamid(), "type": "audio", "audio": {"id": "4455667788", "mime_type": "audio/ogg; codecs=opus", "voice": True}}
            post_event(url, event(voice))
            graph.wait_until(lambda: any(m["type"] == "document" for m in graph.messages_to(OWNER)), "the reply's file")
            [document] = [m for m in graph.messages_to(OWNER) if m["type"] == "document"]
            upload = graph.uploads[document["document"]["id"]]
            assert upload["file"]["content"] == b"the report's bytes" and upload["messaging_product"] == "whatsapp"
            assert document["document"]["filename"] == "report.txt"
            assert "Here it is." in graph.texts_to(OWNER)
            [said] = user_texts(provider)
            [saved] = (workspace / "incoming").iterdir()
            assert saved.read_bytes() == b"OggS-voice" and saved.name.endswith(".ogg") and str(saved) in said
        finally:
            daemon.stop()
