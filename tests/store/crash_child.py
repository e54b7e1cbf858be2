"""Child process for the crash test: appends forever from several tasks, printing each committed id.

Usage: python -m tests.store.crash_child DB_PATH
Prints "ready", then "<task> <n>" after each append of message n by that task returned.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from store import SessionMeta, SqliteSessionStore


async def main(path: Path) -> None:
    async with SqliteSessionStore.open(path) as store:
        await store.create_session(SessionMeta(id="crash"))
        print("ready", flush=True)

        async def writer(task: int) -> None:
            n = 0
            while True:
                await store.append("crash", [{"role": "user", "content": f"{task} {n}", "pad": "x" * 200}])
                print(f"{task} {n}", flush=True)
                n += 1

        async with trio.open_nursery() as nursery:
            for task in range(4):
                nursery.start_soon(writer, task)


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]))
