"""Chat completions through the official openai SDK: plain, streamed, tool-using, and by session."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import openai
import pytest
import trio

from actors.platform.api.gateway import api_session_id
from control.paths import DaemonPaths
from providers.stream_close import close_stream, hold_body_iterator
from tools.jail.runtime import RuntimeDir
from tests.api.harness import KEY, ApiDaemon, stored_sessions, stored_texts, wait_until

MODEL = "scripted-model"


def _system_of(request_body: dict) -> str:
    return request_body["messages"][0]["content"]


class TestNonStreaming:
    """A non-streaming completion is one agent turn, answered in OpenAI's shape."""

    async def test_plain_answer(self, api: ApiDaemon) -> None:
        """The final text, finish_reason stop, usage filled in; the ephemeral session is closed afterwards."""
        api.provider.push({"text": "Hello from the agent", "usage": {"prompt_tokens": 40, "completion_tokens": 4}})
        async with api.client() as client:
            reply = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "Hello from the agent"
        assert reply.choices[0].finish_reason == "stop"
        assert reply.object == "chat.completion" and reply.id.startswith("chatcmpl-")
        assert reply.model == MODEL
        assert reply.usage is not None
        assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (40, 4, 44)
        await wait_until(lambda: not api.session_paths())
        assert api.api_actor().statistics().details["in_flight"] == 0

    async def test_system_layer_and_earlier_turns(self, api: ApiDaemon) -> None:
        """Earlier turns become real history; the client's system message reaches the model but is never stored."""
        api.provider.push({"text": "Paris, as you said."})
        async with api.client() as client:
            await client.chat.completions.create(
                model=MODEL,
                messages=[
                    {"role": "system", "content": "SYSTEM-LAYER-MARKER answer tersely"},
                    {"role": "user", "content": "remember EARLIER-MARKER"},
                    {"role": "assistant", "content": "noted"},
                    {"role": "user", "content": [{"type": "text", "text": "what did I say?"}]},
                ],
            )
        sent = api.provider.requests[-1].body
        assert "SYSTEM-LAYER-MARKER" in json.dumps(sent["messages"])
        assert sent["messages"][1:] == [
            {"role": "user", "content": "remember EARLIER-MARKER"},
            {"role": "assistant", "content": "noted"},
            {"role": "user", "content": "what did I say?"},
        ]
        stored = await trio.to_thread.run_sync(stored_texts, api.home)
        assert stored, "the turn itself is stored"
        assert not any("SYSTEM-LAYER-MARKER" in text for _, _, text in stored)

    async def test_irregular_earlier_turns_become_a_transcript(self, api: ApiDaemon) -> None:
        """Earlier messages that do not alternate still reach the model, as a transcript in the ephemeral layer."""
        api.provider.push({"text": "ok"})
        async with api.client() as client:
            await client.chat.completions.create(
                model=MODEL,
                messages=[
                    {"role": "user", "content": "first IRREGULAR-MARKER"},
                    {"role": "user", "content": "second"},
                    {"role": "user", "content": "third"},
                ],
            )
        sent = api.provider.requests[-1].body["messages"]
        assert "IRREGULAR-MARKER" in sent[0]["content"] and sent[1:] == [{"role": "user", "content": "third"}]

    async def test_tool_using_turn(self, api: ApiDaemon) -> None:
        """The agent's tools run inside the turn; the completion is the final assistant text."""
        (api.workdir / "notes.txt").write_text("the launch code is TANGERINE\n")
        api.provider.push(
            {"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": str(api.workdir / "notes.txt")}}]},
            {"text": "The file says TANGERINE."},
        )
        async with api.client() as client:
            reply = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "read notes.txt"}])
        assert reply.choices[0].message.content == "The file says TANGERINE."
        second = api.provider.requests[-1].body["messages"]
        tool_results = [m for m in second if m["role"] == "tool"]
        assert len(tool_results) == 1 and "TANGERINE" in tool_results[0]["content"]

    async def test_sync_client_in_a_thread(self, api: ApiDaemon) -> None:
        """The sync openai client works from a worker thread."""
        api.provider.push({"text": "sync works"})

        def call() -> str:
            with api.sync_client() as client:
                reply = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
                return reply.choices[0].message.content or ""

        assert await trio.to_thread.run_sync(call) == "sync works"

    async def test_turn_error_is_a_500_error_object(self, api: ApiDaemon) -> None:
        """A provider that fails for good ends the turn in error: a server_error for the client."""
        api.provider.push({"error": {"status": 400, "body": {"error": {"message": "bad thing", "type": "invalid_request_error"}}}})
        async with api.client() as client:
            with pytest.raises(openai.InternalServerError) as caught:
                await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 500
        assert caught.value.body["type"] == "server_error"  # type: ignore[index]  # the error body is a JSON object here


class TestStreaming:
    """Streaming follows OpenAI's chunk framing and ends with data: [DONE]."""

    async def test_sdk_stream(self, api: ApiDaemon) -> None:
        """Role first, the text in deltas, finish_reason stop, then a usage-only chunk."""
        api.provider.push({"text": "one two three four", "usage": {"prompt_tokens": 10, "completion_tokens": 4}})
        async with api.client() as client:
            stream = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "count"}], stream=True, stream_options={"include_usage": True}
            )
            chunks = [c async for c in stream]
        assert chunks[0].choices[0].delta.role == "assistant"
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "one two three four"
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert chunks[-1].usage.total_tokens == 14
        assert len({c.id for c in chunks}) == 1

    async def test_raw_frames(self, api: ApiDaemon) -> None:
        """On the wire: text/event-stream, one 'data: {json}' per chunk, the last 'data: [DONE]'."""
        api.provider.push({"text": "raw frames"})
        async with api.http() as http:
            response = await http.post(
                "/v1/chat/completions", json={"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "x"}]}
            )
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        body = response.text
        assert body.endswith("data: [DONE]\n\n")
        frames = [block for block in body.split("\n\n") if block]
        assert all(block.startswith("data: ") for block in frames)
        payloads = [json.loads(block[6:]) for block in frames[:-1]]
        assert all(p["object"] == "chat.completion.chunk" for p in payloads)
        assert payloads[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}

    async def test_an_ephemeral_stream_asks_the_sessions_supervisor_four_times(self, api: ApiDaemon) -> None:
        """Admission, the session's start, the running-turn count and its close: the session just started
        is found in the registry (never asked whether it is hibernating), and not once per step of sending
        it the message."""
        sessions = api.system.lookup("sessions")._actor
        asked: list[str] = []
        handle = sessions.handle

        async def counted(message: Any) -> Any:
            asked.append(type(message).__name__)
            return await handle(message)

        sessions.handle = counted
        api.provider.push({"text": "counted"})
        async with api.client() as client:
            stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}], stream=True)
            chunks = [c async for c in stream]
        await wait_until(lambda: not api.session_paths())
        assert chunks[0].choices[0].delta.role == "assistant"
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "counted"
        assert sorted(asked) == sorted(["TurnAdmission", "StartChild", "TurnAdmission", "TerminateChild"])


    async def test_turn_error_mid_stream(self, api: ApiDaemon) -> None:
        """A turn that fails while streaming sends an error object, then [DONE]; the SDK raises APIError."""
        api.provider.push({"error": {"status": 400, "body": {"error": {"message": "nope", "type": "invalid_request_error"}}}})
        async with api.http() as http:
            response = await http.post(
                "/v1/chat/completions", json={"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "x"}]}
            )
        frames = [block for block in response.text.split("\n\n") if block]
        assert frames[-1] == "data: [DONE]"
        assert json.loads(frames[-2][6:])["error"]["type"] == "server_error"
        api.provider.push({"error": {"status": 400, "body": {"error": {"message": "nope", "type": "invalid_request_error"}}}})
        async with api.client() as client:
            stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}], stream=True)
            with pytest.raises(openai.APIError):
                async for _ in stream:
                    pass


class TestSessionContinuity:
    """X-Hermes-Session-Id continues a daemon session and comes back in the response."""

    async def test_header_continues_the_session(self, api: ApiDaemon) -> None:
        """The second request's model call holds the first exchange; the header is echoed; the session lives on."""
        api.provider.push({"text": "first answer"}, {"text": "second answer"})
        headers = {"X-Hermes-Session-Id": "team-chat-1"}
        async with api.client() as client:
            raw = await client.chat.completions.with_raw_response.create(
                model=MODEL, messages=[{"role": "system", "content": "CLIENT-SYSTEM"}, {"role": "user", "content": "first question"}],
                extra_headers=headers,
            )
            assert raw.headers["x-hermes-session-id"] == "team-chat-1"
            assert raw.parse().choices[0].message.content == "first answer"
            second = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "second question"}], extra_headers=headers
            )
        assert second.choices[0].message.content == "second answer"
        contents = [m.get("content") for m in api.provider.requests[-1].body["messages"]]
        assert "first question" in contents and "first answer" in contents and contents[-1] == "second question"
        session_id = api_session_id("team-chat-1")
        assert f"sessions/session:{session_id}" in api.session_paths()
        stored = await trio.to_thread.run_sync(stored_texts, api.home)
        assert [t for s, r, t in stored if s == session_id and r == "user"] == ["first question", "second question"]
        assert not any("CLIENT-SYSTEM" in t for _, _, t in stored)

    async def test_second_client_is_queued_not_interrupting(self, api: ApiDaemon) -> None:
        """A message for a session whose turn is running waits; the running turn completes untouched."""
        api.provider.push({"text": "slow first answer in many words", "chunk_delay": 0.05}, {"text": "second answer"})
        headers = {"X-Hermes-Session-Id": "shared"}
        results: dict[str, str] = {}

        async def ask(label: str, text: str) -> None:
            async with api.client() as client:
                reply = await client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": text}], extra_headers=headers
                )
                results[label] = reply.choices[0].message.content or ""

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first", "question one")
            await api.provider.wait_requests(1)
            nursery.start_soon(ask, "second", "question two")
        assert results == {"first": "slow first answer in many words", "second": "second answer"}

    async def test_bad_header(self, api: ApiDaemon) -> None:
        """A session id that is not path-safe is a 400."""
        async with api.client() as client:
            with pytest.raises(openai.BadRequestError):
                await client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "x"}], extra_headers={"X-Hermes-Session-Id": "../etc"}
                )


class TestDisconnect:
    """A client leaving mid-stream interrupts its ephemeral run only."""

    async def test_ephemeral_run_interrupted(self, api: ApiDaemon) -> None:
        """The provider stream is abandoned and the ephemeral session is closed."""
        api.provider.push({"text": " ".join(f"w{i}" for i in range(200)), "chunk_delay": 0.05})
        started = trio.current_time()
        async with api.client() as client:
            stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True)
            await leave_after_first_text(stream)
        with trio.fail_after(10):
            await api.provider.wait_disconnects(1)
        await wait_until(lambda: not api.session_paths())
        # The whole answer takes 10 s to stream: the provider was left long before that.
        assert trio.current_time() - started < 5.0
        assert len(api.provider.requests) == 1
        await wait_until(lambda: api.api_actor().statistics().details["in_flight"] == 0)

    async def test_named_session_keeps_running(self, api: ApiDaemon) -> None:
        """With a session header the turn finishes and is stored though its client left."""
        words = " ".join(f"w{i}" for i in range(30))
        api.provider.push({"text": words, "chunk_delay": 0.02}, {"text": "next"})
        headers = {"X-Hermes-Session-Id": "keeps-going"}
        async with api.client() as client:
            stream = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True, extra_headers=headers
            )
            await leave_after_first_text(stream)
            turn = f"sessions/session:{api_session_id('keeps-going')}/turn"
            await wait_until(lambda: turn not in api.system.registry)
            await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "again"}], extra_headers=headers)
        assert words in [m.get("content") for m in api.provider.requests[-1].body["messages"]]


def session_dirs(home: Path) -> list[str]:
    """The session directories in the daemon's runtime directory now."""
    runtime = RuntimeDir.for_home(home, DaemonPaths(home).user_dir)
    return [name for name in os.listdir(runtime.path) if name.startswith("s-")]


async def leave_after_first_text(stream: openai.AsyncStream[Any]) -> None:
    """Read an SDK stream up to its first text, then leave it, closing every
    body iterator in this task (see ``providers.stream_close``)."""
    held = hold_body_iterator(stream.response)
    while True:
        chunk = await stream.__anext__()
        if chunk.choices and chunk.choices[0].delta.content:
            break
    await close_stream(stream, held)


class TestEphemeralRecord:
    """An ephemeral completion writes nothing while it talks (no row, no directory); it is stored once,
    already ended, with its usage; its jail is opened when a tool is called."""

    async def test_nothing_stored_mid_stream_then_ended_record(self, api: ApiDaemon) -> None:
        """Mid-stream the store has no row for it and the runtime directory no directory; once its client
        leaves, the interrupted turn is stored, ended."""
        api.provider.push({"text": "alpha beta gamma delta", "chunks": 4, "stall_after_chunks": 2})
        async with api.client() as client:
            stream = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "go"}], stream=True)
            held = hold_body_iterator(stream.response)
            while True:
                chunk = await stream.__anext__()
                if chunk.choices and chunk.choices[0].delta.content:
                    break
            assert await trio.to_thread.run_sync(stored_sessions, api.home) == []
            assert session_dirs(api.home) == []
            await close_stream(stream, held)
        with trio.fail_after(10):
            await api.provider.wait_disconnects(1)
        await wait_until(lambda: not api.session_paths())
        [(session_id, source, reason, _, _)] = await trio.to_thread.run_sync(stored_sessions, api.home)
        assert (source, reason) == ("api", "api client disconnected")
        roles = [(sid, role) for sid, role, _ in await trio.to_thread.run_sync(stored_texts, api.home)]
        assert roles[:2] == [(session_id, "system"), (session_id, "user")] and roles[-1] == (session_id, "assistant")

    async def test_finished_completion_record(self, api: ApiDaemon) -> None:
        """A completed one: its row, its messages and its usage, ended as done."""
        api.provider.push({"text": "stored answer", "usage": {"prompt_tokens": 40, "completion_tokens": 4}})
        async with api.client() as client:
            await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        await wait_until(lambda: not api.session_paths())
        [(session_id, source, reason, tokens_in, tokens_out)] = await trio.to_thread.run_sync(stored_sessions, api.home)
        assert (source, reason, tokens_in, tokens_out) == ("api", "api completion done", 40, 4)
        stored = await trio.to_thread.run_sync(stored_texts, api.home)
        assert [(role, text) for _, role, text in stored][1:] == [("user", "hi"), ("assistant", "stored answer")]

    async def test_tool_call_runs_jailed(self, api: ApiDaemon) -> None:
        """A tool called by an ephemeral completion runs under the session's policy: the daemon's home reads as absent."""
        (api.workdir / "notes.txt").write_text("workspace file\n")
        api.provider.push(
            {"tool_calls": [
                {"id": "call_1", "name": "read_file", "arguments": {"path": str(api.home / "config.yaml")}},
                {"id": "call_2", "name": "read_file", "arguments": {"path": str(api.workdir / "notes.txt")}},
            ]},
            {"text": "done"},
        )  # fmt: skip
        async with api.client() as client:
            reply = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "read"}])
        assert reply.choices[0].message.content == "done"
        results = {m["tool_call_id"]: m["content"] for m in api.provider.requests[-1].body["messages"] if m["role"] == "tool"}
        assert "scripted-model" not in results["call_1"] and "File not found" in results["call_1"]
        assert "workspace file" in results["call_2"]
        await wait_until(lambda: not api.session_paths())
        assert session_dirs(api.home) == [], "its directory went with it"
        [(_, _, reason, _, _)] = await trio.to_thread.run_sync(stored_sessions, api.home)
        assert reason == "api completion done"


class TestModelsAndHealth:
    """The model list needs the key; the health checks do not."""

    async def test_models(self, api: ApiDaemon) -> None:
        """/v1/models lists the configured model."""
        async with api.client() as client:
            models = [m.id async for m in client.models.list()]
        assert models == [MODEL]

    @pytest.mark.parametrize("path", ["/health", "/v1/health"])
    async def test_health(self, api: ApiDaemon, path: str) -> None:
        """Both health paths answer ok without a key."""
        async with api.http() as http:
            response = await http.get(path, headers={"Authorization": ""})
        assert response.status_code == 200 and response.json()["status"] == "ok"

    async def test_key_constant(self) -> None:
        """The test key is long enough to be accepted."""
        assert len(KEY) >= 16
