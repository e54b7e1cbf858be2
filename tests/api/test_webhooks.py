"""Generic inbound webhooks over real loopback HTTP against a real daemon: signed deliveries start and
continue sessions, answers reach a real callback server signed, and bad deliveries get their status."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import trio

from actors.platform.api.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, signed_headers, verify
from actors.platform.api.webhooks import webhook_session_id
from conversation.prompt.texts import PLATFORM_HINTS
from providers.scripted import ScriptedProvider
from tests.api.harness import ApiDaemon, api_daemon, stored_sessions, wait_until
from tests.daemon.helpers import run_cli
from tests.platform.fake_http import FakeHandler, FakePlatform, serving

SECRET = "hook-secret-0123456789"


class _Callbacks(FakePlatform):
    """The callback receiver's state: what it was sent, and how many posts it fails first."""

    def __init__(self, failures: int = 0) -> None:
        super().__init__()
        self.failures = failures
        self.attempts = 0


@contextmanager
def callback_server(state: _Callbacks) -> Iterator[str]:
    """A tiny real HTTP server recording each signed answer it is POSTed (500 for the first ``failures``)."""

    class Handler(FakeHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            with state.lock:
                state.attempts += 1
                if state.attempts <= state.failures:
                    self.reply(500, b'{"error": "down"}')
                    return
                state.sent.append({"body": body, "headers": dict(self.headers)})
                state.lock.notify_all()
            self.reply(200, b"{}")

    with serving(Handler) as url:
        yield url + "/answers"


def _yaml(callback: str | None, **route: str) -> str:
    lines = [
        "  webhook:", "    enabled: true", "    rate_limit: 5", "    max_body_bytes: 2048",
        "    callback_backoff_seconds: 0.05", "    routes:",
        # A hook whose secret is not set is not served at all (no unsigned door).
        "      keyless:", "        secret_env: HOOK_SECRET_NOBODY_SET",
        "      support:", "        secret_env: SUPPORT_HOOK_SECRET",
        "        session_key: conversation_id", '        prompt: "Ticket from {user.name}: {text}"',
        "        sandbox: workspace-write",
    ]
    if callback:
        lines.append(f"        callback_url: {callback}")
    lines += [f"        {k}: {v}" for k, v in route.items()]
    return "\n".join(lines) + "\n"


@asynccontextmanager
async def hook_daemon(provider: ScriptedProvider, callback: str | None, **route: str) -> AsyncIterator[ApiDaemon]:
    """A daemon serving the ``support`` hook (``route``: more of its keys), its secret in the environment."""
    import os

    os.environ["SUPPORT_HOOK_SECRET"] = SECRET
    try:
        async with api_daemon(provider, _yaml(callback, **route)) as running:
            yield running
    finally:
        del os.environ["SUPPORT_HOOK_SECRET"]


async def _post(
    api: ApiDaemon, payload: Any, *, hook: str = "support", secret: str = SECRET, when: float | None = None,
    headers: dict[str, str] | None = None, query: str = "",
) -> httpx2.Response:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    signed = signed_headers(secret, body, time.time() if when is None else when)
    async with httpx2.AsyncClient(base_url=api.url) as http:
        with trio.fail_after(10):
            return await http.post(f"/v1/webhooks/{hook}{query}", content=body, headers={**signed, **(headers or {})})


def _delivered(state: _Callbacks, index: int) -> dict[str, Any]:
    sent = state.sent[index]
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    verify(SECRET, sent["body"], headers[TIMESTAMP_HEADER.lower()], headers[SIGNATURE_HEADER.lower()], time.time(), 300)
    return json.loads(sent["body"])


def _counts(api: ApiDaemon) -> dict[str, int]:
    """The ``support`` hook's counts, as ``status`` shows them."""
    counts: dict[str, int] = api.api_actor().statistics().details["webhooks"]["support"]
    return counts


def _ticket(text: str, conversation: str = "c-1") -> dict[str, Any]:
    return {"conversation_id": conversation, "user": {"name": "Ada"}, "text": text}


class TestConversation:
    """A signed delivery starts a session, its answer is called back signed, and the same key continues it."""

    async def test_start_then_continue(self, provider: ScriptedProvider) -> None:
        """The answer reaches the callback with a valid signature; a second delivery with the key continues the session."""
        state = _Callbacks()
        provider.push({"text": "First answer."}, {"text": "Second answer."})
        with callback_server(state) as url:
            async with hook_daemon(provider, url) as api:
                first = await _post(api, _ticket("printer on fire"), headers={"Idempotency-Key": "d-1"})
                assert first.status_code == 202, first.text
                assert first.json()["session_id"] == webhook_session_id("support", "c-1")
                await trio.to_thread.run_sync(state.wait_until, lambda: len(state.sent) == 1, "the first callback")
                second = await _post(api, _ticket("still burning"), headers={"Idempotency-Key": "d-2"})
                assert second.status_code == 202, second.text
                await trio.to_thread.run_sync(state.wait_until, lambda: len(state.sent) == 2, "the second callback")
                answers = [_delivered(state, 0), _delivered(state, 1)]
                await wait_until(lambda: _counts(api)["callbacks_delivered"] == 2)
                counts = _counts(api)
                sessions = await trio.to_thread.run_sync(stored_sessions, api.home)
        assert [(a["answer"], a["delivery_id"], a["session_key"]) for a in answers] == [
            ("First answer.", "d-1", "c-1"), ("Second answer.", "d-2", "c-1"),
        ]
        assert answers[0]["session_id"] == answers[1]["session_id"]
        assert [s[1] for s in sessions] == ["webhook"]
        last_request = provider.requests[-1].body
        contents = [m.get("content") for m in last_request["messages"]]
        assert "Ticket from Ada: printer on fire" in contents and "First answer." in contents
        assert contents[-1] == "Ticket from Ada: still burning"
        assert PLATFORM_HINTS["webhook"] in contents[0]
        assert counts["accepted"] == 2 and counts["callbacks_delivered"] == 2

    async def test_wait_for_the_answer(self, provider: ScriptedProvider) -> None:
        """``?wait=true`` answers in the response itself."""
        provider.push({"text": "Right here."})
        async with hook_daemon(provider, "http://127.0.0.1:9/never") as api:
            response = await _post(api, _ticket("hello"), query="?wait=true")
        assert response.status_code == 200, response.text
        assert response.json()["answer"] == "Right here."


class TestRefusals:
    """Bad deliveries get their status and a JSON error, start nothing, and the daemon keeps serving."""

    async def test_statuses(self, provider: ScriptedProvider) -> None:
        """401 bad signature or replayed timestamp, 404 unknown hook, 413 too big, 422 missing field, 400 not JSON."""
        async with hook_daemon(provider, "http://127.0.0.1:9/never") as api:
            forged = await _post(api, _ticket("x"), secret="not-the-secret-at-all")
            stale = await _post(api, _ticket("x"), when=time.time() - 3600)
            unknown = await _post(api, _ticket("x"), hook="nobody")
            keyless = await _post(api, _ticket("x"), hook="keyless", secret="")
            big = await _post(api, _ticket("x" * 4096))
            no_key = await _post(api, {"user": {"name": "Ada"}, "text": "x"})
            no_field = await _post(api, {"conversation_id": "c-2", "text": "x"})
            not_json = await _post(api, b"{nope")
            async with httpx2.AsyncClient(base_url=api.url) as http:
                unsigned = await http.post("/v1/webhooks/support", json=_ticket("x"))
            counts = _counts(api)
            status = await trio.to_thread.run_sync(functools.partial(run_cli, api.home, "status"))
        got = [r.status_code for r in (forged, stale, unknown, keyless, big, no_key, no_field, not_json, unsigned)]
        assert got == [401, 401, 404, 404, 413, 422, 422, 400, 401]
        assert forged.json() == {"error": "invalid signature"} == stale.json()
        assert all("error" in r.json() for r in (forged, unknown, big, no_key))
        assert "conversation_id" in no_key.json()["error"] and "user.name" in no_field.json()["error"]
        assert provider.requests == []
        assert counts["rejected"] == 7 and counts["accepted"] == 0
        assert "webhook support: 7 received, 0 accepted, 7 rejected" in status.stdout, status.stdout

    async def test_rate_limit(self, provider: ScriptedProvider) -> None:
        """Past the hook's rate a delivery gets a 429 with Retry-After."""
        async with hook_daemon(provider, "http://127.0.0.1:9/never") as api:
            # No provider step is pushed: the five accepted turns fail, and their callbacks find nobody.
            answers = [await _post(api, _ticket(f"n{i}", conversation=f"c-{i}")) for i in range(6)]
        assert [r.status_code for r in answers[:5]] == [202] * 5
        assert answers[5].status_code == 429 and int(answers[5].headers["retry-after"]) >= 1


class TestDelivery:
    """Duplicates run once; a failing callback is retried; approvals are refused."""

    async def test_duplicate_answered_once(self, provider: ScriptedProvider) -> None:
        """A retried delivery (same Idempotency-Key, or the same signed bytes) starts no second turn."""
        state = _Callbacks()
        provider.push({"text": "Once."})
        with callback_server(state) as url:
            async with hook_daemon(provider, url) as api:
                body = json.dumps(_ticket("once")).encode()
                first = await _post(api, body, headers={"Idempotency-Key": "same"})
                again = await _post(api, body, headers={"Idempotency-Key": "same"})
                await trio.to_thread.run_sync(state.wait_until, lambda: len(state.sent) == 1, "the callback")
                counts = _counts(api)
        assert (first.status_code, again.status_code, again.json()["status"]) == (202, 200, "duplicate")
        assert len(provider.requests) == 1 and counts["duplicates"] == 1

    async def test_callback_retried(self, provider: ScriptedProvider) -> None:
        """The callback failing twice is retried after the configured back-off and then delivered."""
        state = _Callbacks(failures=2)
        provider.push({"text": "Eventually."})
        with callback_server(state) as url:
            async with hook_daemon(provider, url) as api:
                assert (await _post(api, _ticket("retry me"))).status_code == 202
                await trio.to_thread.run_sync(state.wait_until, lambda: len(state.sent) == 1, "the callback")
                await wait_until(lambda: _counts(api)["callbacks_delivered"] == 1)
                counts = _counts(api)
        assert state.attempts == 3 and _delivered(state, 0)["answer"] == "Eventually."
        assert counts["callback_failures"] == 2

    async def test_approval_refused(self, provider: ScriptedProvider) -> None:
        """A command needing approval is refused (nobody to ask) and the model is told so."""
        async with hook_daemon(provider, None) as api:
            victim = api.workdir / "victim"
            victim.mkdir()
            provider.push(
                {"tool_calls": [{"id": "call_rm", "name": "terminal", "arguments": {"command": f"rm -r {victim}"}}]},
                {"text": "Could not remove it."},
            )
            response = await _post(api, _ticket("remove it"))
            assert victim.exists()
        assert response.status_code == 200, response.text
        assert response.json()["answer"] == "Could not remove it."
        tool_result = [m for m in provider.requests[-1].body["messages"] if m.get("role") == "tool"]
        assert tool_result and "no one can approve" in tool_result[0]["content"]

    async def test_approval_granted_when_configured(self, provider: ScriptedProvider) -> None:
        """``approvals: approve`` lets the (jailed) command run without asking."""
        async with hook_daemon(provider, None, approvals="approve") as api:
            victim = api.workdir / "victim"
            victim.mkdir()
            provider.push(
                {"tool_calls": [{"id": "call_rm", "name": "terminal", "arguments": {"command": f"rm -r {victim}"}}]},
                {"text": "Removed."},
            )
            response = await _post(api, _ticket("remove it"))
            assert not victim.exists()
        assert response.json()["answer"] == "Removed."
