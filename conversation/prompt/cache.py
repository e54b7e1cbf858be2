"""System prompts built lately, shared by the ephemeral sessions that would build the same one.

An ephemeral session (one HTTP API completion) lives for one request, and a busy API opens dozens a
second with the same prompt: the same spec, the same files. Building it reads SOUL.md, the memory
files, the context files and the skills in a worker thread each time; here it is built once and
reused for :data:`PROMPT_MAX_AGE` seconds, so a change to those files reaches new completions that
much later at most. Requests that miss together wait for one build. Sessions that live longer build
their own prompt, as before: theirs is frozen for their whole life anyway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable

import trio

__all__ = ["MAX_CACHED_PROMPTS", "PROMPT_MAX_AGE", "PromptCache"]

#: How long a built prompt is reused (seconds).
PROMPT_MAX_AGE = 2.0
#: Distinct prompts kept (as many as the specs in use: directories, models, toolsets).
MAX_CACHED_PROMPTS = 32


class _Build:
    """One build of a prompt, which requests that miss meanwhile wait for."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.prompt: str | None = None


class PromptCache:
    """Prompts by what they depend on, each reused for ``max_age`` seconds of Trio's clock.

    Args:
        max_age: how long a built prompt is reused.
    """

    def __init__(self, max_age: float = PROMPT_MAX_AGE) -> None:
        self.max_age = max_age
        self._built: dict[Hashable, tuple[float, str]] = {}
        self._building: dict[Hashable, _Build] = {}

    async def get(self, key: Hashable, build: Callable[[], Awaitable[str]]) -> str:
        """The prompt for ``key``: built by ``build`` unless one built less than ``max_age`` ago exists.

        Raises:
            whatever ``build`` raises (the next request builds anew).
        """
        while True:
            known = self._built.get(key)
            if known is not None and trio.current_time() - known[0] < self.max_age:
                return known[1]
            pending = self._building.get(key)
            if pending is None:
                break
            await pending.done.wait()
            if pending.prompt is not None:
                return pending.prompt
        self._building[key] = pending = _Build()
        try:
            started = trio.current_time()
            pending.prompt = prompt = await build()
            if len(self._built) >= MAX_CACHED_PROMPTS:
                self._built.clear()
            # Aged from when the build began: the files were read after that.
            self._built[key] = (started, prompt)
            return prompt
        finally:
            del self._building[key]
            pending.done.set()
