"""The spawn threads: forks under way at once, every thread gone after close, a jail's command built on them."""

from __future__ import annotations

import os
import subprocess
import threading
import uuid
from collections.abc import Mapping

import pytest
import trio

from tools.jail._spawner import LauncherClosed, Spawner


class _StuckProgram(os.PathLike[str]):
    """``true``, once ``release`` is set: Popen reads the program's path in its own thread, before the fork;
    ``entered`` says that it has begun."""

    def __init__(self, entered: threading.Event, release: threading.Event) -> None:
        self._entered = entered
        self._release = release

    def __fspath__(self) -> str:
        self._entered.set()
        self._release.wait(10)
        return "true"


def _threads_named(name: str) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == name]


class TestSpawner:
    """Several forks are under way at once; close ends every thread."""

    async def test_a_stuck_spawn_does_not_hold_up_the_next(self) -> None:
        """One spawn stuck in its thread until the test says so; another goes through meanwhile (with one
        thread it would wait until the first gave up)."""
        spawner = Spawner(f"hx-spawner-{uuid.uuid4().hex}", threads=2)
        spawner.start()
        entered, release = threading.Event(), threading.Event()
        started: list[subprocess.Popen[bytes]] = []
        try:

            async def stuck() -> None:
                started.append(await spawner.popen([_StuckProgram(entered, release)]))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(stuck)
                assert await trio.to_thread.run_sync(entered.wait, 10)
                # A spawn's wait is shielded: with one thread this returns only once the stuck one gave up.
                quick = await spawner.popen(["true"])
                assert not started, "the stuck spawn finished first: the quick one waited behind it"
                release.set()
            assert await trio.to_thread.run_sync(quick.wait) == 0
            assert await trio.to_thread.run_sync(started[0].wait) == 0
        finally:
            release.set()
            spawner.close()

    async def test_close_ends_every_thread(self) -> None:
        name = f"hx-spawner-{uuid.uuid4().hex}"
        spawner = Spawner(name, threads=3)
        spawner.start()
        assert len(_threads_named(name)) == 3
        process = await spawner.popen(["true"])
        spawner.close()
        for thread in _threads_named(name):
            await trio.to_thread.run_sync(thread.join, 20)
        assert _threads_named(name) == []
        assert await trio.to_thread.run_sync(process.wait) == 0
        with pytest.raises(LauncherClosed):
            await spawner.popen(["true"])


class TestRewrite:
    """A rewrite runs on the spawn thread just before the fork: what it returns starts, what it raises is raised."""

    async def test_the_rewritten_command_starts_and_is_built_on_the_spawn_thread(self) -> None:
        name = f"hx-spawner-{uuid.uuid4().hex}"
        spawner = Spawner(name)
        spawner.start()
        seen: list[tuple[str, list[str], dict[str, str]]] = []

        def rewrite(argv: list[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
            seen.append((threading.current_thread().name, argv, dict(env)))
            return ["sh", "-c", 'exit "$CODE"'], {**env, "CODE": "7"}

        try:
            process = await spawner.popen(["false"], rewrite=rewrite, env={"PATH": os.defpath})
            assert await trio.to_thread.run_sync(process.wait) == 7
            assert seen == [(name, ["false"], {"PATH": os.defpath})]
        finally:
            spawner.close()

    async def test_an_error_of_the_rewrite_is_raised_and_the_spawner_goes_on(self) -> None:
        spawner = Spawner(f"hx-spawner-{uuid.uuid4().hex}")
        spawner.start()

        def refuse(argv: list[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
            raise FileNotFoundError(2, "No such directory", "/nowhere")

        try:
            with pytest.raises(FileNotFoundError) as raised:
                await spawner.popen(["true"], rewrite=refuse, env={})
            assert raised.value.filename == "/nowhere"
            assert await trio.to_thread.run_sync((await spawner.popen(["true"])).wait) == 0
        finally:
            spawner.close()
