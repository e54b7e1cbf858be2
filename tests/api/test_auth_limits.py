"""Bearer auth, the start-up safety check, the concurrency caps and the body cap."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
import trio
import trio.testing

from actors.errors import ActorError
from actors.platform.api import auth as auth_module
from actors.platform.api.auth import Authenticator, is_loopback
from actors.platform.api.errors import ApiStartRefused, KeyBackOff, Unauthorized
from actors.platform.api.throttle import KeyThrottle
from config.api import ApiServerConfig
from config.loader import Config, ConfigError, load_config
from providers.scripted import ScriptedProvider
from tests.api.harness import ISOLATED_TOOLS, KEY, ApiDaemon, api_daemon, wait_until

MODEL = "scripted-model"
USER = [{"role": "user", "content": "hi"}]


class TestBearerAuth:
    """Every endpoint but health needs the key, compared in constant time."""

    async def test_missing_key(self, api: ApiDaemon) -> None:
        """No Authorization header: 401 authentication_error in OpenAI's error shape."""
        async with api.http() as http:
            response = await http.get("/v1/models", headers={"Authorization": ""})
        assert response.status_code == 401
        error = response.json()["error"]
        assert error["type"] == "authentication_error" and error["code"] == "invalid_api_key"

    async def test_wrong_key_via_sdk(self, api: ApiDaemon) -> None:
        """The SDK raises AuthenticationError; the key is not echoed back."""
        async with api.client(key="wrong-key-wrong-key-wrong") as client:
            with pytest.raises(openai.AuthenticationError) as caught:
                await client.chat.completions.create(model=MODEL, messages=USER)
        assert "wrong-key" not in str(caught.value)
        assert api.provider.requests == []

    async def test_check_rules(self) -> None:
        """Bearer scheme, exact key; anything else is Unauthorized."""
        auth = Authenticator(KEY, KeyThrottle(free=100))
        auth.check(f"Bearer {KEY}", "a")
        auth.check(f"bearer {KEY}", "a")
        for bad in (None, "", KEY, f"Basic {KEY}", f"Bearer {KEY}x", "Bearer "):
            with pytest.raises(Unauthorized):
                auth.check(bad, "a")


class TestWrongKeyBackOff:
    """A client guessing the bearer key is slowed down as at the dashboard's login form."""

    async def test_right_key_waits_after_wrong_ones(self, autojump_clock: trio.testing.MockClock) -> None:
        """Three wrong keys are free; the fourth starts a wait in which even the right key is not checked;
        other clients are not held up; a missing header is not a guess."""
        auth = Authenticator(KEY, KeyThrottle(free=3, first=1.0))
        for _ in range(4):
            with pytest.raises(Unauthorized):
                auth.check("Bearer wrong-key-0123456789", "guesser")
        with pytest.raises(Unauthorized):
            auth.check(None, "guesser")
        with pytest.raises(KeyBackOff) as waited:
            auth.check(f"Bearer {KEY}", "guesser")
        assert waited.value.headers == {"Retry-After": "1"}
        auth.check(f"Bearer {KEY}", "someone else")
        await trio.sleep(1.0)
        auth.check(f"Bearer {KEY}", "guesser")
        assert auth.throttle.wait_left("guesser") == 0.0

    async def test_sdk_sees_429_with_retry_after(
        self, provider: ScriptedProvider, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Through the openai SDK: four wrong keys are 401s, then the right key gets a 429 with Retry-After,
        unchecked; the log says so without either key."""
        monkeypatch.setattr(auth_module, "KeyThrottle", functools.partial(KeyThrottle, first=30.0))
        caplog.set_level(logging.INFO)
        wrong = "wrong-key-0123456789abcdefgh"
        async with api_daemon(provider) as api:
            async with api.client(key=wrong) as client:
                for _ in range(4):
                    with pytest.raises(openai.AuthenticationError):
                        await client.models.list()
            async with api.client() as client:
                with pytest.raises(openai.RateLimitError) as waited:
                    await client.models.list()
        assert 1 <= int(waited.value.response.headers["retry-after"]) <= 30
        assert waited.value.code == "too_many_wrong_keys"
        assert "its next key waits 30.0 s" in caplog.text and "back-off are left" in caplog.text
        assert KEY not in caplog.text and wrong not in caplog.text


class TestStartupSafety:
    """Without a 16-character key the API refuses to start, unless loopback with auth disabled."""

    def test_rules(self) -> None:
        """Short or missing key refused; auth_disabled only on loopback; the environment key wins."""
        with pytest.raises(ApiStartRefused, match="needs a key"):
            Authenticator.from_config(ApiServerConfig(), {})
        with pytest.raises(ApiStartRefused, match="too short"):
            Authenticator.from_config(ApiServerConfig(), {"API_SERVER_KEY": "short"})
        with pytest.raises(ApiStartRefused, match="loopback"):
            Authenticator.from_config(ApiServerConfig(host="0.0.0.0", auth_disabled=True), {})
        assert not Authenticator.from_config(ApiServerConfig(auth_disabled=True), {}).enabled
        assert Authenticator.from_config(ApiServerConfig(key="k" * 16), {}).enabled
        env_wins = Authenticator.from_config(ApiServerConfig(key="k" * 16), {"API_SERVER_KEY": KEY})
        assert env_wins.accepts(KEY) and not env_wins.accepts("k" * 16)
        assert is_loopback("::1") and is_loopback("localhost") and not is_loopback("10.0.0.1")

    async def test_daemon_refuses_with_short_key(self, provider: ScriptedProvider) -> None:
        """The daemon does not come up with a short key; the error names the reason."""
        with pytest.raises(ExceptionGroup) as caught:
            async with api_daemon(provider, env_key="short"):
                pass  # pragma: no cover - must not start
        refused = caught.value.subgroup(lambda exc: isinstance(exc, ActorError) and "too short" in str(exc))
        assert refused is not None

    async def test_loopback_without_auth(self, provider: ScriptedProvider) -> None:
        """auth_disabled on loopback, with tools kept off the host's loopback: no key needed."""
        provider.push({"text": "open door"})
        async with api_daemon(provider, "    auth_disabled: true\n" + ISOLATED_TOOLS, env_key=None) as api:
            async with api.client(key=None) as client:
                reply = await client.chat.completions.create(model=MODEL, messages=USER)
        assert reply.choices[0].message.content == "open door"


class TestAuthDisabledNeedsIsolatedTools:
    """auth_disabled is a configuration error while a tool's process can reach the host's loopback."""

    def _load(self, home: Path, api_yaml: str, sandbox_yaml: str = "") -> Config:
        (home / "config.yaml").write_text("platforms:\n  api_server:\n" + api_yaml + sandbox_yaml)
        return load_config(home)

    @pytest.mark.parametrize(
        ("sandbox_yaml", "reasons"),
        [
            ("", ["sandbox.network is true", "sandbox.max_mode allows full-access"]),
            ("sandbox:\n  network: false\n", ["sandbox.max_mode allows full-access"]),
            ("sandbox:\n  max_mode: workspace-write\n", ["sandbox.network is true"]),
        ],
        ids=["defaults", "full-access-allowed", "jails-on-host-network"],
    )
    def test_refused(self, tmp_path: Path, sandbox_yaml: str, reasons: list[str]) -> None:
        """Jails on the host's network, or full-access allowed: refused, saying why and what to set instead."""
        with pytest.raises(ConfigError) as caught:
            self._load(tmp_path, "    enabled: true\n    auth_disabled: true\n", sandbox_yaml)
        message = str(caught.value)
        assert message.startswith(f"{tmp_path / 'config.yaml'}: platforms.api_server.auth_disabled: true is refused")
        for reason in reasons:
            assert reason in message
        assert "API_SERVER_KEY" in message and "platforms.api_server.key" in message
        assert "sandbox.network: false" in message and "a full-access session always reaches loopback" in message

    def test_a_key_even_with_auth_disabled_is_refused(self, tmp_path: Path) -> None:
        """A key does not make auth_disabled safe: the key would be ignored."""
        with pytest.raises(ConfigError, match="auth_disabled: true is refused"):
            self._load(tmp_path, f"    enabled: true\n    auth_disabled: true\n    key: {KEY}\n")

    def test_allowed(self, tmp_path: Path) -> None:
        """Jails on their own loopback and no full-access: allowed; so is auth_disabled on a disabled API."""
        config = self._load(tmp_path, "    enabled: true\n    auth_disabled: true\n", ISOLATED_TOOLS)
        assert config.platforms.api_server.auth_disabled and not config.sandbox.network
        assert self._load(tmp_path, "    auth_disabled: true\n").platforms.api_server.auth_disabled


class TestConcurrencyCap:
    """One more than max_concurrent_runs (or the daemon's turn cap) gets 429 with Retry-After: 1."""

    async def _hold_one_and_try_another(self, api: ApiDaemon, expected_max: int) -> None:
        api.provider.push({"text": " ".join(f"w{i}" for i in range(40)), "chunk_delay": 0.02})
        async with api.client() as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(lambda: client.chat.completions.create(model=MODEL, messages=USER))
                await api.provider.wait_requests(1)
                with pytest.raises(openai.RateLimitError) as caught:
                    await client.chat.completions.create(model=MODEL, messages=USER)
        assert caught.value.status_code == 429
        assert caught.value.response.headers["retry-after"] == "1"
        assert caught.value.body["message"] == f"Too many concurrent runs (max {expected_max})"  # type: ignore[index]  # the error body is a JSON object here
        assert len(api.provider.requests) == 1
        await wait_until(lambda: api.api_actor().statistics().details["in_flight"] == 0)

    async def test_api_cap(self, provider: ScriptedProvider) -> None:
        """max_concurrent_runs: 1 -> the second request is refused while the first runs."""
        async with api_daemon(provider, "    max_concurrent_runs: 1\n") as api:
            await self._hold_one_and_try_another(api, 1)
            api.provider.push({"text": "free again"})
            async with api.client() as client:
                reply = await client.chat.completions.create(model=MODEL, messages=USER)
            assert reply.choices[0].message.content == "free again"

    async def test_daemon_turn_cap_counts(self, provider: ScriptedProvider, tmp_path: object) -> None:
        """daemon.max_running_turns: 1 caps the API too (counted together)."""
        async with api_daemon(provider, "    max_concurrent_runs: 10\ndaemon:\n  max_running_turns: 1\n") as api:
            await self._hold_one_and_try_another(api, 1)


class TestBodyCap:
    """A body over max_body_bytes is refused with 413 before any turn starts."""

    async def test_too_large(self, provider: ScriptedProvider) -> None:
        """2 KiB of content against a 1 KiB cap: 413 request_too_large."""
        async with api_daemon(provider, "    max_body_bytes: 1024\n") as api:
            async with api.http() as http:
                response = await http.post(
                    "/v1/chat/completions", json={"model": MODEL, "messages": [{"role": "user", "content": "x" * 2048}]}
                )
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "request_too_large"
        assert provider.requests == []


class TestBadInput:
    """Malformed requests get 400/404 error objects; nothing crashes."""

    @pytest.mark.parametrize(
        "body",
        [
            b"{not json",
            b"[1, 2]",
            b'{"model": "m", "messages": []}',
            b'{"model": "m", "messages": [{"role": "assistant", "content": "x"}]}',
            b'{"model": "m", "messages": [{"role": "wizard", "content": "x"}]}',
            b'{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}',
            b'{"model": "m", "stream": "yes", "messages": [{"role": "user", "content": "x"}]}',
            b'{"messages": [{"role": "user", "content": "x"}]}',
            b"[" * 100_000,
            b'{"model": "m", "n": ' + b"9" * 100_000 + b', "messages": [{"role": "user", "content": "x"}]}',
        ],
    )
    async def test_bad_completion_bodies(self, api: ApiDaemon, body: bytes) -> None:
        """Each is a 400 invalid_request_error; the API still serves afterwards."""
        async with api.http() as http:
            response = await http.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
            assert response.status_code == 400, response.text
            assert response.json()["error"]["type"] == "invalid_request_error"
            assert (await http.get("/health")).status_code == 200
        assert api.provider.requests == []

    async def test_unknown_route_and_method(self, api: ApiDaemon) -> None:
        """Unknown path: 404 error object; wrong method: 405 error object."""
        async with api.http() as http:
            missing = await http.get("/v1/nothing")
            wrong = await http.get("/v1/chat/completions")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        assert wrong.status_code == 405 and "error" in wrong.json()


class TestConfig:
    """platforms.api_server validates its values."""

    def test_defaults_and_validation(self) -> None:
        """Loopback 8642, 10 runs, CORS off; bad values raise."""
        config = ApiServerConfig()
        assert (config.host, config.port, config.max_concurrent_runs, config.cors_origins) == ("127.0.0.1", 8642, 10, ())
        assert not config.enabled and not config.auth_disabled
        for bad in ({"port": 70000}, {"max_concurrent_runs": 0}, {"max_body_bytes": 10}, {"enabled": "yes"}):
            with pytest.raises((ValueError, TypeError)):
                ApiServerConfig(**bad)  # type: ignore[arg-type]  # deliberately wrong: the refusal is what the test checks
        assert "k" * 16 not in repr(ApiServerConfig(key="k" * 16))


class TestCors:
    """CORS is off unless origins are configured."""

    async def test_off_by_default(self, api: ApiDaemon) -> None:
        """No Access-Control-Allow-Origin on a cross-origin request."""
        async with api.http() as http:
            response = await http.get("/health", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in response.headers

    async def test_configured_origin(self, provider: ScriptedProvider) -> None:
        """A configured origin passes a preflight; another origin does not."""
        async with api_daemon(provider, "    cors_origins: ['http://ui.example']\n") as api:
            async with api.http() as http:
                preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
                good = await http.options("/v1/chat/completions", headers={"Origin": "http://ui.example", **preflight})
                bad = await http.options("/v1/chat/completions", headers={"Origin": "http://evil.example", **preflight})
        assert good.status_code == 200 and good.headers["access-control-allow-origin"] == "http://ui.example"
        assert "access-control-allow-origin" not in bad.headers


class TestChunkedBodyCap:
    """A body without Content-Length is still cut off at the cap."""

    async def test_chunked_upload_too_large(self, provider: ScriptedProvider) -> None:
        """Streaming 4 KiB in pieces against a 1 KiB cap: 413."""

        async def pieces() -> AsyncIterator[bytes]:
            yield b'{"model": "m", "messages": [{"role": "user", "content": "'
            for _ in range(64):
                yield b"x" * 64
            yield b'"}]}'

        async with api_daemon(provider, "    max_body_bytes: 1024\n") as api:
            async with api.http() as http:
                response = await http.post("/v1/chat/completions", content=pieces())
        assert response.status_code == 413
        assert provider.requests == []
