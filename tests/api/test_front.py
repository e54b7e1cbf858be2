"""The completions route is answered before Starlette's router, with the same answers as every route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.routing import Router

from providers.scripted import ScriptedProvider
from tests.api.harness import ApiDaemon, api_daemon

MODEL = "scripted-model"
_BODY = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def routed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths Starlette's router was called for."""
    paths: list[str] = []
    call = Router.__call__

    async def counted(self: Router, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            paths.append(scope["path"])
        await call(self, scope, receive, send)

    monkeypatch.setattr(Router, "__call__", counted)
    yield paths


class TestCompletionsFront:
    """POST /v1/chat/completions skips Starlette; its errors, and every other route, are answered as before."""

    async def test_a_streamed_completion_never_reaches_the_router(self, api: ApiDaemon, routed: list[str]) -> None:
        """The SDK's stream is whole; the router saw no request for it."""
        api.provider.push({"text": "fronted"})
        async with api.client() as client:
            stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}], stream=True)
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        assert text == "fronted"
        assert routed == []

    async def test_errors_keep_their_shapes(self, api: ApiDaemon, routed: list[str]) -> None:
        """No key: 401; a bad body: 400; the wrong method: 405 (from the router); an unknown path: 404."""
        async with api.http() as http:
            keyless = await http.post("/v1/chat/completions", json=_BODY, headers={"Authorization": ""})
            bad = await http.post("/v1/chat/completions", content=b"{not json")
            wrong = await http.get("/v1/chat/completions")
            missing = await http.post("/v1/chat/completion", json=_BODY)
        assert keyless.status_code == 401 and keyless.json()["error"]["code"] == "invalid_api_key"
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
        assert bad.headers["content-type"] == "application/json"
        assert wrong.status_code == 405 and "error" in wrong.json()
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        assert routed == ["/v1/chat/completions", "/v1/chat/completion"]
        assert api.provider.requests == []

    async def test_a_completion_gets_cors_headers(self, provider: ScriptedProvider) -> None:
        """With origins configured, a completion's answer carries them, as every route's does."""
        provider.push({"text": "allowed"})
        async with api_daemon(provider, "    cors_origins: ['http://ui.example']\n") as api:
            async with api.http() as http:
                answer = await http.post("/v1/chat/completions", json=_BODY, headers={"Origin": "http://ui.example"})
                health = await http.get("/health", headers={"Origin": "http://ui.example"})
        assert answer.status_code == 200 and json.loads(answer.text)["choices"][0]["message"]["content"] == "allowed"
        assert answer.headers["access-control-allow-origin"] == "http://ui.example"
        assert health.headers["access-control-allow-origin"] == "http://ui.example"
