"""Cancellation at awkward moments: the API actor or the daemon stopping mid-stream leaks nothing."""

from __future__ import annotations

import socket

import httpx2
import trio

from providers.scripted import ScriptedProvider
from tests.api.harness import KEY, ApiDaemon, api_daemon, wait_until

SLOW = {"text": " ".join(f"w{i}" for i in range(200)), "chunk_delay": 0.05}


async def _read_first_delta(api: ApiDaemon, http: httpx2.AsyncClient, got_first: trio.Event, outcome: list[str]) -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    try:
        async with http.stream("POST", f"{api.url}/v1/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if '"content":"w' in line:
                    got_first.set()
        outcome.append("ended")
    except httpx2.HTTPError as exc:
        outcome.append(type(exc).__name__)


def _port_closed(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.socket() as sock:
        return sock.connect_ex((host, int(port))) != 0


class TestApiActorStopped:
    """Killing platform/api mid-stream closes its ephemeral session; the supervisor restarts the API."""

    async def test_kill_mid_stream(self, api: ApiDaemon) -> None:
        """The stream ends, the provider call is abandoned, the session is gone; a new API instance serves."""
        api.provider.push(SLOW)
        old = api.api_actor()
        old_url = old.statistics().details["urls"][0]
        got_first = trio.Event()
        outcome: list[str] = []
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_read_first_delta, api, http, got_first, outcome)
                with trio.fail_after(10):
                    await got_first.wait()
                old.stop("test: kill the API mid-stream", requested_by="test")
                await old.wait_stopped()
        assert outcome, "the client's stream did not end"
        with trio.fail_after(10):
            await api.provider.wait_disconnects(1)
        await wait_until(lambda: not api.session_paths())
        await wait_until(lambda: "platform/api" in api.system.registry and api.api_actor() is not old)
        new_url = api.api_actor().statistics().details["urls"][0]
        assert _port_closed(old_url) or new_url == old_url
        async with httpx2.AsyncClient() as http:
            assert (await http.get(f"{new_url}/health")).status_code == 200


class TestDaemonStopped:
    """Stopping the daemon during a stream and a run ends both and closes the port."""

    async def test_stop_with_work_in_flight(self, provider: ScriptedProvider) -> None:
        """The daemon stops within its bound; the client's stream ends; nothing listens any more."""
        provider.push(SLOW, SLOW)
        got_first = trio.Event()
        outcome: list[str] = []
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}) as http:
            async with trio.open_nursery() as nursery:
                async with api_daemon(provider, "daemon:\n  shutdown_timeout_seconds: 5.0\n") as api:
                    url = api.url
                    run = await http.post(f"{url}/v1/runs", json={"input": "long run"})
                    assert run.status_code == 202
                    nursery.start_soon(_read_first_delta, api, http, got_first, outcome)
                    with trio.fail_after(10):
                        await got_first.wait()
                    stopping_at = trio.current_time()
                assert trio.current_time() - stopping_at < 5.0
        assert outcome, "the client's stream did not end"
        assert _port_closed(url)
