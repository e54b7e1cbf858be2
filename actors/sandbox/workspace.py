"""The private directory of one run: generated module, script and socket; removed whatever happens."""

from __future__ import annotations

import os
import shutil
import tempfile

import attrs

from actors.sandbox.stubs import STUB_MODULE_FILE
from messages.sockets import MAX_SOCKET_PATH_BYTES

SCRIPT_FILE = "script.py"
SOCKET_FILE = "rpc.sock"


@attrs.frozen
class Workspace:
    """Paths of one sandbox directory."""

    directory: str

    @property
    def script_path(self) -> str:
        """The script the child runs."""
        return os.path.join(self.directory, SCRIPT_FILE)

    @property
    def socket_path(self) -> str:
        """The RPC socket."""
        return os.path.join(self.directory, SOCKET_FILE)


_PREFIX = "hx-sbx-"
# mkdtemp adds 8 random characters to the prefix.
_SOCKET_SUFFIX_BYTES = len(os.path.join(_PREFIX + "x" * 8, SOCKET_FILE)) + 1


def _default_base_dir() -> str:
    # A long $TMPDIR (macOS: /var/folders/...) would leave no room for the socket name.
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + _SOCKET_SUFFIX_BYTES > MAX_SOCKET_PATH_BYTES:
        return "/tmp"
    return base


def create_workspace(code: str, stub_source: str, base_dir: str | None = None) -> Workspace:
    """Create a fresh 0700 directory holding ``hermes_tools.py`` and ``script.py`` (blocking).

    ``base_dir`` defaults to the system temp directory, or ``/tmp`` when that path is too long
    for the socket inside.
    """
    directory = tempfile.mkdtemp(prefix=_PREFIX, dir=base_dir if base_dir is not None else _default_base_dir())
    try:
        os.chmod(directory, 0o700)
        for name, text in ((STUB_MODULE_FILE, stub_source), (SCRIPT_FILE, code)):
            fd = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return Workspace(directory)


def remove_workspace(workspace: Workspace) -> None:
    """Delete the directory and everything in it, socket included (blocking)."""
    shutil.rmtree(workspace.directory, ignore_errors=True)
