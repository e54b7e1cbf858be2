"""The daemon's web tools find Hermes's SEARXNG_URL in HERMES_ACTORS_HOME/.env, as Hermes finds it in its own."""

from __future__ import annotations

from pathlib import Path

from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, run_cli


class TestWebKeysFromDotEnv:
    """A search backend configured only in .env offers web_search to the model."""

    def test_searxng_url_in_dot_env(self, home: Path, provider: ScriptedProviderProcess) -> None:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        (home / ".env").write_text("SEARXNG_URL=http://127.0.0.1:9\n")
        provider.reset()
        daemon = DaemonProcess(home).start()
        try:
            provider.push({"text": "Hi."})
            result = run_cli(home, "chat", "-q", "hello", *provider.chat_flags(), timeout=60)
            assert result.returncode == 0, result.stderr
            offered = {tool["function"]["name"] for tool in provider.requests()[-1]["body"]["tools"]}
            assert {"web_search", "web_extract"} <= offered
        finally:
            daemon.stop()
