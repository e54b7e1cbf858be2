"""Finding Chromium and the command line it starts with.

Chromium's own sandbox is off (``--no-sandbox``) because the jail is the sandbox: it needs a user
namespace of its own (or a setuid helper), and the jail forbids both (bubblewrap's ``--disable-userns``,
no capabilities, ``no_new_privs``). Its renderers share the jail's namespaces, seccomp filter and the
session's control group instead (docs/DECISIONS.md#d-browser-in-jail). The debugging channel is a pipe on its
descriptors 3 and 4 (:mod:`tools.browser.cdp`), handed through bubblewrap by a small ``bash`` prologue
(``pass_fds`` keeps our numbers; Chromium wants exactly 3 and 4).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping

from config.browser import BrowserConfig

__all__ = ["INSTALL_HINT", "chromium_argv", "find_browser", "pipe_prologue"]

# Names tried on PATH for ``executable_path: auto``, the usual ones first.
_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "microsoft-edge", "brave-browser")
_MAC_BUNDLES = (
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
)

INSTALL_HINT = (
    "Install Chromium: on Debian or Ubuntu `sudo apt-get install chromium` (Ubuntu may name it chromium-browser), "
    "on macOS `brew install --cask chromium`; or set browser.executable_path to a Chromium-family browser."
)
"""What the model and the log are told when no browser is found."""

# Flags every browser gets: no first-run work, no traffic of its own (updates, sync, safe browsing), which
# on a closed network would flood it with retries, and no GPU.
_QUIET_FLAGS = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
    "--disable-default-apps", "--disable-breakpad", "--disable-crash-reporter", "--metrics-recording-only",
    "--password-store=basic", "--use-mock-keychain", "--mute-audio", "--disable-dev-shm-usage",
    "--disable-features=Translate,MediaRouter,OptimizationHints,DialMediaRouteProvider",
)  # fmt: skip


def find_browser(config: BrowserConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """The browser's executable by ``browser.executable_path``, or None when there is none (blocking: it stats)."""
    env = os.environ if environ is None else environ
    path = env.get("PATH", os.defpath)
    if config.executable_path != "auto":
        found = shutil.which(config.executable_path, path=path)
        return os.path.realpath(found) if found else None
    for name in _NAMES:
        found = shutil.which(name, path=path)
        if found:
            return found
    if sys.platform == "darwin":
        return next((bundle for bundle in _MAC_BUNDLES if os.access(bundle, os.X_OK)), None)
    return None


def chromium_argv(executable: str, config: BrowserConfig, user_data_dir: str, resolver_rules: str) -> list[str]:
    """Chromium's command line: a fresh profile in ``user_data_dir``, debugging on the pipe, one blank page,
    names resolved under ``resolver_rules`` (:meth:`~tools.browser.requests.RequestRules.resolver_rules`)."""
    argv = [
        executable, *_QUIET_FLAGS, f"--user-data-dir={user_data_dir}", "--remote-debugging-pipe",
        f"--host-resolver-rules={resolver_rules}",
    ]  # fmt: skip
    if not config.headed:
        argv.append("--headless")
    return [*argv, "--window-size=1280,900", "about:blank"]


def pipe_prologue(read_fd: int, write_fd: int, argv: list[str]) -> list[str]:
    """``argv`` run by ``bash`` with our descriptors ``read_fd`` and ``write_fd`` moved to 3 and 4.

    Both must be 10 or above, so they cannot be 3 or 4 themselves (see :func:`tools.browser.launch`).
    """
    script = f'exec 3<&{read_fd} 4>&{write_fd} {read_fd}<&- {write_fd}>&-; exec "$0" "$@"'
    return ["bash", "-c", script, *argv]
