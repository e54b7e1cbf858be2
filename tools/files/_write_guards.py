"""What ``write_file`` and ``patch`` check around a write: paths they refuse, a changed file, the syntax after.

The lists follow Hermes Agent (``tools/file_tools.py`` for system paths and the Docker socket,
``agent/file_safety.py`` for credential files and directories), with this agent's own
``config.yaml`` and ``.env`` under ``HERMES_ACTORS_HOME`` in place of Hermes's. The sandbox
policy (``_guard``) still decides first; these refusals hold even under ``full-access``, where a
model talked into it could otherwise switch off its own approvals or plant a persistent hook.
"""

from __future__ import annotations

import ast
import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import yaml

from tools.errors import ToolInputError
from tools.files._guard import Target
from tools.files.ledger import FileReadLedger
from tools.redact import redact_secrets

__all__ = ["SensitivePath", "has_linter", "lint_report", "refuse_sensitive", "stale_warning"]

_SYSTEM_PREFIXES: Final = (
    "/etc/", "/boot/", "/usr/lib/systemd/", "/private/etc/", "/private/var/db/", "/private/var/root/",
)  # fmt: skip
_SYSTEM_EXACT: Final = frozenset({"/var/run/docker.sock", "/run/docker.sock"})
_HOME_CREDENTIAL_DIRS: Final = (
    ".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".config/gh", ".config/gcloud",
)  # fmt: skip
_HOME_CREDENTIAL_FILES: Final = (
    ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials",
)  # fmt: skip
_AGENT_OWN: Final = ("config.yaml", ".env")


class SensitivePath(ToolInputError):
    """A write to a path the file tools never write (a system path, a credential store, the agent's own config)."""


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _sensitive_reason(path: str, agent_home: str, user_home: str) -> str | None:
    if any(_under(path, own) for own in (os.path.join(agent_home, name) for name in _AGENT_OWN)):
        return "agent-config"
    if path in _SYSTEM_EXACT or path.startswith(_SYSTEM_PREFIXES):
        return "system"
    if any(_under(path, os.path.join(user_home, name)) for name in _HOME_CREDENTIAL_DIRS + _HOME_CREDENTIAL_FILES):
        return "credential"
    return None


def refuse_sensitive(home: Path, target: Target) -> None:
    """Refuse writing ``target`` when it (as shown, or where it really is) is a sensitive path.

    Args:
        home: HERMES_ACTORS_HOME (its ``config.yaml`` and ``.env`` are the agent's own).
        target: the checked target.

    Raises:
        SensitivePath: the path is refused, with what to do instead.
    """
    agent_home = os.path.realpath(home)
    user_home = os.path.realpath(os.path.expanduser("~"))
    reasons = {_sensitive_reason(path, agent_home, user_home) for path in (target.shown, target.host)} - {None}
    if not reasons:
        return
    if "agent-config" in reasons:
        raise SensitivePath(
            f"Refused: {target.shown} is this agent's own configuration; the file tools never change it, so "
            "a model cannot switch off its own safeguards. Ask the user to edit it."
        )
    what = "a protected system path" if "system" in reasons else "a credential store"
    raise SensitivePath(
        f"Refused: {target.shown} is {what}; write_file and patch never write there. If the change is really "
        "needed, run it through the terminal tool, where it goes through approval."
    )


def stale_warning(ledger: FileReadLedger, target: Target) -> str | None:
    """A warning when the file changed on disk since the model last read or wrote it (None: unchanged or never seen).

    Blocking (a ``stat``). Only a warning: the write goes ahead, as in Hermes.
    """
    seen = ledger.seen_mtime(target.host)
    if seen is None:
        return None
    try:
        now = os.stat(target.host).st_mtime_ns
    except OSError:
        return None
    if now == seen:
        return None
    return (
        f"Warning: {target.shown} changed on disk since you last read it (an external edit or another "
        "process). What you read may be out of date; read it again to check the result."
    )


def _python(text: str) -> str | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        where = f" (line {exc.lineno}, column {exc.offset})" if exc.lineno else ""
        return f"SyntaxError: {exc.msg}{where}"
    return None


def _json(text: str) -> str | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"JSONDecodeError: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    return None


def _yaml(text: str) -> str | None:
    # Parsing events only: loading would reject valid multi-document files and application tags.
    try:
        for _event in yaml.parse(text, Loader=yaml.SafeLoader):
            pass
    except yaml.YAMLError as exc:
        return f"YAMLError: {exc}"
    return None


def _toml(text: str) -> str | None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return f"TOMLDecodeError: {exc}"
    return None


_LINTERS: Final[dict[str, Callable[[str], str | None]]] = {
    ".py": _python, ".json": _json, ".yaml": _yaml, ".yml": _yaml, ".toml": _toml,
}  # fmt: skip


def has_linter(path: str) -> bool:
    """Whether ``path``'s language has an in-process syntax check."""
    return os.path.splitext(path)[1].lower() in _LINTERS


def lint_report(path: str, before: str | None, after: str) -> dict[str, Any] | None:
    """The in-process syntax check of ``after`` for ``path``'s language, in Hermes's shape; None without a checker.

    ``{"status": "ok"}`` or ``{"status": "error", "output": ...}``; when ``before`` already failed
    the same way, a ``message`` says the edit did not break it. Blocking (parsing): run in a thread.
    """
    check = _LINTERS.get(os.path.splitext(path)[1].lower())
    if check is None:
        return None
    # Parsing a hostile file can hit the recursion limit (deep nesting): that is a finding too.
    try:
        found = check(after)
    except (RecursionError, MemoryError, ValueError) as exc:
        found = f"{type(exc).__name__}: the file could not be parsed"
    if found is None:
        return {"status": "ok"}
    report: dict[str, Any] = {"status": "error", "output": redact_secrets(found)}
    if before is not None:
        try:
            earlier = check(before)
        except (RecursionError, MemoryError, ValueError):
            earlier = None
        if earlier == found:
            report["message"] = "This error was already in the file before the edit; the file is still broken."
    return report
