"""Refused keys slow a client down: a few wrong keys are free, then each one doubles the wait before the
next one is even checked; a right key clears it, and other clients are not held up. The dashboard's login
form and the API's bearer key count into one back-off."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors.platform.api import auth
from actors.platform.api.errors import KeyBackOff
from actors.platform.api.throttle import KeyThrottle
from providers.scripted import ScriptedProvider
from tests.api.harness import KEY, ApiDaemon, api_daemon
from tests.dashboard.test_dashboard import TREE_DRAWN, browse

WRONG = "wrong-key-0123456789abcdefgh"
#: The first wait in the browser test: long enough that the right key, sent at once, always falls inside it.
PATIENCE_SECONDS = 30.0


class _PatientThrottle(KeyThrottle):
    def __init__(self) -> None:
        super().__init__(first=PATIENCE_SECONDS)


@pytest.fixture
async def patient_dashboard(provider: ScriptedProvider, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ApiDaemon]:
    """The dashboard with a first back-off of :data:`PATIENCE_SECONDS` (no clock moves in a browser test)."""
    monkeypatch.setattr(auth, "KeyThrottle", _PatientThrottle)
    async with api_daemon(provider, "    dashboard: true\n") as running:
        yield running


class TestBackOff:
    """The waits, on the autojump clock: free, free, free, 1 s, 2 s, 4 s ... capped; per client; cleared by a right key."""

    async def test_waits_double_after_the_free_refusals(self, autojump_clock: trio.testing.MockClock) -> None:
        """Past three free refusals the wait doubles up to the cap; it runs out with time; admitted clears it."""
        throttle = KeyThrottle(free=3, first=1.0, most=4.0)
        waits = [throttle.refused("a") for _ in range(7)]
        assert waits == [0.0, 0.0, 0.0, 1.0, 2.0, 4.0, 4.0]
        assert throttle.wait_left("a") == 4.0 and throttle.wait_left("b") == 0.0
        await trio.sleep(3.0)
        assert throttle.wait_left("a") == 1.0 and KeyBackOff(0.2).headers == {"Retry-After": "1"}
        await trio.sleep(1.0)
        assert throttle.wait_left("a") == 0.0
        throttle.admitted("a")
        assert throttle.refused("a") == 0.0  # counted from the start again

    async def test_memory_is_bounded(self) -> None:
        """Past ``clients`` addresses the longest quiet one is forgotten."""
        throttle = KeyThrottle(free=0, first=1.0, clients=2)
        for client in ("a", "b", "c"):
            throttle.refused(client)
        assert throttle.wait_left("a") == 0.0 and throttle.wait_left("c") > 0.0

    async def test_the_doublings_never_overflow(self) -> None:
        """Thousands of refusals keep the wait at its cap (no float overflow)."""
        throttle = KeyThrottle(free=0, first=1.0, most=60.0)
        assert max(throttle.refused("a") for _ in range(5000)) == 60.0


class TestLoginForm:
    """Through the browser: the fourth wrong key in a row makes the right one wait (429, shown on the form),
    and the log says so without the key."""

    async def test_right_key_waits_after_wrong_ones(
        self, patient_dashboard: ApiDaemon, chromium: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Four wrong keys (401 each), then the right key at once is refused unchecked with Retry-After."""
        caplog.set_level(logging.DEBUG)
        url = patient_dashboard.url

        def post_key(page: Any, key: str) -> tuple[int, str | None]:
            page.fill("#key", key)
            with page.expect_response(lambda r: r.request.method == "POST") as answer:
                page.click("#login")
            page.wait_for_load_state()
            return answer.value.status, answer.value.headers.get("retry-after")

        def script(page: Any) -> dict[str, Any]:
            page.goto(f"{url}/dashboard/login")
            wrong = [post_key(page, WRONG) for _ in range(4)]
            right = post_key(page, KEY)
            return {
                "wrong": wrong, "right": right, "wait_shown": page.is_visible("#login-wait"),
                "error_shown": page.is_visible("#login-error"), "cookies": page.context.cookies(),
                "tree": page.query_selector(TREE_DRAWN) is not None,
            }

        seen = await browse(chromium, script)
        assert [status for status, _ in seen["wrong"]] == [401, 401, 401, 401]
        assert [after for _, after in seen["wrong"]] == [None, None, None, "30"]  # the fourth starts the wait
        assert seen["right"][0] == 429 and 1 <= int(seen["right"][1]) <= 30
        assert seen["wait_shown"] and not seen["error_shown"]
        assert seen["cookies"] == [] and not seen["tree"]
        assert "back-off are left" in caplog.text and "its next try waits 30.0 s" in caplog.text
        assert KEY not in caplog.text and WRONG not in caplog.text
