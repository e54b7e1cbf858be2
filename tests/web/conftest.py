"""The web tests' fake search and page server, and the web tools' HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from config.terminal import WebConfig
from tests.web.server import FakeWeb, running_server
from tools.web import open_web_client


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeWeb, str]]:
    app = FakeWeb()
    async with running_server(app) as base:
        yield app, base


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    http = open_web_client(WebConfig())
    try:
        yield http
    finally:
        await http.aclose()
