"""Crash consistency: kill -9 of a writing process loses nothing that was reported committed."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import trio

from store import SqliteSessionStore

ROOT = Path(__file__).resolve().parents[2]


async def read_lines(stream: trio.abc.ReceiveStream, lines: list[str], enough: trio.Event, want: int) -> None:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        lines.extend(line.decode() for line in complete)
        if len(lines) >= want:
            enough.set()


class TestKillNine:
    """Every append that returned before SIGKILL is in the reopened database, which is intact."""

    async def test_kill_while_appending(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        lines: list[str] = []
        enough = trio.Event()
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tests.store.crash_child", str(path)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        try:
            async with trio.open_nursery() as nursery:
                assert process.stdout is not None
                nursery.start_soon(read_lines, process.stdout, lines, enough, 401)
                with trio.fail_after(60):
                    await enough.wait()
                process.send_signal(signal.SIGKILL)
                with trio.fail_after(10):
                    await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == -signal.SIGKILL
        assert lines[0] == "ready"
        reported = {line for line in lines[1:] if line}
        assert len(reported) >= 400

        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for table in ("messages_fts", "messages_tri"):
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        conn.close()
        async with SqliteSessionStore.open(path) as store:
            stored = {m["content"] for m in (await store.load("crash")).messages}
            assert reported <= stored
            assert (await store.get_session("crash")).message_count == len(stored)
            # Each task's messages are a gap-free prefix: no transaction was half-applied.
            for task in range(4):
                numbers = sorted(int(c.split()[1]) for c in stored if c.split()[0] == str(task))
                assert numbers == list(range(len(numbers)))
