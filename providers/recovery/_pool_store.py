"""The credential pool's state file: locked read-modify-write, atomic replace.

Several processes (two daemons, a CLI run beside a daemon) may share one pool.
Every change takes an exclusive ``flock`` on a lock file beside the state file,
re-reads the state, applies the change and replaces the file atomically, so no
process overwrites another's cooldowns with a stale copy. The file holds only
key fingerprints, never keys. These functions block: callers run them in a
worker thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from providers.recovery.errors import CredentialStoreError

log = logging.getLogger(__name__)

T = TypeVar("T")
State = dict[str, Any]

_VERSION = 1


def empty_state() -> State:
    """A pool state with no history."""
    return {"version": _VERSION, "cursor": 0, "entries": {}}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _read(path: Path) -> State:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return empty_state()
    try:
        state = json.loads(raw)
    except json.JSONDecodeError:
        # A torn or hand-edited file must not stop every provider call: start
        # afresh (only cooldowns are lost) and say so.
        log.warning("credential pool state %s is not valid JSON; starting with a fresh state", path)
        return empty_state()
    if not isinstance(state, dict) or not isinstance(state.get("entries"), dict):
        log.warning("credential pool state %s has an unexpected shape; starting with a fresh state", path)
        return empty_state()
    state.setdefault("cursor", 0)
    return state


def _write(path: Path, state: State) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def read(path: Path) -> State:
    """The current state on disk, read under the lock (nothing is written).

    Raises:
        CredentialStoreError: the file or its directory cannot be used.
    """
    try:
        with _locked(path):
            return _read(path)
    except OSError as exc:
        raise CredentialStoreError(f"cannot read credential pool state {path}: {exc.strerror or exc}") from exc


def update(path: Path, change: Callable[[State], T]) -> T:
    """Apply ``change`` to the current state on disk and persist the result.

    ``change`` mutates the state dict it is given and returns a value, which is
    returned here.

    Raises:
        CredentialStoreError: the file or its directory cannot be used.
    """
    try:
        with _locked(path):
            state = _read(path)
            result = change(state)
            _write(path, state)
            return result
    except OSError as exc:
        raise CredentialStoreError(f"cannot update credential pool state {path}: {exc.strerror or exc}") from exc
