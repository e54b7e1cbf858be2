"""The actor tree stays readable with many sessions: a long list shows its first twenty (busy ones first)
and a button for the rest, every node with children says how many actors are below it and how many are
busy, and folds survive the picture redrawing itself while a turn runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2

from tests.api.harness import KEY, ApiDaemon
from tests.dashboard.test_dashboard import TREE_DRAWN, browse, log_in

#: Sessions started before the page opens (more than a screen holds).
SESSIONS = 55
#: The page's CHILD_LIMIT: children listed before "show N more".
LISTED = 20
#: The session nodes drawn now.
SESSION_NODES = "[...document.querySelectorAll('#tree .node')].filter(n => /^sessions\\/[^/]+$/.test(n.dataset.path)).length"
SESSIONS_COUNT = '.node[data-path="sessions"] > .badge.count'


def _create(http: httpx2.Client) -> str:
    created = http.post("/dashboard/api/sessions")
    assert created.status_code == 200, created.text
    return str(created.json()["session_id"])


class TestManySessions:
    """55 sessions: twenty are drawn with "show 35 more"; a turn started in a hidden one brings it into view
    and is counted busy; "more" lists all; a fold holds while the turn ends and the counts move on."""

    async def test_long_list_is_cut_counted_and_kept_live(self, dashboard: ApiDaemon, chromium: Path) -> None:
        """The cut, the counts, the busy session moved up, show-all, and a fold kept across redraws."""
        url = dashboard.url
        bearer = {"Authorization": f"Bearer {KEY}"}
        # The turn's first words arrive, then its stream stalls: it runs until interrupted.
        dashboard.provider.push({"text": "one two three four", "stall_after_chunks": 2})

        def script(page: Any) -> dict[str, Any]:
            seen: dict[str, Any] = {}
            with httpx2.Client(base_url=url, headers=bearer, timeout=30) as http:
                ids = [_create(http) for _ in range(SESSIONS)]
                log_in(page, url)
                page.wait_for_selector(f"{SESSIONS_COUNT}:has-text('below')")
                seen["drawn"] = page.evaluate(SESSION_NODES)
                seen["more"] = page.text_content('.more[data-path="sessions"]')
                seen["count"] = page.text_content(SESSIONS_COUNT)
                drawn = set(page.eval_on_selector_all("#tree .node", "els => els.map(e => e.dataset.path)"))
                hidden = next(i for i in reversed(ids) if not any(path.endswith(i) for path in drawn))
                sent = http.post(f"/dashboard/api/sessions/{hidden}/messages", json={"text": "count"})
                assert sent.status_code == 200, sent.text
                turn = page.wait_for_selector(f'.node[data-path$="{hidden}/turn"]')
                seen["turn_state"] = turn.get_attribute("data-state")
                seen["turn_folded"] = turn.get_attribute("data-folded")
                seen["busy_count"] = page.wait_for_selector(f"{SESSIONS_COUNT}:has-text('busy')").text_content()
                seen["drawn_with_turn"] = page.evaluate(SESSION_NODES)
                page.click('.more[data-path="sessions"]')
                page.wait_for_selector('.more[data-path="sessions"]', state="detached")
                seen["all"] = page.evaluate(SESSION_NODES)
                page.click('.node[data-path="sessions"] > .toggle')
                page.wait_for_selector('.node[data-path="sessions"][data-folded="true"]')
                seen["folded"] = page.evaluate(SESSION_NODES)
                interrupted = http.post(f"/dashboard/api/sessions/{hidden}/interrupt")
                assert interrupted.status_code == 200, interrupted.text
                # The picture redraws when the turn ends: the count loses "busy", the fold stays.
                page.wait_for_selector(f'.node[data-path="sessions"][data-folded="true"] > .badge.count:text-matches("^\\\\d+ below$")')
                seen["after"] = page.evaluate(SESSION_NODES)
                page.click('.node[data-path="sessions"] > .toggle')
                page.wait_for_selector('.node[data-path="sessions"][data-folded="false"]')
                seen["unfolded"] = page.evaluate(SESSION_NODES)
            return seen

        seen = await browse(chromium, script)
        assert seen["drawn"] == LISTED and seen["more"] == f"show {SESSIONS - LISTED} more"
        assert seen["count"].endswith("below") and int(seen["count"].split()[0]) >= SESSIONS
        assert seen["turn_state"] in ("running", "busy") and " busy" in seen["busy_count"], seen
        assert seen["drawn_with_turn"] == LISTED
        assert seen["turn_folded"] == "true", seen  # three deep: what runs under a turn starts folded
        assert seen["all"] == SESSIONS
        assert seen["folded"] == 0 and seen["after"] == 0
        assert seen["unfolded"] == SESSIONS  # "show all" was kept too
