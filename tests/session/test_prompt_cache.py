"""The prompt cache ephemeral sessions share: one build per spec at a time, reused for its maximum age."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from conversation.prompt.cache import PromptCache


class _Builder:
    """Counts its builds; each one takes a second of (autojumped) time and names its number."""

    def __init__(self) -> None:
        self.builds = 0

    async def __call__(self) -> str:
        self.builds += 1
        number = self.builds
        await trio.sleep(1)
        return f"prompt {number}"


class TestReuse:
    """A prompt is reused until it is older than the maximum age, counted from when its build began."""

    async def test_reused_then_rebuilt(self, autojump_clock: trio.testing.MockClock) -> None:
        cache, build = PromptCache(max_age=5.0), _Builder()
        assert await cache.get("spec", build) == "prompt 1"
        await trio.sleep(3.9)  # 4.9 s after the build began
        assert await cache.get("spec", build) == "prompt 1"
        await trio.sleep(0.2)
        assert await cache.get("spec", build) == "prompt 2"
        assert build.builds == 2

    async def test_keys_apart(self, autojump_clock: trio.testing.MockClock) -> None:
        cache, build = PromptCache(max_age=10.0), _Builder()
        assert [await cache.get(key, build) for key in ("a", "b", "a")] == ["prompt 1", "prompt 2", "prompt 1"]


class TestConcurrentMisses:
    """Requests that miss together wait for one build; a failed build is not kept."""

    async def test_one_build_for_many(self, autojump_clock: trio.testing.MockClock) -> None:
        cache, build = PromptCache(), _Builder()
        got: list[str] = []

        async def ask() -> None:
            got.append(await cache.get("spec", build))

        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(ask)
        assert got == ["prompt 1"] * 20 and build.builds == 1

    async def test_failure_not_kept(self, autojump_clock: trio.testing.MockClock) -> None:
        cache = PromptCache()

        async def broken() -> str:
            raise OSError("SOUL.md unreadable")

        with pytest.raises(OSError):
            await cache.get("spec", broken)
        assert await cache.get("spec", _Builder()) == "prompt 1"
