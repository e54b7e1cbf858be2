"""A cron job's script: Hermes's data-collection (or, with ``no_agent``, whole-job) script, run jailed.

As in Hermes, a job names a script by a path relative to the scripts directory
(``HERMES_ACTORS_HOME/scripts``, Hermes's ``~/.hermes/scripts``); nothing outside it can be named, by
``..``, an absolute path or a symbolic link. ``.sh`` and ``.bash`` scripts run with bash, any other with
Python. Unlike Hermes's, the script runs as every process a tool starts: in a jail of its own under the
cron sessions' sandbox mode, through the daemon's launcher, with the terminal's environment (secrets
left out), in the job's working directory. The jail hides the daemon's home, the scripts directory with
it, so the daemon reads the script and hands its text to the interpreter (``bash -c``/``python3 -c``).
Its output is redacted like any tool's.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import attrs
import trio

from tools.jail import (
    HeadTailBuffer, JailUnavailable, LauncherClosed, LimitsNotApplied, PathRefused, SandboxLimitsRefused, SandboxModeRefused,
    SessionJail, drain,
)
from tools.jail.environment import terminal_environment
from tools.jail.runtime import DaemonJails
from tools.redact import redact_secrets

__all__ = ["SCRIPTS_DIR", "CronScripts", "ScriptRefused", "ScriptRun"]

log = logging.getLogger("hermes_actors.platform.cron")

#: The scripts directory, under ``HERMES_ACTORS_HOME``.
SCRIPTS_DIR: Final = "scripts"
#: The largest script: its text travels as one argument, which Linux caps at 128 KiB.
MAX_SCRIPT_BYTES: Final = 100_000
#: Output kept of a run (its beginning and end).
MAX_OUTPUT_BYTES: Final = 100_000
#: Between SIGTERM and SIGKILL when a script outlives its timeout.
STOP_GRACE_SECONDS: Final = 5.0
_SHELL_SUFFIXES: Final = (".sh", ".bash")


class ScriptRefused(ValueError):
    """A script path that names nothing runnable in the scripts directory; ``str()`` says why."""


@attrs.frozen
class ScriptRun:
    """A script's run: whether it exited 0, and its output (or what went wrong, for the run's prompt)."""

    ok: bool
    output: str


class CronScripts:
    """Checks and runs jobs' scripts (see the module's docstring).

    Args:
        home: ``HERMES_ACTORS_HOME``.
        jails: the daemon's jails; None (no daemon) runs no script.
        environ: the daemon's environment (a script gets the terminal's part of it).
        timeout: seconds a script may run (Hermes's ``cron.script_timeout_seconds`` default, 3600).
    """

    def __init__(self, home: Path, jails: DaemonJails | None, environ: Mapping[str, str], timeout: float) -> None:
        self.directory = home / SCRIPTS_DIR
        self.jails = jails
        self.environ = environ
        self.timeout = timeout

    def check(self, script: str) -> Path:
        """The script file ``script`` names (blocking: it looks at the disk).

        Raises:
            ScriptRefused: absolute, outside the scripts directory, missing, not a file, or too big.
        """
        if not script.strip() or os.path.isabs(script) or script.startswith("~"):
            raise ScriptRefused(f"A script is named by its path under {self.directory}, e.g. 'check_disk.sh'; got {script!r}.")
        root = self.directory.resolve()
        path = (root / script).resolve()
        if not path.is_relative_to(root):
            raise ScriptRefused(f"The script {script!r} lies outside {self.directory}.")
        if not path.is_file():
            raise ScriptRefused(f"No script {script!r} in {self.directory}: write it there first.")
        if path.stat().st_size > MAX_SCRIPT_BYTES:
            raise ScriptRefused(f"The script {script!r} is over {MAX_SCRIPT_BYTES:,} bytes.")
        return path

    async def run(self, script: str, cwd: str) -> ScriptRun:
        """Run ``script`` in ``cwd``, jailed, to its end or the timeout; never raises for the script's
        own trouble (it is the run's to report)."""
        if self.jails is None:
            return ScriptRun(False, "Scripts run only in the daemon, jailed like every tool's process.")
        try:
            argv = await trio.to_thread.run_sync(self._argv, script)
        except (ScriptRefused, OSError) as exc:
            return ScriptRun(False, str(exc))
        try:
            runtime = await self.jails.open_session("cs" + secrets.token_hex(6), self.jails.mode_for(None), cwd)
        except (SandboxModeRefused, SandboxLimitsRefused, OSError) as exc:
            return ScriptRun(False, f"The script {script!r} could not start: its jail could not be made: {exc}")
        try:
            return await self._run(runtime.jail, argv, cwd, script)
        finally:
            with trio.CancelScope(shield=True):
                await self.jails.close_session(runtime)

    def _argv(self, script: str) -> list[str]:
        path = self.check(script)
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix.lower() in _SHELL_SUFFIXES:
            return ["bash", "-c", text, path.name]
        return ["python3", "-c", text]

    async def _run(self, jail: SessionJail, argv: list[str], cwd: str, script: str) -> ScriptRun:
        output = HeadTailBuffer(MAX_OUTPUT_BYTES)
        errors = HeadTailBuffer(MAX_OUTPUT_BYTES)
        try:
            process = await jail.spawn(argv, cwd=cwd, env=terminal_environment(self.environ))
        except (JailUnavailable, LimitsNotApplied, PathRefused, LauncherClosed, OSError) as exc:
            return ScriptRun(False, f"The script {script!r} could not start: {exc}")
        try:
            with trio.move_on_after(self.timeout) as timer:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(drain, process.stdout, output)
                    if process.stderr is not None:
                        nursery.start_soon(drain, process.stderr, errors)
                    code = await process.wait()
        finally:
            await process.stop(STOP_GRACE_SECONDS)
            process.close_pipes()
        stdout, stderr = redact_secrets(output.render().strip()), redact_secrets(errors.render().strip())
        if timer.cancelled_caught:
            return ScriptRun(False, f"The script {script!r} timed out after {self.timeout:g} s.")
        if code != 0:
            parts = [f"The script {script!r} exited with status {code}."]
            parts += [f"stderr:\n{stderr}"] if stderr else []
            parts += [f"stdout:\n{stdout}"] if stdout else []
            return ScriptRun(False, "\n".join(parts))
        log.info("cron script %s: exited 0 with %d characters of output", script, len(stdout))
        return ScriptRun(True, stdout)
