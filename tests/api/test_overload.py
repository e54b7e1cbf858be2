"""A burst far over the concurrency cap: every request gets an HTTP answer, none a reset."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.platform.daemon.limits import raise_open_file_limit
from providers.scripted import ScriptedProvider
from tests.api.harness import KEY, api_daemon, wait_until
from tests.api.overload import fire, tally

#: Requests opened at once: all connect before the server accepts the first (one Trio run).
BURST = 1000
#: What the whole burst may take on a loaded machine; nothing else in the test is timed.
DEADLINE_SECONDS = 120.0
CAP = 10
PAYLOAD = {"model": "scripted-model", "messages": [{"role": "user", "content": "hi"}]}


def _somaxconn() -> int:
    return int(Path("/proc/sys/net/core/somaxconn").read_text())


class TestBurstOverCap:
    """1,000 concurrent completions against a cap of 10: each is answered 200, or 429 with Retry-After."""

    async def test_every_request_answered(self, provider: ScriptedProvider) -> None:
        """No connection is reset or closed unanswered; over the cap is 429 with Retry-After: 1."""
        if _somaxconn() < BURST:
            pytest.skip(f"net.core.somaxconn is {_somaxconn()}: the kernel queues fewer than {BURST} connections")
        # Both ends of every connection live in this process.
        if raise_open_file_limit() < 2 * BURST + 256:
            pytest.skip(f"the open-file limit does not allow {BURST} loopback connections in one process")
        provider.push(*({"text": "admitted"} for _ in range(BURST)))
        async with api_daemon(provider, f"    max_concurrent_runs: {CAP}\n") as api:
            host, port = api.url.removeprefix("http://").rsplit(":", 1)
            headers = {"Authorization": f"Bearer {KEY}"}
            fates = await fire(host, int(port), "/v1/chat/completions", PAYLOAD, headers, BURST, DEADLINE_SECONDS)
            counts = tally(fates)
            assert set(counts) <= {"200", "429"}, counts
            assert counts["429"] > 0 and counts["200"] > 0, counts
            assert {f.retry_after for f in fates if f.status == 429} == {"1"}
            # Each 200 was one turn, no 429 reached the provider, and every slot came back.
            assert len(provider.requests) == counts["200"]
            await wait_until(lambda: api.api_actor().statistics().details["in_flight"] == 0, DEADLINE_SECONDS)
