"""``hermes-actors demo``: the whole system at work against a scripted model, no key needed.

It makes a temporary HERMES_ACTORS_HOME, starts the scripted provider in rule
mode and a daemon, and runs one session in which the scripted model runs a
terminal command, an execute_code script making several tool calls, and a
delegate_task with two children, printing the live actor tree while it works
and the final answer at the end. Everything it started is stopped and the
temporary home removed before it returns (unless ``--keep``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule

from cli.attach_view import EventView
from cli.autostart import connect_or_start
from control.client import ControlClient
from control.errors import EXIT_FAILURE, PlatformError
from control.paths import DaemonPaths
from control.profiles import PROFILE_VARIABLE
from cli.render import format_tree
from messages import control as c
from messages.paths import session_path

__all__ = ["DEMO_PROMPT", "run_demo"]

DEMO_PROMPT = (
    "Show me this machine: run a command, then a script that calls several tools at once, "
    "then hand two small jobs to subagents, and sum it all up."
)
#: The demo gives up after this long (it normally takes a few seconds).
DEMO_DEADLINE_SECONDS = 60.0
#: How often the live tree is printed while the turn runs.
TREE_EVERY_SECONDS = 1.5


def _start_provider(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "providers.scripted", "--port", "0", "--rules"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        process.kill()
        process.wait()
        raise PlatformError("the scripted provider did not start")
    return process, url


def _print_tree(console: Console, client: ControlClient, session_id: str) -> None:
    try:
        reply = client.request_raw(c.Tree(client.next_id(), session_path(session_id)))
    except PlatformError:
        return
    console.print(Rule("live tree", style="dim"))
    console.print(format_tree(reply["tree"], reply["now"]), style="cyan", highlight=False, markup=False, soft_wrap=True)
    console.print(Rule(style="dim"))


def _run_session(console: Console, paths: DaemonPaths, base_url: str) -> int:
    with (
        connect_or_start(paths, client="hermes-actors demo") as client,
        ControlClient.connect(paths, client="demo tree") as watcher,
    ):
        console.print(f"[dim]daemon pid {client.welcome.daemon_pid}, home {paths.home}[/dim]")
        created = client.request_raw(
            c.CreateSession(
                client.next_id(), cwd=os.getcwd(), model="scripted-demo", provider="custom",
                base_url=base_url, api_mode="chat_completions", title="demo",
            )
        )
        session_id = created["session_id"]
        client.request_raw(c.Attach(client.next_id(), session_id, None))
        client.request_raw(c.SendMessage(client.next_id(), session_id, DEMO_PROMPT))
        view = EventView(console, session_id)
        client.settimeout(0.3)
        deadline = time.monotonic() + DEMO_DEADLINE_SECONDS
        next_tree = time.monotonic() + 0.5
        final: dict[str, Any] | None = None
        while final is None:
            if time.monotonic() > deadline:
                console.print(f"[red]the demo did not finish within {DEMO_DEADLINE_SECONDS:g} s[/red]")
                return EXIT_FAILURE
            try:
                event = client.receive_raw()
            except TimeoutError:
                event = None
            if event is not None:
                kind = event.get("type")
                if kind not in ("TextDelta", "ReasoningDelta"):  # the answer is printed whole at the end
                    view.show(event)
                if kind == "TurnFinished" and view.is_own(event):
                    final = event
                elif kind == "TurnStarted" and not view.is_own(event):
                    next_tree = time.monotonic()  # a subagent is running: show it now
                elif kind in ("ToolStarted", "TurnStarted"):
                    # Work just started: show the tree shortly, once its actors are there.
                    next_tree = min(next_tree, time.monotonic() + 0.3)
            if final is None and time.monotonic() >= next_tree:
                _print_tree(console, watcher, session_id)
                next_tree = time.monotonic() + TREE_EVERY_SECONDS
        console.print(Rule("final answer"))
        console.print(final.get("final_text") or "", highlight=False, markup=False)
        if final["reason"] != "completed":
            console.print(f"[red]the turn ended: {final['reason']} {final.get('error') or ''}[/red]")
            return EXIT_FAILURE
        client.request_raw(c.StopDaemon(client.next_id()))
        return 0


def _stop_daemon(paths: DaemonPaths) -> None:
    try:
        with ControlClient.connect(paths, timeout=2) as client:
            client.request_raw(c.StopDaemon(client.next_id()))
    except (PlatformError, OSError):
        return
    deadline = time.monotonic() + 15
    while paths.socket.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def run_demo(*, keep: bool = False) -> int:
    """Run the demo; the exit status (0 when the session completed)."""
    console = Console(highlight=False)
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="ha-demo-"))
    paths = DaemonPaths(base / "home")
    # The demo's home is a throwaway one, whatever profile was selected.
    os.environ.pop(PROFILE_VARIABLE, None)
    env = dict(os.environ, HERMES_ACTORS_HOME=str(paths.home))
    os.environ["HERMES_ACTORS_HOME"] = str(paths.home)
    console.print(Rule("hermes-actors demo: a scripted model, no key, nothing left running"))
    provider, base_url = _start_provider(env)
    try:
        console.print(f"[dim]scripted provider at {base_url}[/dim]")
        status = _run_session(console, paths, base_url)
    finally:
        _stop_daemon(paths)
        provider.terminate()
        provider.wait(10)
        if provider.stdout is not None:
            provider.stdout.close()
        if keep:
            console.print(f"[dim]kept {paths.home} (logs/daemon.log, state.db)[/dim]")
        else:
            shutil.rmtree(base, ignore_errors=True)
    console.print(f"[dim]done in {time.monotonic() - started:.1f} s[/dim]")
    return status
