"""Events of a burst reach an attached client whole and in order, several frames to a write."""

from __future__ import annotations

from typing import Any

import trio

from actors.platform.daemon.control.connection import Connection
from messages import control as c
from messages.codec import FrameBuffer
from messages.events import TextDelta
from providers.scripted import serve_scripted_provider

from .test_hostile_session import CLIENT, DAEMON, _daemon, _is_reply, _request, _turn_finished

WORDS = [f"w{n}" for n in range(300)]


def _connections(tree: Any) -> list[str]:
    """Paths of the control connections in a tree."""
    return [snapshot.path for snapshot in tree.walk() if snapshot.kind == "connection"]


class TestEventBatching:
    """A streamed reply of 300 chunks arrives complete and ordered, in fewer writes than frames."""

    async def test_burst_is_batched(self) -> None:
        async with serve_scripted_provider([{"text": " ".join(WORDS)}]) as provider, _daemon(provider) as (client, _, work):
            await client.send(_request(c.CreateSession(
                "create", cwd=str(work), model="scripted-model", provider="custom", base_url=provider.base_url,
            )))
            session_id = (await client.until(_is_reply("create"))).session_id
            await client.send(_request(c.Attach("attach", session_id)))
            await client.until(_is_reply("attach"))
            await client.send(_request(c.SendMessage("send", session_id, "talk")))
            finished = await client.until(_turn_finished(session_id))
            assert finished.final_text == " ".join(WORDS)
            deltas = [m for m in client.received if isinstance(m, TextDelta)]
            assert "".join(d.text for d in deltas) == " ".join(WORDS)
            assert [d.seq for d in deltas] == sorted(d.seq for d in deltas)

            await client.send(_request(c.Tree("tree")))
            (path,) = _connections((await client.until(_is_reply("tree"))).tree)
            await client.send(_request(c.Inspect("inspect", path)))
            details = (await client.until(_is_reply("inspect"))).snapshot.details
            assert details["frames_sent"] >= len(deltas) and 0 < details["writes"] <= details["frames_sent"]


class TestQueuedFramesShareAWrite:
    """Frames queued while the writer was busy go out together, at most 64 to a write, in order."""

    async def test_hundred_queued_frames_in_two_writes(self) -> None:
        ours, theirs = trio.socket.socketpair()
        connection = Connection(
            trio.SocketStream(ours), service=None, client_codec=CLIENT, daemon_codec=DAEMON,  # type: ignore[arg-type]  # batching frames needs no service; the test sends none its way
            buffer=200, connections=lambda: 1, frame_timeout=10.0,
        )
        for n in range(100):
            connection.send(c.Ok(f"r{n}"))
        connection.close_with("done", "test over")
        with trio.CancelScope() as done:
            await connection._write_loop(done)
        ours.close()
        received = FrameBuffer(1 << 20)
        reader = trio.SocketStream(theirs)
        with theirs:
            while data := await reader.receive_some(65536):
                received.feed(data)
        messages = [DAEMON.decode(frame) for frame in received.frames()]
        assert [m.request_id for m in messages[:100]] == [f"r{n}" for n in range(100)]
        assert isinstance(messages[100], c.ErrorReply)
        assert (connection.writes, connection.frames_sent) == (2, 100)
