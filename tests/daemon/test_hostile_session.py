"""A hostile client and a hostile model against the whole daemon in process: real socket, real SQLite.

The client sends a SendMessage holding lone surrogates (valid JSON escapes) and frames nested 100,000
deep, with 5,000-digit numbers or invalid UTF-8; the scripted model streams lone surrogates in its text,
its reasoning and its tool-call arguments, and arguments nested too deep or with too long a number.
The session answers every turn, the client stays attached throughout, and what is stored is repaired.
"""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.platform.daemon import serve_daemon
from control.paths import DaemonPaths
from config.loader import load_config
from messages import control as c
from messages.codec import Codec, FrameBuffer
from messages.events import TurnFinished
from providers.scripted import ScriptedProvider, serve_scripted_provider

DAEMON: Codec[Any] = Codec(c.DaemonMessage, max_frame_bytes=1 << 24)
CLIENT: Codec[Any] = Codec(c.ClientMessage)
DEEP = "[" * 5000 + "]" * 5000


class RawClient:
    """A control client that can send any bytes, and decodes strictly whatever the daemon sends."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.frames = FrameBuffer(1 << 24)
        self.received: list[Any] = []
        self._ready: list[Any] = []

    async def send(self, frame: bytes) -> None:
        """Write one frame (a newline is added)."""
        await self.stream.send_all(frame + b"\n")

    async def next(self) -> Any:
        """The next message; a frame the daemon sends that is not valid UTF-8 or JSON fails the test here."""
        while not self._ready:
            data = await self.stream.receive_some(65536)
            assert data, "the daemon closed the connection"
            self.frames.feed(data)
            self._ready.extend(DAEMON.decode(frame) for frame in self.frames.frames())
        message = self._ready.pop(0)
        self.received.append(message)
        return message

    async def until(self, predicate: Any) -> Any:
        """Read until a message satisfies ``predicate``; return it."""
        with trio.fail_after(30):
            while True:
                message = await self.next()
                if predicate(message):
                    return message


@asynccontextmanager
async def _daemon(provider: ScriptedProvider) -> AsyncIterator[tuple[RawClient, DaemonPaths, Path]]:
    with tempfile.TemporaryDirectory(prefix="ha-") as base:
        home, work = Path(base) / "home", Path(base) / "work"
        home.mkdir(mode=0o700)
        work.mkdir()
        paths = DaemonPaths(home)

        async def daemon(task_status: trio.TaskStatus[Any]) -> None:
            await serve_daemon(paths, load_config(home), task_status=task_status)

        async with trio.open_nursery() as nursery:
            await nursery.start(daemon)
            sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            await sock.connect(str(paths.socket))
            client = RawClient(trio.SocketStream(sock))
            await client.send(CLIENT.encode(c.Hello(c.PROTOCOL_VERSION)).rstrip(b"\n"))
            assert isinstance(await client.next(), c.Welcome)
            try:
                yield client, paths, work
            finally:
                await client.send(CLIENT.encode(c.StopDaemon("stop")).rstrip(b"\n"))
                await client.stream.aclose()


def _request(message: Any) -> bytes:
    return CLIENT.encode(message).rstrip(b"\n")


def _is_reply(request_id: str) -> Any:
    return lambda m: getattr(m, "request_id", None) == request_id and not hasattr(m, "seq")


def _turn_finished(session_id: str) -> Any:
    return lambda m: isinstance(m, TurnFinished) and m.session_id == session_id


HOSTILE_MODEL_STEPS = [
    {
        "text": "looking \udc80 at it",
        "reasoning": "thinking \ud800 hard",
        "tool_calls": [
            {"id": "call_esc", "name": "todo",
             "arguments": r'{"todos": [{"id": "1", "content": "escaped \udc80 task", "status": "pending"}]}'},
            {"id": "call_raw", "name": "todo",
             "arguments": '{"todos": [{"id": "2", "content": "raw \udfff task", "status": "pending"}], "merge": true}'},
            {"id": "call_deep", "name": "todo", "arguments": '{"todos": ' + DEEP + "}"},
            {"id": "call_int", "name": "todo", "arguments": '{"todos": [], "n": ' + "9" * 5000 + "}"},
        ],
        "args_chunks": 3,
    },
    {"text": "done \ud83d needle43"},
    {"text": "still here"},
]


@pytest.mark.parametrize("api_mode", ["chat_completions", "anthropic_messages"])
class TestHostileSession:
    """Hostile input from the client and from the model leaves the session running and the client attached."""

    async def test_session_goes_on(self, api_mode: str) -> None:
        """bad_frame for each hostile frame; both turns complete; what is stored and searched is repaired."""
        async with serve_scripted_provider(HOSTILE_MODEL_STEPS) as provider, _daemon(provider) as (client, paths, work):
            await client.send(_request(c.CreateSession(
                "create", cwd=str(work), model="scripted-model", provider="custom", base_url=provider.base_url,
                api_mode=api_mode,
            )))
            created = await client.until(_is_reply("create"))
            session_id = created.session_id
            await client.send(_request(c.Attach("attach", session_id)))
            assert isinstance(await client.until(_is_reply("attach")), c.Attached)

            for frame in (
                b"[" * 100_000,
                b'{"type":"SendMessage","request_id":"big","session_id":"x","text":"a","n":' + b"9" * 5000 + b"}",
                b'{"type":"Status","request_id":"\xff\xfe"}',
                b'{"type":"ListSessions","request_id":"nan","limit":NaN}',
            ):
                await client.send(frame)
                error = await client.until(lambda m: isinstance(m, c.ErrorReply))
                assert "bad_frame" == error.code

            hostile = (b'{"type":"SendMessage","request_id":"send","session_id":"' + session_id.encode()
                       + rb'","text":"hello \udc80 world \ud800 needle42"}')
            await client.send(hostile)
            finished = await client.until(_turn_finished(session_id))
            assert ("completed", "done \ufffd needle43") == (finished.reason, finished.final_text)

            rows = await trio.to_thread.run_sync(_stored, paths.home, session_id)
            assert ("user", "hello \ufffd world \ufffd needle42") == rows[0][:2]
            assistant = rows[1]
            assert "looking \ufffd at it" == assistant[1]
            assert "escaped \ufffd task" in assistant[2] and "raw \ufffd task" in assistant[2]
            tool_results = {row[3]: row[1] for row in rows if row[0] == "tool"}
            assert "nested deeper than 100 levels" in tool_results["call_deep"]
            assert "more than 4300 digits" in tool_results["call_int"]
            assert "escaped \ufffd task" in tool_results["call_esc"]

            await client.send(_request(c.SearchSessions("search", "needle42")))
            reply = await client.until(_is_reply("search"))
            assert [session_id] == [match.session.id for match in reply.matches]

            await client.send(_request(c.SendMessage("again", session_id, "are you there?")))
            finished = await client.until(_turn_finished(session_id))
            assert ("completed", "still here") == (finished.reason, finished.final_text)


def _stored(home: Path, session_id: str) -> list[tuple[str, str | None, str | None, str | None]]:
    """The session's messages but the system prompt, as SQLite holds them (role, content, tool_calls, tool_call_id)."""
    with contextlib.closing(sqlite3.connect(home / "state.db")) as conn:
        return conn.execute(
            "SELECT role, content, tool_calls, tool_call_id FROM messages WHERE session_id = ? AND role != 'system'"
            " ORDER BY id",
            (session_id,),
        ).fetchall()
