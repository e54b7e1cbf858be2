"""The browser tools' figures (issue 42) in a real daemon's jailed session; prints them.

    .venv/bin/python bench/bench_browser.py [--calls 10] [--idle 30]

A real daemon (default config: the session jailed, workspace-write) against the scripted provider, whose
script makes each turn one browser call (the learning loop's review answered by a second one, as in
``bench_everyday.py``); the page is served on loopback by this process. Figures:

- the browser's first start in a session: the first ``browser_navigate``'s duration (as the daemon's
  ``ToolFinished`` reports it), against the later navigations of the same page;
- ``browser_navigate``, ``browser_snapshot`` and ``browser_click`` (p50 of ``--calls`` each, the tool's own
  duration, and the whole turn's wall time);
- the CPU the open, idle browser (its whole process tree) uses per minute, measured over ``--idle`` seconds.

Then the dashboard (``platforms.api_server.dashboard: true``, a second daemon), read as its page reads it,
over Server-Sent Events with the API key:

- a session event to the page: a turn's ``turn_finished`` on the session's event stream
  (``/dashboard/api/sessions/<id>/events``) against the same event on a control client attached to the
  session (the CLI's path), and the time from sending a message to the next ``state`` frame on the state
  stream (``/dashboard/api/live``, which looks for changes every 0.5 s; each message is sent at a random
  moment between two looks), p50 and p95;
- the daemon's CPU per connected tab (one state stream and one session stream each) while a turn runs: the
  same turns (a ``terminal`` ``sleep 2``) with ``--tabs`` tabs open and with none.
"""

from __future__ import annotations

import argparse
import http.server
import queue
import random
import json
import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.browser.conftest import Site, _Handler  # noqa: E402
from tests.daemon.checkpoint_helpers import checkpoint_daemon  # noqa: E402
import httpx2  # noqa: E402

from messages import control as c  # noqa: E402
from tests.daemon.helpers import DaemonProcess, ScriptedProviderProcess, events_until_turn_finished, run_cli  # noqa: E402
from tests.daemon.platform_helpers import bot_details  # noqa: E402
from tests.daemon.telegram_daemon import wait  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_api  # noqa: E402
from bench_everyday import providers, with_reviewer  # noqa: E402

PAGE = """<html><head><title>Bench page</title></head><body><h1>A page to drive</h1>
<p>Some text to read, and a list:</p><ul><li>one</li><li>two</li><li>three</li></ul>
<button onclick="document.title = 'clicked ' + Date.now()">Press</button></body></html>"""


def _serve_site() -> tuple[Site, http.server.ThreadingHTTPServer]:
    """The browser tests' loopback site, served by a thread of this process."""
    site = Site()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"site": site}))
    server.daemon_threads = True
    site.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site.page("/", PAGE)
    return site, server


def _tree_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and every process under it, as now alive (Linux)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


class BrowserTurns:
    """Turns of one session, each one browser call; what each call's ``ToolFinished`` said."""

    def __init__(self, daemon: DaemonProcess, provider: ScriptedProviderProcess, work: Path) -> None:
        self.provider = provider
        self.client = daemon.client()
        self.client.settimeout(120)
        self.session_id = provider.create_session(self.client, str(work))
        # Attached once: a second Attach on the same connection would deliver every event twice.
        self.client.request(c.Attach(self.client.next_id(), self.session_id, None))
        self.calls = 0

    def call(self, name: str, **arguments: Any) -> tuple[float, float, str]:
        """(the tool's duration, the turn's wall time, the result's preview) of one call of ``name``."""
        self.calls += 1
        self.provider.reset()
        self.provider.push({"tool_calls": [{"id": f"b{self.calls}", "name": name, "arguments": arguments}]}, {"text": "done"})
        started = time.perf_counter()
        self.client.request(c.SendMessage(self.client.next_id(), self.session_id, "use the browser"))
        events = events_until_turn_finished(self.client)
        wall = time.perf_counter() - started
        assert events[-1].reason == "completed", events[-1]
        done = [e for e in events if type(e).__name__ == "ToolFinished"]
        assert len(done) == 1, [(e.name, e.call_id, e.result_preview[:80]) for e in done]
        [finished] = done
        assert finished.ok, f"{name} failed: {finished.result_preview}"
        return finished.duration_seconds, wall, finished.result_preview


KEY = "bench-dashboard-key-0123456789abcdef"


class Tab:
    """A dashboard tab's stream, read on a thread: each SSE event's name with the moment it arrived."""

    def __init__(self, url: str) -> None:
        self.frames: queue.Queue[tuple[float, str]] = queue.Queue()
        self.client = httpx2.Client(timeout=httpx2.Timeout(10, read=None), headers={"Authorization": f"Bearer {KEY}"})
        self.response = self.client.send(self.client.build_request("GET", url), stream=True)
        assert self.response.status_code == 200, self.response.status_code
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.response.iter_lines():
                if line.startswith("event: "):
                    self.frames.put((time.perf_counter(), line.removeprefix("event: ")))
        except httpx2.HTTPError:
            pass  # closed at the end

    def next(self, name: str, timeout: float = 60.0) -> float:
        """When the next event ``name`` arrived (waiting for it)."""
        while True:
            at, got = self.frames.get(timeout=timeout)
            if got == name:
                return at

    def drain(self) -> None:
        while not self.frames.empty():
            self.frames.get_nowait()

    def close(self) -> None:
        self.response.close()
        self.client.close()


def dashboard(provider: ScriptedProviderProcess, reviewer: ScriptedProviderProcess, turns_count: int, tabs_count: int) -> None:
    """The dashboard's figures: a session event to its streams, and the daemon's CPU per open tab."""
    config = with_reviewer(reviewer, platforms={"api_server": {"enabled": True, "port": 0, "key": KEY, "dashboard": True}})
    with checkpoint_daemon(config) as (daemon, work):
        wait(lambda: bot_details(daemon.home, "api").get("urls"), "the API server to listen")
        base = f"{bot_details(daemon.home, 'api')['urls'][0]}/dashboard/api"
        pid = daemon.process.pid if daemon.process else 0
        client = daemon.client()
        client.settimeout(120)
        session_id = provider.create_session(client, str(work))
        client.request(c.Attach(client.next_id(), session_id, None))
        state, events = Tab(f"{base}/live"), Tab(f"{base}/sessions/{session_id}/events")
        lags, to_state = [], []
        try:
            for _ in range(turns_count):
                provider.reset()
                time.sleep(random.uniform(0, 0.5))  # out of step with the stream's looks, or every wait would be the same
                state.drain()
                sent = time.perf_counter()
                client.request(c.SendMessage(client.next_id(), session_id, "no tools please"))
                events_until_turn_finished(client)
                on_socket = time.perf_counter()
                lags.append(events.next("turn_finished") - on_socket)
                to_state.append(state.next("state") - sent)
            sleeper = ({"tool_calls": [{"id": "s", "name": "terminal", "arguments": {"command": "sleep 2"}}]}, {"text": "slept"})
            cpu: dict[int, float] = {}
            for tabs in (0, tabs_count):
                opened = [Tab(url) for _ in range(tabs) for url in (f"{base}/live", f"{base}/sessions/{session_id}/events")]
                try:
                    time.sleep(1)  # the streams' first pictures
                    before = bench_api._cpu_seconds(pid)
                    for _ in range(3):
                        provider.reset()
                        provider.push(*sleeper)
                        client.request(c.SendMessage(client.next_id(), session_id, "sleep"))
                        assert events_until_turn_finished(client)[-1].reason == "completed"
                    cpu[tabs] = bench_api._cpu_seconds(pid) - before
                finally:
                    for tab in opened:
                        tab.close()
        finally:
            state.close()
            events.close()
            client.close()
    print(f"dashboard, {turns_count} turns:")
    print(f"  turn_finished on the session's SSE stream after the control socket: p50 {statistics.median(lags) * 1000:.1f} ms, "
          f"p95 {bench_api._percentile(lags, 0.95) * 1000:.1f} ms")
    print(f"  message sent -> next state frame on the state stream: p50 {statistics.median(to_state) * 1000:.0f} ms, "
          f"p95 {bench_api._percentile(to_state, 0.95) * 1000:.0f} ms (the stream looks every 0.5 s)")
    per_tab = (cpu[tabs_count] - cpu[0]) / tabs_count
    print(f"  daemon CPU over 3 turns of a 2 s command: {cpu[0] * 1000:.0f} ms with no tab, {cpu[tabs_count] * 1000:.0f} ms "
          f"with {tabs_count} tabs: {per_tab * 1000:.1f} ms per tab ({per_tab * 1000 / 6:.1f} ms per tab-second)")


def browser(provider: ScriptedProviderProcess, reviewer: ScriptedProviderProcess, calls: int, idle: float) -> None:
    """The browser tools' figures in a jailed session."""
    site, server = _serve_site()
    try:
        with checkpoint_daemon(with_reviewer(reviewer)) as (daemon, work):
            turns = BrowserTurns(daemon, provider, work)
            url = site.url("/")
            first, first_wall, _ = turns.call("browser_navigate", url=url)
            figures: dict[str, list[tuple[float, float]]] = {"browser_navigate": [], "browser_snapshot": [], "browser_click": []}
            for _ in range(calls):
                figures["browser_navigate"].append(turns.call("browser_navigate", url=url)[:2])
                figures["browser_snapshot"].append(turns.call("browser_snapshot")[:2])
                snapshot = json.dumps(provider.requests()[-1]["body"]["messages"][-1])  # the whole result, as the model read it
                ref = re.search(r"Press\\*\"?\s*\[ref=(e\d+)\]", snapshot)
                assert ref is not None, f"no ref for the button in the snapshot: {snapshot[:400]}"
                figures["browser_click"].append(turns.call("browser_click", ref=f"@{ref.group(1)}")[:2])
            details = json.loads(run_cli(daemon.home, "inspect", f"session:{turns.session_id}/browser", "--json").stdout)
            pid = int(details["details"]["pid"])
            before, started = _tree_cpu(pid), time.perf_counter()
            time.sleep(idle)  # the figure is the idle browser's CPU over real time
            idle_per_minute = (_tree_cpu(pid) - before) * 60 / (time.perf_counter() - started)
            turns.client.close()
    finally:
        server.shutdown()
        server.server_close()
    print("browser tools in a jailed session:")
    print(f"  first start (the session's first browser_navigate): {first * 1000:.0f} ms tool, {first_wall * 1000:.0f} ms turn")
    for name, samples in figures.items():
        print(f"  {name:<17} p50 {statistics.median(s[0] for s in samples) * 1000:7.1f} ms tool, "
              f"{statistics.median(s[1] for s in samples) * 1000:7.1f} ms turn ({len(samples)} calls)")
    print(f"  idle open browser: {idle_per_minute * 1000:.0f} ms CPU per minute (its process tree, over {idle:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10, help="calls of each tool")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds to watch the idle browser")
    parser.add_argument("--turns", type=int, default=20, help="turns timed on the dashboard's streams")
    parser.add_argument("--tabs", type=int, default=10, help="dashboard tabs open for the CPU figure")
    parser.add_argument("--only", default="browser,dashboard")
    args = parser.parse_args()
    print(f"browser and dashboard, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start")
    with providers() as (provider, reviewer):
        if "browser" in args.only:
            browser(provider, reviewer, args.calls, args.idle)
        if "dashboard" in args.only:
            dashboard(provider, reviewer, args.turns, args.tabs)
    print(f"load {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
