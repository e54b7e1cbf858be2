"""web_search chooses its backend as Hermes Agent 0.19.0 does, by Hermes's names: web.search_backend, then
web.backend (searxng, brave-free), with SEARXNG_URL and BRAVE_SEARCH_API_KEY; our earlier names still work."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from config.loader import Config, load_config
from config.terminal import WebConfig
from tests.tools.helpers import model_view
from tests.web.server import BRAVE_KEY, FakeWeb
from tools.testing import LocalToolContext
from tools.web import WebTools


async def _search(tools: WebTools, tmp_path: Path) -> dict[str, Any]:
    ctx = LocalToolContext(home=tmp_path / "home", cwd=tmp_path)
    return await model_view(tools.web_search, {"query": "trio", "limit": 2}, ctx)


def _load(tmp_path: Path, web: dict[str, Any]) -> tuple[Config, list[str]]:
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"web": web}))
    warnings: list[str] = []
    return load_config(tmp_path, warnings=warnings, log_warnings=False), warnings


class TestHermesVariables:
    """SEARXNG_URL and BRAVE_SEARCH_API_KEY configure the backends, as in Hermes."""

    async def test_searxng_url(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, tmp_path: Path) -> None:
        app, base = fake
        result = await _search(WebTools(WebConfig(), client, environ={"SEARXNG_URL": base}), tmp_path)
        assert result["success"] is True and result["backend"] == "searxng"
        assert app.requests[-1][1] == {"q": ["trio"], "format": ["json"]}

    async def test_brave_search_api_key(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, tmp_path: Path) -> None:
        app, base = fake
        config = WebConfig(brave_base_url=f"{base}/brave")
        result = await _search(WebTools(config, client, environ={"BRAVE_SEARCH_API_KEY": BRAVE_KEY}), tmp_path)
        assert result["success"] is True and result["backend"] == "brave-free"
        assert app.requests[-1][2]["x-subscription-token"] == BRAVE_KEY


class TestSearchBackend:
    """web.search_backend wins when it is available; otherwise web.backend decides."""

    async def test_search_backend_over_backend(self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, tmp_path: Path) -> None:
        _, base = fake
        environ = {"SEARXNG_URL": base, "BRAVE_SEARCH_API_KEY": BRAVE_KEY}
        config = WebConfig(backend="searxng", search_backend="brave-free", brave_base_url=f"{base}/brave")
        assert (await _search(WebTools(config, client, environ=environ), tmp_path))["backend"] == "brave-free"
        unavailable = WebConfig(backend="auto", search_backend="brave-free")
        assert (await _search(WebTools(unavailable, client, environ={"SEARXNG_URL": base}), tmp_path))["backend"] == "searxng"

    def test_hermes_values_load(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"backend": "searxng", "search_backend": "brave-free"})
        assert (config.web.backend, config.web.search_backend) == ("searxng", "brave-free") and warnings == []
        config, warnings = _load(tmp_path, {"search_backend": ""})
        assert config.web.search_backend is None and warnings == []

    def test_a_hermes_backend_not_built_is_a_warning(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"search_backend": "tavily", "backend": "ddgs"})
        assert config.web.search_backend is None and config.web.backend == "auto"
        assert any(w.startswith("web.search_backend 'tavily' is a Hermes backend not built here") for w in warnings)
        assert any(w.startswith("web.backend 'ddgs' is a Hermes backend not built here") for w in warnings)


class TestOurEarlierNames:
    """web.backend 'brave', BRAVE_API_KEY and web.searxng_url still work; a conflict is a warning."""

    def test_backend_brave_is_brave_free(self, tmp_path: Path) -> None:
        config, warnings = _load(tmp_path, {"backend": "brave"})
        assert config.web.backend == "brave-free"
        assert "deprecated value web.backend: 'brave': use 'brave-free' (read as 'brave-free' this time)" in warnings

    async def test_brave_api_key_still_read(
        self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        app, base = fake
        with caplog.at_level(logging.WARNING):
            tools = WebTools(WebConfig(brave_base_url=f"{base}/brave"), client, environ={"BRAVE_API_KEY": BRAVE_KEY})
        assert (await _search(tools, tmp_path))["backend"] == "brave-free"
        assert "rename it BRAVE_SEARCH_API_KEY" in caplog.text and BRAVE_KEY not in caplog.text
        with caplog.at_level(logging.WARNING):
            WebTools(WebConfig(), client, environ={"BRAVE_API_KEY": "old-key", "BRAVE_SEARCH_API_KEY": BRAVE_KEY})
        assert "BRAVE_API_KEY is ignored" in caplog.text and "old-key" not in caplog.text

    async def test_searxng_url_differing_from_the_variable(
        self, fake: tuple[FakeWeb, str], client: httpx2.AsyncClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        app, base = fake
        with caplog.at_level(logging.WARNING):
            tools = WebTools(WebConfig(searxng_url="http://127.0.0.1:9"), client, environ={"SEARXNG_URL": base})
        assert (await _search(tools, tmp_path))["success"] is True, "SEARXNG_URL, the live one, is used"
        assert "web.searxng_url (http://127.0.0.1:9) is ignored: SEARXNG_URL is set" in caplog.text
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            alone = WebTools(WebConfig(searxng_url=base), client, environ={})
        assert (await _search(alone, tmp_path))["backend"] == "searxng" and caplog.text == ""
