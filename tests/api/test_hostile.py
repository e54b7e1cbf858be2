"""Hostile request bodies over the HTTP API: a 400 with a message, or the text repaired; never a 500."""

from __future__ import annotations

import pytest
import trio

from providers.scripted import ScriptedProvider
from tests.api.harness import ApiDaemon, stored_texts

MODEL = "scripted-model"


class TestHostileBodies:
    """Deep nesting, huge numbers, NaN and invalid UTF-8 are refused with a 400 that says why."""

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            (b"[" * 100_000, "the request body is nested deeper than 100 levels"),
            (b'{"model": "scripted-model", "messages": [], "n": ' + b"9" * 5000 + b"}",
             "the request body holds a number of more than 4300 digits"),
            (b'{"model": "scripted-model", "temperature": NaN, "messages": []}', "NaN is not a JSON value"),
            (b'{"model": "scripted-model\xff", "messages": []}', "the request body is not valid UTF-8"),
        ],
        ids=["deep", "huge-int", "nan", "utf8"],
    )
    async def test_refused(self, api: ApiDaemon, body: bytes, message: str) -> None:
        """Each is a 400 invalid_request_error naming the problem; the API goes on serving."""
        async with api.http() as http:
            response = await http.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
            assert 400 == response.status_code
            assert message in response.json()["error"]["message"]
            assert 200 == (await http.get("/v1/models")).status_code


class TestHostileText:
    """Lone surrogates in a message and in the model's answer come back, and are stored, as U+FFFD."""

    async def test_surrogates_repaired(self, api: ApiDaemon, provider: ScriptedProvider) -> None:
        """The request's escaped surrogate reaches the model repaired; the answer's is repaired in the response."""
        provider.push({"text": "answer \udc80 here"})
        body = rb'{"model": "scripted-model", "messages": [{"role": "user", "content": "question \ud800 mark"}]}'
        async with api.http() as http:
            response = await http.post("/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
        assert 200 == response.status_code
        assert "answer \ufffd here" == response.json()["choices"][0]["message"]["content"]
        assert "question \ufffd mark" in str(provider.requests[0].body)
        stored = await trio.to_thread.run_sync(stored_texts, api.home)
        assert ("user", "question \ufffd mark") in [(role, text) for _, role, text in stored]
