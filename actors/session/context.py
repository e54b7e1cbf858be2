"""The ToolContext a session hands each tool call: the handler's only way to
reach its session (approval, clarify, progress, background processes,
delegation, sandboxed code), bound to one call so progress lands on it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from actors.session.event_hooks import approval_with_hooks
from actors.session.hub import EventHub
from actors.session.requests import PendingRequests
from messages.events import ToolFinished, ToolProgress, ToolStarted
from tools.approval_policy import ApprovalPolicy
from tools.context import ApprovalAnswer, ApprovalRequest, SessionSearchStore, ShellState
from tools.hooks import NO_HOOKS, HookRunner
from tools.errors import CapabilityUnavailable, ClarifyTimedOut, ClarifyUnavailable
from tools.redact import redact_secrets
from tools.results import ToolResult

if TYPE_CHECKING:
    from actors import ActorBase
    from actors.session.checkpointing import SessionCheckpoints
    from actors.session.turn_parts import TokenMeter
    from tools.background import BackgroundSpec, ProcessInfo, ProcessTable
    from tools.browser import Browser
    from tools.jail import SessionJail
    from tools.files.ledger import FileReadLedger
    from tools.todo import TodoList

__all__ = ["CallContext", "CallProgress", "SessionServices"]

_PROGRESS_SHOWN = 2000
_PROGRESS_WINDOW = 8000


@attrs.frozen
class SessionServices:
    """What a session offers its tool calls; built once when the session starts, shared by its calls.

    ``shell`` and ``todo`` are the session's saved state (tools change them in place); ``file_reads``
    is its unsaved record of what the model has read of each file.
    ``start_background``, ``delegate`` and ``run_sandbox`` are the session's spawners (None where a
    capability is not offered); ``jail`` is its sandbox policy and the daemon's launcher; ``checkpoints``
    snapshots its working directory before a turn's first change (None: never).
    """

    session_id: str
    home: Path
    shell: ShellState
    todo: TodoList
    file_reads: FileReadLedger
    processes: ProcessTable
    store: SessionSearchStore | None
    interactive: bool
    approval_policy: ApprovalPolicy
    hub: EventHub
    requests: PendingRequests
    jail: SessionJail
    start_background: Callable[[BackgroundSpec], Awaitable[ProcessInfo]] | None = None
    browser: Callable[[], Awaitable[Browser]] | None = None
    sees_images: Callable[[], bool] = lambda: False
    delegate: Callable[[CallContext, dict[str, Any]], Awaitable[ToolResult]] | None = None
    run_sandbox: Callable[[CallContext, str], Awaitable[ToolResult]] | None = None
    checkpoints: SessionCheckpoints | None = None
    hooks: HookRunner = NO_HOOKS


@attrs.define
class CallProgress:
    """What a running tool call has shown so far; the call's own (the partial result it returns
    when interrupted).

    Attributes:
        last: the newest progress text the tool reported (a terminal's output so far);
            execute_code keeps its interrupted result here.
        count: how many progress updates there were.
    """

    last: str | None = None
    count: int = 0


class CallContext:
    """A :class:`tools.context.ToolContext` for one tool call.

    Attributes:
        call_id: the model's id of the call.
        job: the tool call's job; a sandbox or subagent starts under it (``job.spawn``,
            ``job.run_job``) and ``job.path`` names it.
        progress: the call's progress (its partial result when the call is interrupted).
        token_meter: the turn's token meter (a subagent's turns count into it).
    """

    __slots__ = (
        "_services", "call_id", "home", "interactive", "jail", "job", "processes", "progress", "session_id",
        "file_reads", "sees_images", "shell", "store", "todo", "token_meter",
    )

    def __init__(
        self, services: SessionServices, call_id: str, job: ActorBase, progress: CallProgress, token_meter: TokenMeter | None = None
    ) -> None:
        self._services = services
        self.call_id = call_id
        self.job = job
        self.progress = progress
        self.token_meter = token_meter
        # What the ToolContext protocol names, taken from the session once per call.
        self.session_id = services.session_id
        self.home = services.home
        self.shell = services.shell
        self.todo = services.todo
        self.file_reads = services.file_reads
        self.processes = services.processes
        self.store = services.store
        self.interactive = services.interactive
        self.jail = services.jail
        self.sees_images = services.sees_images()

    # -- requests to the session -------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Decide by the session's approval policy, asking attached clients where it says so."""
        services = self._services
        ask = approval_with_hooks(services.hooks, services.requests.ask_approval, self.session_id, self.shell.cwd)
        answer = await services.approval_policy.decide(request, ask)
        if request.tool == "terminal" and answer.decision != "deny":
            await self.before_change("terminal", request.command)
        return answer

    def checkpoint_due(self) -> bool:
        """Whether :meth:`before_change` would snapshot the working directory now."""
        checkpoints = self._services.checkpoints
        return checkpoints is not None and checkpoints.due

    async def before_change(self, tool: str, detail: str = "") -> None:
        """Snapshot the session's working directory before ``tool`` changes it (once per turn, when
        ``checkpoints.enabled``); never raises but Cancelled."""
        checkpoints = self._services.checkpoints
        if checkpoints is not None:
            await checkpoints.before_change(tool, detail)

    async def clarify(self, question: str, choices: list[str], allow_freetext: bool) -> str:
        """Ask attached clients a question.

        Raises:
            ClarifyUnavailable: non-interactive session.
            ClarifyTimedOut: nobody answered before the session's clarify deadline (``requests.clarify_deadline``).
        """
        if not self._services.interactive:
            raise ClarifyUnavailable("no user can answer in this context")
        answer = await self._services.requests.ask_clarify(question, choices, allow_freetext)
        if answer is None:
            raise ClarifyTimedOut
        return answer

    def relay(self, event: Any) -> None:
        """Show a sub-session's event (a subagent's) to this session's subscribers."""
        self._services.hub.relay(event)

    def show_inner_call(self, event: type[ToolStarted | ToolFinished], **fields: Any) -> None:
        """Publish the start or end of a call made inside this one (by execute_code's script), so
        clients show it as a tool line of its own, under this call."""
        self._services.hub.publish(event, parent_call_id=self.call_id, **fields)

    def emit(self, progress: str) -> None:
        """Publish a progress line for this call (never blocks)."""
        self.progress.last = progress
        self.progress.count += 1
        self._services.hub.publish(ToolProgress, call_id=self.call_id, text=_shown_progress(progress))

    async def start_background(self, spec: BackgroundSpec) -> ProcessInfo:
        """Start a background process actor owned by the session.

        Raises:
            CapabilityUnavailable: not offered in this session.
        """
        start = self._services.start_background
        if start is None:
            raise CapabilityUnavailable("background processes are not available in this session")
        return await start(spec)

    async def browser(self) -> Browser:
        """The session's browser (an actor under the session), started at the first call.

        Raises:
            CapabilityUnavailable: not offered in this session.
            BrowserUnavailable: it could not start.
        """
        start = self._services.browser
        if start is None:
            raise CapabilityUnavailable("the browser is not available in this session")
        return await start()

    async def delegate(self, args: dict[str, Any]) -> ToolResult:
        """Run delegate_task under this call's worker.

        Raises:
            CapabilityUnavailable: not offered in this session.
        """
        delegate = self._services.delegate
        if delegate is None:
            raise CapabilityUnavailable("delegate_task is not available in this session")
        return await delegate(self, args)

    async def run_sandbox(self, code: str) -> ToolResult:
        """Run execute_code under this call's worker.

        Raises:
            CapabilityUnavailable: not offered in this session.
        """
        run = self._services.run_sandbox
        if run is None:
            raise CapabilityUnavailable("execute_code is not available in this session")
        return await run(self, code)


def _shown_progress(progress: str) -> str:
    """The redacted end of a progress text, for subscribers (``progress.last`` is redacted as a result).

    Tools hand over the newest part of their output, cut anywhere: a first line
    may be the end of a secret whose name was cut off (``…Basic <value>``), so
    whole lines only are shown.  Redacting a window wider than what is shown
    keeps this module's own cut away from the part shown, too.
    """
    window = progress[-_PROGRESS_WINDOW:]
    _, newline, rest = window.partition("\n")
    text = redact_secrets(rest if newline and rest.strip() else window)
    return text[-_PROGRESS_SHOWN:]
