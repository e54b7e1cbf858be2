"""A small real file system for policy tests: a user's home, the daemon's home, sessions, a workspace.

It lives outside ``/tmp``: a jailed session sees ``/tmp`` as its own private directory, so a world
under the host's ``/tmp`` would be out of its reach for that reason alone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs

from config.sandbox import SandboxConfig
from tools.jail import JailPolicy, Launcher, SandboxMode, SessionJail, build_policy
from tools.testing import LocalToolContext

__all__ = ["FILES", "World", "make_world"]

FILES = {
    "user/.ssh/id_ed25519": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
    ),
    "user/notes.txt": "the user's own notes\n",
    "hermes/.env": "OPENAI_API_KEY=sk-proj-0123456789abcdefghijKLMNOP\n",
    "hermes/state.db": "SQLite format 3 (needle)\n",
    "hermes/SOUL.md": "You are the user's agent. needle\n",
    "hermes/memories/MEMORY.md": "needle remembered\n",
    "hermes/logs/daemon.log": "needle logged\n",
    "hermes/run/control.sock": "",
    "hermes/skills/demo/run.py": "print('a skill') # needle\n",
    "runtime/other-session/tmp/their.txt": "needle of another session\n",
    "ws/code.py": "print('needle')\n",
    "ws/sub/deep.txt": "needle deep\n",
    "outside/other.txt": "needle outside\n",
}


@attrs.frozen
class World:
    """Paths of one world; ``policy(mode)`` builds a session's policy over it.

    ``launcher`` starts its sessions' processes (ripgrep for search_files): None where none are started.
    """

    root: Path
    launcher: Launcher | None = None

    @property
    def workspace(self) -> Path:
        """The session's working directory."""
        return self.root / "ws"

    @property
    def home(self) -> Path:
        """HERMES_ACTORS_HOME."""
        return self.root / "hermes"

    @property
    def user(self) -> Path:
        """The user's ``$HOME``."""
        return self.root / "user"

    @property
    def tmp_dir(self) -> Path:
        """This session's private temp directory, inside the runtime directory."""
        return self.root / "runtime" / "me" / "tmp"

    def policy(self, mode: SandboxMode, config: SandboxConfig | None = None) -> JailPolicy:
        """The policy of a session in ``mode`` (skills exposed read-only, as the jail binds them)."""
        return build_policy(
            config or SandboxConfig(),
            mode=mode,
            workspace=str(self.workspace),
            tmp_dir=str(self.tmp_dir),
            daemon_home=str(self.home),
            runtime_dirs=[str(self.root / "runtime")],
            exposed=[str(self.home / "skills")],
            environ={"HOME": str(self.user)},
        )

    def context(self, mode: SandboxMode, config: SandboxConfig | None = None) -> LocalToolContext:
        """A tool context of a session in ``mode``, its shell in the workspace."""
        jail = SessionJail(self.policy(mode, config), self.launcher)
        return LocalToolContext(home=self.home, cwd=self.workspace, jail=jail)


def make_world(launcher: Launcher | None = None) -> Iterator[World]:
    """Create a world under ``/var/tmp`` (symlinks included), yield it, remove it."""
    root = Path(tempfile.mkdtemp(prefix="hx-world-", dir="/var/tmp")).resolve()
    try:
        for rel, text in FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        (root / "runtime/me/tmp").mkdir(parents=True)
        ws = root / "ws"
        os.symlink(root / "hermes/.env", ws / "env-link")
        os.symlink(root / "user/.ssh", ws / "ssh-link")
        os.symlink("../hermes", ws / "home-link")
        os.symlink(root / "outside/other.txt", ws / "outside-link")
        os.symlink("loop-b", ws / "loop-a")
        os.symlink("loop-a", ws / "loop-b")
        yield World(root, launcher)
    finally:
        shutil.rmtree(root, ignore_errors=True)
