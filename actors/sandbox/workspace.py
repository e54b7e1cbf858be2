"""The private directory of one run: generated module, script and socket; removed whatever happens."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile

import attrs

from actors.sandbox.server import open_listener
from actors.sandbox.stubs import STUB_MODULE_FILE, StubModule, stub_module
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


def create_workspace(code: str | None, stub: StubModule, base_dir: str | None = None) -> Workspace:
    """Create a fresh 0700 directory holding ``hermes_tools.py`` (and its bytecode) and ``script.py`` (blocking).

    ``code`` None leaves ``script.py`` out: a spare interpreter writes it once its run is known. ``base_dir`` defaults to the system temp directory, or ``/tmp`` when that path is
    too long for the socket inside.
    """
    directory = tempfile.mkdtemp(prefix=_PREFIX, dir=base_dir if base_dir is not None else _default_base_dir())
    try:
        os.chmod(directory, 0o700)
        files: list[tuple[str, bytes]] = [(STUB_MODULE_FILE, stub.source.encode())]
        if code is not None:
            files.append((SCRIPT_FILE, code.encode()))
        if stub.bytecode is not None:
            os.mkdir(os.path.join(directory, os.path.dirname(stub.bytecode_name)), 0o700)
            files.append((stub.bytecode_name, stub.bytecode))
        for name, data in files:
            _write_new(os.path.join(directory, name), data)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return Workspace(directory)


def _write_new(path: str, data: bytes) -> None:
    # O_EXCL: a file of that name the daemon did not make is never written through.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(data)


def remove_workspace(workspace: Workspace) -> None:
    """Delete the directory and everything in it, socket included (blocking)."""
    shutil.rmtree(workspace.directory, ignore_errors=True)


def open_workspace(code: str | None, tools: frozenset[str], base_dir: str | None) -> tuple[Workspace, socket.socket]:
    """The run's directory (:func:`create_workspace`) and its listening socket, in one trip to a worker thread
    (blocking; the stub is generated and compiled here the first time a set of tools asks for it).

    Raises:
        OSError: the directory or its files could not be made.
        SandboxSetupError: the socket could not be bound (the directory is removed again).
    """
    workspace = create_workspace(code, stub_module(tools), base_dir)
    try:
        return workspace, open_listener(workspace.socket_path)
    except BaseException:
        remove_workspace(workspace)
        raise
