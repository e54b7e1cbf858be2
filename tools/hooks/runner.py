"""Running the user's hooks: commands and Python callables, each bounded by its timeout.

A hook runs in the task of what fired it (a tool call, a turn, a session starting), so a hook that hangs
or crashes holds up or fails only that one event of that one session: it is cut off at its timeout,
logged, and its event goes on as its ``on_error`` says (a ``pre_tool_call`` hook's call runs, or is
blocked); nothing else waits for it and nothing it raises leaves this module.

Command hooks are the user's own programs, as in Hermes: they run unjailed, as the daemon's user, in their
own process group (killed whole at the timeout), in the session's working directory, with the environment
the terminal's shell starts from (``tools.jail.environment.terminal_environment``: the daemon's environment
without provider keys or any other secret-looking variable, ``terminal.env_passthrough`` kept). They never
see ``HERMES_ACTORS_HOME/.env``'s keys nor the daemon's own variables.

With no hook configured for an event, :meth:`HookRunner.wants` is a set lookup and nothing else runs.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import os
import re
import shlex
import signal
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
import trio

from config.hooks import DEFAULT_HOOK_TIMEOUT, TOOL_EVENTS, HookEntry, HooksConfig
from tools.hooks.wire import HookAnswerError, block_message, command_input, parse_output
from tools.redact import redact_secrets

__all__ = ["NO_HOOKS", "Hook", "HookFailed", "HookRunner", "PythonCallable", "hooks_from_config", "import_callable"]

log = logging.getLogger("hermes_actors.hooks")

#: A Python hook: called with the event's fields as keyword arguments; returns its answer (a mapping in Hermes's wire shape, or None).
PythonCallable = Callable[..., Any]
_STDERR_PREVIEW = 400


class HookFailed(Exception):
    """A hook could not give an answer: it could not start, crashed, or printed something not JSON."""


class _Runnable:
    """What a hook runs: a command or a callable."""

    async def call(self, event: str, fields: Mapping[str, Any], cwd: str) -> Any:
        raise NotImplementedError


@attrs.frozen
class _Command(_Runnable):
    """A program given the event's JSON on stdin; its stdout is its answer."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = attrs.field(repr=False)

    async def call(self, event: str, fields: Mapping[str, Any], cwd: str) -> Any:
        try:
            done = await trio.run_process(
                list(self.argv), stdin=command_input(event, fields, cwd), capture_stdout=True, capture_stderr=True,
                check=False, cwd=cwd if os.path.isdir(cwd) else None, env=dict(self.env), start_new_session=True,
                deliver_cancel=_kill_group,
            )
        except FileNotFoundError:
            raise HookFailed(f"{self.argv[0]}: command not found") from None
        except PermissionError:
            raise HookFailed(f"{self.argv[0]}: not executable") from None
        except OSError as exc:
            raise HookFailed(f"{self.argv[0]}: cannot start: {exc.strerror}") from None
        if done.returncode != 0:
            # Still read: a script may say why it blocks and exit nonzero (as Hermes reads it).
            stderr = done.stderr.decode("utf-8", errors="replace").strip()[:_STDERR_PREVIEW]
            log.warning("hook %s exited %d: %s", shlex.join(self.argv), done.returncode, redact_secrets(stderr))
        try:
            return parse_output(done.stdout)
        except HookAnswerError as exc:
            raise HookFailed(str(exc)) from None


async def _kill_group(process: trio.Process) -> None:
    """Cut a hook off at its timeout: its whole process group, at once (a script's children too)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@attrs.frozen
class _Callable(_Runnable):
    """A Python function called with the event's fields: a coroutine function on the loop, any other on a
    thread (abandoned, not waited for, when it overruns its timeout)."""

    function: PythonCallable

    async def call(self, event: str, fields: Mapping[str, Any], cwd: str) -> Any:
        try:
            if inspect.iscoroutinefunction(self.function):
                return await self.function(**fields)
            return await trio.to_thread.run_sync(functools.partial(self.function, **fields), abandon_on_cancel=True)
        except trio.Cancelled:
            raise
        except Exception as exc:
            raise HookFailed(f"raised {type(exc).__name__}: {exc}") from exc


@attrs.frozen
class _Unloadable(_Runnable):
    """A ``python`` hook whose function could not be imported: every call of it fails, saying why."""

    reason: str

    async def call(self, event: str, fields: Mapping[str, Any], cwd: str) -> Any:
        raise HookFailed(self.reason)


@attrs.frozen
class Hook:
    """One hook on one event.

    Attributes:
        event: the event (Hermes's name).
        label: how logs and ``hooks list`` name it (its command, its function, or its plugin).
        runnable: what it runs.
        matcher: for tool events, the tool names it runs for (matched in full); None: all.
        timeout: seconds it may take.
        on_error: ``allow`` or ``block``: what a failed ``pre_tool_call`` hook does to its call.
    """

    event: str
    label: str
    runnable: _Runnable = attrs.field(repr=False)
    matcher: re.Pattern[str] | None = None
    timeout: float = DEFAULT_HOOK_TIMEOUT
    on_error: str = "allow"

    @classmethod
    def of_callable(cls, event: str, label: str, function: PythonCallable) -> Hook:
        """A hook running ``function`` (a plugin's), with Hermes's default timeout; its failures let calls run."""
        return cls(event, label, _Callable(function))

    def applies_to(self, tool_name: str | None) -> bool:
        """Whether it runs for a call of ``tool_name`` (always, for events that are not a tool's)."""
        return self.matcher is None or (tool_name is not None and self.matcher.fullmatch(tool_name) is not None)


class HookRunner:
    """Every hook of the daemon, by event; fires them for the sessions.

    Args:
        hooks: the hooks, in the order each event runs them (configured ones first, then plugins').
    """

    def __init__(self, hooks: Iterable[Hook] = ()) -> None:
        by_event: dict[str, list[Hook]] = {}
        for hook in hooks:
            by_event.setdefault(hook.event, []).append(hook)
        self._hooks: dict[str, tuple[Hook, ...]] = {event: tuple(found) for event, found in by_event.items()}

    def wants(self, event: str) -> bool:
        """Whether any hook is configured on ``event`` (the one check on the hot path when none is)."""
        return event in self._hooks

    def hooks(self) -> list[Hook]:
        """Every hook, event by event."""
        return [hook for found in self._hooks.values() for hook in found]

    async def pre_tool_call(self, fields: Mapping[str, Any], cwd: str) -> str | None:
        """Run the ``pre_tool_call`` hooks in order; the reason the first that blocks gives, or None.

        A hook that fails blocks only when its ``on_error`` is ``block``; the reason then says which
        hook failed and how (never what it printed).
        """
        for hook in self._matching("pre_tool_call", fields):
            try:
                answer = await self._run(hook, fields, cwd)
            except HookFailed as exc:
                if hook.on_error == "block":
                    return f"Blocked: the pre_tool_call hook {hook.label} failed ({exc}), and it is set to block on failure."
                continue
            reason = block_message(answer)
            if reason is not None:
                log.info("hook %s blocked %s in session %s", hook.label, fields.get("tool_name"), fields.get("session_id"))
                return reason
        return None

    async def notify(self, event: str, fields: Mapping[str, Any], cwd: str) -> list[Any]:
        """Run ``event``'s hooks in order; the answers of those that gave one (failures are logged and
        skipped: nothing here decides a call)."""
        answers = []
        for hook in self._matching(event, fields):
            try:
                answer = await self._run(hook, fields, cwd)
            except HookFailed:
                continue
            if answer is not None:
                answers.append(answer)
        return answers

    def _matching(self, event: str, fields: Mapping[str, Any]) -> list[Hook]:
        hooks = self._hooks.get(event, ())
        if event not in TOOL_EVENTS:
            return list(hooks)
        return [hook for hook in hooks if hook.applies_to(fields.get("tool_name"))]

    async def _run(self, hook: Hook, fields: Mapping[str, Any], cwd: str) -> Any:
        """The hook's answer, within its timeout.

        Raises:
            HookFailed: it failed or overran (logged here, once).
        """
        session = fields.get("session_id") or "-"
        try:
            with trio.fail_after(hook.timeout):
                return await hook.runnable.call(hook.event, fields, cwd)
        except trio.TooSlowError:
            log.warning("hook %s (%s, session %s) timed out after %g s", hook.label, hook.event, session, hook.timeout)
            raise HookFailed(f"timed out after {hook.timeout:g} s") from None
        except HookFailed as exc:
            log.warning("hook %s (%s, session %s) failed: %s", hook.label, hook.event, session, redact_secrets(str(exc)))
            raise


#: The runner of a daemon with no hooks.
NO_HOOKS = HookRunner()


def hooks_from_config(config: HooksConfig, environ: Mapping[str, str], resolve: Callable[[str], PythonCallable]) -> list[Hook]:
    """The hooks ``config`` configures, in its order.

    Args:
        environ: the environment command hooks are given (already without secrets).
        resolve: imports a ``python`` hook's ``module:function`` (it may raise; the hook then fails at
            each call, saying why, and the failure is logged now).
    """
    hooks = []
    for event, entries in config.by_event().items():
        for entry in entries:
            hooks.append(Hook(
                event, entry.label, _runnable(entry, environ, resolve),
                re.compile(entry.matcher) if entry.matcher is not None else None, entry.timeout, entry.on_error,
            ))
    return hooks


def _runnable(entry: HookEntry, environ: Mapping[str, str], resolve: Callable[[str], PythonCallable]) -> _Runnable:
    if entry.command is not None:
        try:
            argv = shlex.split(entry.command)
        except ValueError as exc:
            return _Unloadable(f"its command cannot be split: {exc}")
        if not argv:
            return _Unloadable("its command is empty")
        return _Command((str(Path(argv[0]).expanduser()), *argv[1:]), environ)
    assert entry.python is not None  # Invariant: HookEntry has exactly one of the two.
    try:
        return _Callable(resolve(entry.python))
    except Exception as exc:
        reason = f"cannot load {entry.python}: {type(exc).__name__}: {exc}"
        log.error("hook python %s: %s", entry.python, reason)
        return _Unloadable(reason)


def import_callable(reference: str) -> PythonCallable:
    """The function ``module:function`` names (``module:Class.method`` too).

    Raises:
        ImportError: the module cannot be imported.
        AttributeError: it has no such function.
        TypeError: what it names cannot be called.
    """
    module_name, _, qualname = reference.partition(":")
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise TypeError(f"{reference} is not callable")
    return target
