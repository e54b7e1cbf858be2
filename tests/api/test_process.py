"""The API in a real ``hermes-actors daemon`` process: key from the environment, SIGTERM closes the port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
import trio

from providers.scripted import ScriptedProvider
from tests.api.harness import KEY, write_home

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx2.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            time.sleep(0.05)
    raise AssertionError(f"the daemon's API did not come up (exit status {process.poll()})")


class TestDaemonProcess:
    """platforms.api_server.enabled starts the API with the daemon; SIGTERM stops it cleanly."""

    async def test_serves_and_stops(self, provider: ScriptedProvider) -> None:
        """A completion through the sync SDK in a thread; after SIGTERM the exit status is 0 and the port is closed."""
        port = _free_port()
        provider.push({"text": "from a real daemon"})
        with tempfile.TemporaryDirectory(prefix="ha-") as base:
            home, _ = write_home(Path(base), provider, "", env_key=None)
            config = (home / "config.yaml").read_text().replace("    port: 0\n", f"    port: {port}\n")
            (home / "config.yaml").write_text(config)
            env = dict(os.environ, HERMES_ACTORS_HOME=str(home), API_SERVER_KEY=KEY)
            log_path = Path(base) / "daemon.log"
            with log_path.open("wb") as log_file:
                process = subprocess.Popen(
                    [sys.executable, "-m", "actors.platform", "daemon"],
                    cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file,
                )
            url = f"http://127.0.0.1:{port}"
            try:
                await trio.to_thread.run_sync(_wait_healthy, url, process)

                def complete() -> str:
                    import openai

                    with openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0) as client:
                        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
                        return reply.choices[0].message.content or ""

                assert await trio.to_thread.run_sync(complete) == "from a real daemon"
                process.send_signal(signal.SIGTERM)
                status = await trio.to_thread.run_sync(process.wait, 20)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                log = log_path.read_text()
        assert status == 0, log
        assert "api: serving on" in log and KEY not in log
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0
