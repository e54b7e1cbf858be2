"""The API in a real ``hermes-actors daemon`` process: key from the environment, shown by ``status``, SIGTERM
closes the port; an unsafe ``auth_disabled`` refused by ``config check`` and by the daemon's start."""

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
from tests.api.harness import ISOLATED_TOOLS, KEY, write_home

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serving_or_exited(url: str, process: subprocess.Popen[bytes]) -> int | None:
    """None once the daemon's API answers, or the daemon's exit status if it ends first."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx2.get(f"{url}/health", timeout=1).status_code == 200:
                return None
        except httpx2.HTTPError:
            time.sleep(0.05)
    if process.poll() is None:
        raise AssertionError("the daemon's API neither came up nor exited")
    return process.returncode


def _wait_healthy(url: str, process: subprocess.Popen[bytes]) -> None:
    status = _serving_or_exited(url, process)
    assert status is None, f"the daemon's API did not come up (exit status {status})"


def _home_on_port(base: Path, provider: ScriptedProvider, api_yaml: str, port: int) -> Path:
    home, _ = write_home(base, provider, api_yaml, env_key=None)
    config = (home / "config.yaml").read_text().replace("    port: 0\n", f"    port: {port}\n")
    (home / "config.yaml").write_text(config)
    return home


def _start_daemon(home: Path, log_path: Path, **env: str) -> subprocess.Popen[bytes]:
    """``hermes-actors daemon`` on ``home``, its stderr in ``log_path``; no API key unless ``env`` holds one."""
    environ = {k: v for k, v in os.environ.items() if k != "API_SERVER_KEY"}
    environ.update(HERMES_ACTORS_HOME=str(home), **env)
    with log_path.open("wb") as log_file:
        return subprocess.Popen(
            [sys.executable, "-m", "cli", "daemon"],
            cwd=REPO, env=environ, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file,
        )


def _status(home: Path) -> str:
    """What ``hermes-actors status`` prints for ``home``."""
    result = subprocess.run(
        [sys.executable, "-m", "cli", "status"], cwd=REPO, env={**os.environ, "HERMES_ACTORS_HOME": str(home)},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then the exit status (killed if it does not end)."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


class TestDaemonProcess:
    """platforms.api_server.enabled starts the API with the daemon; SIGTERM stops it cleanly."""

    async def test_serves_and_stops(self, provider: ScriptedProvider) -> None:
        """A completion through the sync SDK in a thread; after SIGTERM the exit status is 0 and the port is closed."""
        port = _free_port()
        provider.push({"text": "from a real daemon"})
        with tempfile.TemporaryDirectory(prefix="ha-") as base:
            home = _home_on_port(Path(base), provider, "", port)
            log_path = Path(base) / "daemon.log"
            process = _start_daemon(home, log_path, API_SERVER_KEY=KEY)
            url = f"http://127.0.0.1:{port}"
            try:
                await trio.to_thread.run_sync(_wait_healthy, url, process)

                def complete() -> str:
                    import openai

                    with openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0) as client:
                        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
                        return reply.choices[0].message.content or ""

                assert await trio.to_thread.run_sync(complete) == "from a real daemon"
                shown = await trio.to_thread.run_sync(_status, home)
                status = await trio.to_thread.run_sync(_stop, process)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                log = log_path.read_text()
        assert status == 0, log
        assert "api: serving on" in log and KEY not in log
        # status names the API, where it listens and what it serves (it said nothing of it).
        assert f"HTTP API: http://127.0.0.1:{port}; 0 requests in flight, 0 of 0 runs active" in shown, shown
        with socket.socket() as sock:
            assert sock.connect_ex(("127.0.0.1", port)) != 0


#: Serving without a key, as a config.yaml's lines below ``platforms.api_server``.
NO_KEY = "    auth_disabled: true\n"


class TestAuthDisabledRefused:
    """auth_disabled while tools reach the host's loopback: config check and the daemon's start exit 2, saying why."""

    async def test_config_check(self, provider: ScriptedProvider, tmp_path: Path) -> None:
        """``config check`` exits 2 naming the setting, the reason and both ways out."""
        home = _home_on_port(tmp_path, provider, NO_KEY, 0)
        environ = dict(os.environ, HERMES_ACTORS_HOME=str(home))
        result = await trio.to_thread.run_sync(
            lambda: subprocess.run(
                [sys.executable, "-m", "cli", "config", "check"], cwd=REPO, env=environ,
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
            )
        )
        assert result.returncode == 2, result.stdout + result.stderr
        assert "platforms.api_server.auth_disabled: true is refused" in result.stderr
        assert "API_SERVER_KEY" in result.stderr and "sandbox.network: false" in result.stderr

    async def test_daemon_start(self, provider: ScriptedProvider, tmp_path: Path) -> None:
        """The daemon exits 2 before serving; the port stays closed."""
        port = _free_port()
        home = _home_on_port(tmp_path, provider, NO_KEY, port)
        process = _start_daemon(home, tmp_path / "daemon.log")
        try:
            status = await trio.to_thread.run_sync(_serving_or_exited, f"http://127.0.0.1:{port}", process)
        finally:
            if process.poll() is None:
                await trio.to_thread.run_sync(_stop, process)
        log = (tmp_path / "daemon.log").read_text()
        assert status == 2, log
        assert "cannot start:" in log and "auth_disabled: true is refused" in log and "sandbox.max_mode" in log

    async def test_isolated_tools_allow_it(self, provider: ScriptedProvider, tmp_path: Path) -> None:
        """network: false and max_mode below full-access: the daemon serves without a key."""
        port = _free_port()
        home = _home_on_port(tmp_path, provider, NO_KEY + ISOLATED_TOOLS, port)
        url = f"http://127.0.0.1:{port}"
        process = _start_daemon(home, tmp_path / "daemon.log")
        try:
            await trio.to_thread.run_sync(_wait_healthy, url, process)
            models = await trio.to_thread.run_sync(lambda: httpx2.get(f"{url}/v1/models", timeout=10))
            status = await trio.to_thread.run_sync(_stop, process)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert models.status_code == 200, models.text
        assert status == 0, (tmp_path / "daemon.log").read_text()
