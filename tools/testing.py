"""``LocalToolContext``: a small, real ``ToolContext`` for standalone use and tests.

It runs handlers outside any session actor: approvals are answered by a
callable you pass (none → every request denied), clarify by a callable (none →
unavailable), progress lines are collected in a list, background processes
run in a nursery you pass, and delegation / sandboxed code are not offered.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from tools.background import (
    BackgroundSpec,
    ProcessInfo,
    ProcessNotification,
    ProcessTable,
    start_background_process,
)
from config.browser import BrowserConfig
from tools.browser import INSTALL_HINT, Browser, find_browser
from tools.context import ApprovalAnswer, ApprovalDecision, ApprovalRequest, SessionSearchStore, ShellState
from tools.errors import CapabilityUnavailable, ClarifyUnavailable
from tools.jail import SessionJail
from tools.results import ToolResult
from tools.files.ledger import FileReadLedger
from tools.todo import TodoList

__all__ = ["Approver", "Clarifier", "LocalToolContext"]

Approver = Callable[[ApprovalRequest], "ApprovalDecision | Awaitable[ApprovalDecision]"]
"""Answers an approval request, synchronously or as a coroutine."""
Clarifier = Callable[[str, list[str], bool], "str | Awaitable[str]"]
"""Answers a clarify question ``(question, choices, allow_freetext)``."""


@attrs.define(kw_only=True)
class LocalToolContext:
    """A ``ToolContext`` that needs no session actor.

    Args:
        home: HERMES_ACTORS_HOME for this context (memories live under it).
        cwd: starting working directory of the shell state.
        session_id: id reported to handlers.
        approver: answers approval requests; None denies everything.
        clarifier: answers clarify questions; None makes clarify unavailable.
        interactive: False denies approvals and disables clarify, as for subagents.
        nursery: where background processes run; None makes them unavailable.
        store: the session store for session_search, if any.
        processes: the background-process table (a fresh one by default).
        jail: the sandbox policy and launcher; by default ``full-access`` with the home hidden and
            no launcher (processes start unjailed, as ``full-access`` means).
        browser_config: the ``browser`` section; with a nursery, the browser tools start a browser in it.
        sees_images: whether the "model" takes images (browser_vision's screenshot).
    """

    home: Path
    cwd: str = attrs.field(default=".", converter=lambda p: str(Path(p).resolve()))
    session_id: str = "local"
    approver: Approver | None = None
    clarifier: Clarifier | None = None
    interactive: bool = True
    nursery: trio.Nursery | None = None
    store: SessionSearchStore | None = None
    processes: ProcessTable = attrs.field(factory=ProcessTable)
    jail: SessionJail = attrs.field(default=None)
    browser_config: BrowserConfig | None = None
    sees_images: bool = False
    _browser: Browser | None = attrs.field(default=None, init=False)
    shell: ShellState = attrs.field(init=False)
    todo: TodoList = attrs.field(factory=TodoList, init=False)
    file_reads: FileReadLedger = attrs.field(factory=FileReadLedger, init=False)
    progress: list[str] = attrs.field(factory=list, init=False)
    """Every line passed to ``emit``, in order."""
    approvals: list[ApprovalRequest] = attrs.field(factory=list, init=False)
    """Every approval request received, in order."""
    notifications: list[ProcessNotification] = attrs.field(factory=list, init=False)
    """Background-process notifications (completion, watch matches), in order."""

    def __attrs_post_init__(self) -> None:
        self.shell = ShellState(cwd=self.cwd, env={})
        if self.jail is None:
            self.jail = SessionJail.full_access(self.home, self.cwd)

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Ask the approver (the user); non-interactive contexts and a missing approver deny."""
        self.approvals.append(request)
        await trio.lowlevel.checkpoint()
        if not self.interactive or self.approver is None:
            return ApprovalAnswer("deny", "nobody (no one can approve in this context)")
        answer = self.approver(request)
        if inspect.isawaitable(answer):
            answer = await answer
        return ApprovalAnswer(answer, "the user")

    async def clarify(self, question: str, choices: list[str], allow_freetext: bool) -> str:
        """Ask the clarifier.

        Raises:
            ClarifyUnavailable: non-interactive context or no clarifier given.
        """
        await trio.lowlevel.checkpoint()
        if not self.interactive or self.clarifier is None:
            raise ClarifyUnavailable("nobody can answer questions in this context")
        answer = self.clarifier(question, choices, allow_freetext)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    def emit(self, progress: str) -> None:
        """Record a progress line."""
        self.progress.append(progress)

    async def start_background(self, spec: BackgroundSpec) -> ProcessInfo:
        """Start a background process in the given nursery, through this context's jail unless the spec has one.

        Raises:
            CapabilityUnavailable: no nursery was given.
            ProcessLimitReached: the table is full of running processes.
        """
        if self.nursery is None:
            raise CapabilityUnavailable("background processes are not available in this context")
        if spec.jail is None:
            spec = attrs.evolve(spec, jail=self.jail)
        return await start_background_process(self.nursery, spec, self.processes, self.notifications.append)

    async def browser(self) -> Browser:
        """A browser in the given nursery, started at the first call and kept (a new one once it stopped).

        Raises:
            CapabilityUnavailable: no nursery or no ``browser_config`` was given, or no browser is installed.
            BrowserUnavailable: it could not start.
        """
        if self.nursery is None or self.browser_config is None:
            raise CapabilityUnavailable("the browser is not available in this context")
        if self._browser is None or self._browser.stopped:
            executable = await trio.to_thread.run_sync(find_browser, self.browser_config)
            if executable is None:
                raise CapabilityUnavailable(f"no browser is installed here. {INSTALL_HINT}")
            browser = Browser(self.browser_config, self.jail, executable)
            await self.nursery.start(browser.run)
            self._browser = browser
        return self._browser

    async def delegate(self, args: dict[str, Any]) -> ToolResult:
        """Not offered here.

        Raises:
            CapabilityUnavailable: always.
        """
        raise CapabilityUnavailable("delegate_task is not available in this context")

    async def run_sandbox(self, code: str) -> ToolResult:
        """Not offered here.

        Raises:
            CapabilityUnavailable: always.
        """
        raise CapabilityUnavailable("execute_code is not available in this context")
