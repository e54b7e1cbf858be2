"""An in-process daemon with the HTTP API enabled, its provider the scripted server,
all over real loopback sockets; and the official openai SDK clients pointed at it."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx2
import openai
import trio

from control.client import ControlClient
from actors.platform.daemon import serve_daemon
from control.paths import DaemonPaths
from config.loader import load_config
from messages import control as c
from providers.scripted import ScriptedProvider
from supervisor import ActorSystem

KEY = "test-key-0123456789abcdef"
#: The sandbox under which the API may serve without a key: jails on their own loopback, no full-access session.
ISOLATED_TOOLS = "sandbox:\n  network: false\n  max_mode: workspace-write\n"


@attrs.define
class ApiDaemon:
    """A running daemon's API: its URL, its actor tree, the provider behind it."""

    system: ActorSystem
    url: str
    home: Path
    workdir: Path
    provider: ScriptedProvider

    @property
    def base_url(self) -> str:
        """What the openai SDK takes."""
        return self.url + "/v1"

    def client(self, key: str | None = KEY, **kwargs: Any) -> openai.AsyncOpenAI:
        """An async openai client on its own httpx2 client (close it with ``await client.close()``)."""
        return openai.AsyncOpenAI(
            base_url=self.base_url, api_key=key or "none", max_retries=0, http_client=httpx2.AsyncClient(), **kwargs
        )

    def sync_client(self, key: str | None = KEY) -> openai.OpenAI:
        """A sync openai client (use it from a thread)."""
        return openai.OpenAI(base_url=self.base_url, api_key=key or "none", max_retries=0, http_client=httpx2.Client())

    def http(self) -> httpx2.AsyncClient:
        """A raw HTTP client on the API (for headers, SSE and error bodies)."""
        return httpx2.AsyncClient(base_url=self.url, headers={"Authorization": f"Bearer {KEY}"})

    def api_actor(self) -> Any:
        """The ``platform/api`` actor's handle."""
        return self.system.lookup("platform/api")

    def session_paths(self) -> list[str]:
        """Paths of the live sessions."""
        return [p for p in self.system.registry.paths() if p.startswith("sessions/session:") and p.count("/") == 1]


def write_home(base: Path, provider: ScriptedProvider, api_yaml: str, env_key: str | None) -> tuple[Path, Path]:
    """A HERMES_ACTORS_HOME whose config points at ``provider`` and enables the API (rewritten
    when ``base`` holds one already, as for a restart)."""
    home = base / "home"
    home.mkdir(mode=0o700, exist_ok=True)
    workdir = base / "work"
    workdir.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(
        "model:\n"
        "  default: scripted-model\n"
        "  provider: custom\n"
        f"  base_url: {provider.base_url}\n"
        "  api_mode: chat_completions\n"
        "platforms:\n"
        "  api_server:\n"
        "    enabled: true\n"
        "    port: 0\n"
        f"    cwd: {workdir}\n" + api_yaml
    )
    if env_key is not None:
        (home / ".env").write_text(f"API_SERVER_KEY={env_key}\n")
    return home, workdir


@asynccontextmanager
async def api_daemon(
    provider: ScriptedProvider, api_yaml: str = "", *, env_key: str | None = KEY, base: Path | None = None
) -> AsyncIterator[ApiDaemon]:
    """Run the daemon (store, providers, sessions, control, platform/api) for the block, in a
    fresh temporary directory or in ``base`` (which a restart reuses)."""
    with tempfile.TemporaryDirectory(prefix="ha-") as fresh:
        home, workdir = write_home(base or Path(fresh), provider, api_yaml, env_key)
        paths = DaemonPaths(home)

        async def daemon(task_status: trio.TaskStatus[ActorSystem]) -> None:
            await serve_daemon(paths, load_config(home), task_status=task_status)

        async with trio.open_nursery() as nursery:
            system = await nursery.start(daemon)
            url = system.lookup("platform/api").statistics().details["urls"][0]
            try:
                yield ApiDaemon(system, url, home, workdir, provider)
            finally:
                await trio.to_thread.run_sync(_stop, paths)


def _stop(paths: DaemonPaths) -> None:
    with ControlClient.connect(paths) as client:
        client.request(c.StopDaemon(client.next_id()))


def stored_texts(home: Path) -> list[tuple[str, str, str]]:
    """Every stored message as (session id, role, content), straight from SQLite (call in a thread)."""
    import sqlite3

    from store.sqlite import DB_FILENAME

    conn = sqlite3.connect(f"file:{home / DB_FILENAME}?mode=ro", uri=True)
    try:
        return [(s, r, c or "") for s, r, c in conn.execute("SELECT session_id, role, content FROM messages ORDER BY id")]
    finally:
        conn.close()


def stored_sessions(home: Path) -> list[tuple[str, str, str | None, int, int]]:
    """Every stored session as (id, source, end reason, tokens in, tokens out), straight from SQLite (call in a thread)."""
    import sqlite3

    from store.sqlite import DB_FILENAME

    conn = sqlite3.connect(f"file:{home / DB_FILENAME}?mode=ro", uri=True)
    try:
        query = "SELECT id, source, end_reason, tokens_in, tokens_out FROM sessions WHERE kind = 'session' ORDER BY rowid"
        return list(conn.execute(query))
    finally:
        conn.close()


def sse_frames(text: str) -> list[dict[str, str]]:
    """Parse an SSE body into frames ({field: value})."""
    frames = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        frame: dict[str, str] = {}
        for line in block.splitlines():
            field, _, value = line.partition(": ")
            frame[field] = value
        frames.append(frame)
    return frames


async def wait_until(predicate: Any, seconds: float = 10.0) -> None:
    """Poll ``predicate`` (a cheap in-process check) until true, failing after ``seconds``."""
    with trio.fail_after(seconds):
        while not predicate():
            await trio.sleep(0.01)
