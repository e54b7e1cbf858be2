"""The browser tools run by an ordinary user (uid 65534 through ``setpriv``), jailed and in full-access: a form
is filled, a file downloaded into the workspace, and nothing of the browser is left afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534

_PROBE = textwrap.dedent(
    """
    import http.server, json, os, sys, threading, trio
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from config.browser import BrowserConfig
    from config.sandbox import SandboxConfig
    from tests.jail.fixtures import policy_for
    from tools.browser import register_browser_tools
    from tools.dispatch import dispatch
    from tools.jail import SandboxMode, SessionJail, open_launcher
    from tools.registry import ToolRegistry
    from tools.testing import LocalToolContext

    PAGES = {{
        "/": ("text/html", '<html><body><form method="post" action="/submit"><label>Name <input name="n"></label>'
              '<button>Send</button></form><a href="/report.csv">Report</a></body></html>'),
        "/submit": ("text/html", "<html><body><p>Thank you</p></body></html>"),
        "/report.csv": ("text/csv", "a,b\\n"),
    }}
    posted = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            kind, body = PAGES[self.path]
            self.send_response(200)
            self.send_header("Content-Type", kind)
            if kind == "text/csv":
                self.send_header("Content-Disposition", 'attachment; filename="report.csv"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())
        def do_POST(self):
            posted.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
            self.do_GET()
        def log_message(self, *args):
            pass

    def ref(snapshot, role, name):
        line = next(line for line in snapshot.splitlines() if f'- {{role}} "{{name}}"' in line and "[ref=" in line)
        return "@" + line.split("[ref=", 1)[1].split("]", 1)[0]

    async def drive(jail, workspace, url):
        registry = ToolRegistry()
        register_browser_tools(registry, BrowserConfig(command_timeout=20.0))
        found = {{}}
        async with trio.open_nursery() as nursery:
            ctx = LocalToolContext(home=workspace.parent / "home", cwd=str(workspace), nursery=nursery,
                                   browser_config=BrowserConfig(command_timeout=20.0), jail=jail)
            async def call(name, **args):
                return json.loads((await dispatch(registry, name, args, ctx)).text)
            snapshot = (await call("browser_navigate", url=url))["snapshot"]
            await call("browser_type", ref=ref(snapshot, "textbox", "Name"), text="nobody")
            clicked = await call("browser_click", ref=ref(snapshot, "link", "Report"))
            found["download"] = [d["state"] for d in clicked.get("downloads", [])]
            found["saved"] = (workspace / "report.csv").read_text()
            found["owner"] = (workspace / "report.csv").stat().st_uid
            await call("browser_click", ref=ref(snapshot, "button", "Send"))
            found["thanked"] = "Thank you" in (await call("browser_snapshot"))["snapshot"]
            nursery.cancel_scope.cancel()
        browser = ctx._browser
        found["pid_left"] = os.path.exists(f"/proc/{{browser.pid}}")
        found["profile_left"] = os.path.exists(browser.profile_dir)
        return found

    async def main():
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{{server.server_address[1]}}/"
        work = Path({work!r})
        results = {{"uid": os.getuid()}}
        async with open_launcher(SandboxConfig()) as launcher:
            results["jail_error"] = None if launcher.status.available else launcher.status.error
            modes = [SandboxMode.FULL_ACCESS] + ([SandboxMode.WORKSPACE_WRITE] if launcher.status.available else [])
            for mode in modes:
                workspace = work / mode.value / "workspace"
                workspace.mkdir(parents=True)
                jail = SessionJail(policy_for(mode, workspace), launcher)
                results[mode.value] = await drive(jail, workspace, url)
        results["posted"] = posted
        server.shutdown()
        print(json.dumps(results))

    trio.run(main)
    """
)


@pytest.fixture
def nobody_dir() -> Iterator[Path]:
    """A working directory owned by the unprivileged user."""
    path = Path(tempfile.mkdtemp(prefix="hx-browser-nobody-", dir="/tmp"))
    os.chown(path, NOBODY, NOBODY)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class TestAsOrdinaryUser:
    """An unprivileged user's browser fills a form and downloads into the workspace, jailed and not, and leaves
    no process or profile behind."""

    def test_form_and_download(self, nobody_dir: Path) -> None:
        setpriv = shutil.which("setpriv")
        if os.geteuid() != 0 or setpriv is None:
            pytest.skip("needs root and setpriv to become an ordinary user")
        script = nobody_dir / "probe.py"
        (nobody_dir / "work").mkdir()
        os.chown(nobody_dir / "work", NOBODY, NOBODY)
        script.write_text(_PROBE.format(root=str(Path(__file__).parents[2]), work=str(nobody_dir / "work")))
        done = subprocess.run(
            [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", sys.executable, str(script)],
            capture_output=True, text=True, timeout=120, env={"PATH": os.environ["PATH"], "HOME": str(nobody_dir)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        found = json.loads(done.stdout)
        expected = {
            "download": ["completed"], "saved": "a,b\n", "owner": NOBODY, "thanked": True, "pid_left": False,
            "profile_left": False,
        }  # fmt: skip
        assert found["uid"] == NOBODY
        assert found["full-access"] == expected
        assert found["posted"][0] == "n=nobody"
        if found["jail_error"] is not None:
            pytest.skip(f"no jail for an ordinary user here (full-access passed): {found['jail_error']}")
        assert found["workspace-write"] == expected
        assert found["posted"] == ["n=nobody", "n=nobody"]
