"""The ToolContext a session hands each tool call: the handler's only way to
reach its session (approval, clarify, progress, background processes,
delegation, sandboxed code), bound to one call so progress lands on it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.session.hub import EventHub
from actors.session.requests import NO_ANSWER, PendingRequests
from messages.events import ToolProgress
from tools.context import ApprovalDecision, ApprovalRequest, SessionSearchStore, ShellState
from tools.errors import CapabilityUnavailable, ClarifyUnavailable
from tools.redact import redact_secrets
from tools.results import ToolResult

if TYPE_CHECKING:
    from tools.background import BackgroundSpec, ProcessInfo, ProcessTable
    from tools.jail import SessionJail
    from tools.todo import TodoList

__all__ = ["CallContext", "SessionServices"]

_PROGRESS_SHOWN = 2000
_PROGRESS_WINDOW = 8000


class SessionServices:
    """What a session offers its tool calls; one per session, shared by its calls.

    ``start_background``, ``delegate`` and ``run_sandbox`` are the session's
    spawners (None where a capability is not offered, e.g. in a subagent);
    ``jail`` is its sandbox policy and the daemon's launcher.
    """

    def __init__(
        self,
        *,
        session_id: str,
        home: Path,
        shell: ShellState,
        todo: TodoList,
        processes: ProcessTable,
        store: SessionSearchStore | None,
        interactive: bool,
        auto_approve: bool,
        hub: EventHub,
        requests: PendingRequests,
        jail: SessionJail,
        start_background: Callable[[BackgroundSpec], Awaitable[ProcessInfo]] | None = None,
        delegate: Callable[[CallContext, dict[str, Any]], Awaitable[ToolResult]] | None = None,
        run_sandbox: Callable[[CallContext, str], Awaitable[ToolResult]] | None = None,
    ) -> None:
        self.session_id = session_id
        self.home = home
        self.shell = shell
        self.todo = todo
        self.processes = processes
        self.store = store
        self.interactive = interactive
        self.auto_approve = auto_approve
        self.hub = hub
        self.requests = requests
        self.jail = jail
        self.start_background = start_background
        self.delegate = delegate
        self.run_sandbox = run_sandbox


class CallContext:
    """A :class:`tools.context.ToolContext` for one tool call.

    Attributes:
        call_id: the model's id of the call.
        spawn: the worker's spawner (a subagent starts under it).
        run_job: the worker's ``run_job`` (the sandbox runs as its job).
        token_meter: the turn's token meter (a subagent's turns count into it).
        worker_path: the tool worker's actor path (a sandbox or subagent spawns under it).
        last_progress: the last progress line, kept as the partial result when
            the call is cancelled (a terminal's output so far, for example).
    """

    def __init__(
        self,
        services: SessionServices,
        call_id: str,
        worker_path: str,
        spawn: Any = None,
        token_meter: Any = None,
        run_job: Any = None,
    ) -> None:
        self._services = services
        self.call_id = call_id
        self.worker_path = worker_path
        self.spawn = spawn
        self.run_job = run_job
        self.token_meter = token_meter
        self.last_progress: str | None = None
        self.progress_count = 0

    # -- the session's state, shared with every call ------------------------------------

    @property
    def session_id(self) -> str:
        return self._services.session_id

    @property
    def home(self) -> Path:
        return self._services.home

    @property
    def shell(self) -> ShellState:
        return self._services.shell

    @property
    def todo(self) -> TodoList:
        return self._services.todo

    @property
    def processes(self) -> ProcessTable:
        return self._services.processes

    @property
    def store(self) -> SessionSearchStore | None:
        return self._services.store

    @property
    def interactive(self) -> bool:
        return self._services.interactive

    @property
    def jail(self) -> SessionJail:
        """The session's sandbox policy and the launcher its processes start through."""
        return self._services.jail

    # -- requests to the session -------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask attached clients; auto-approve or deny at once where nobody is asked."""
        services = self._services
        if services.auto_approve:
            return "once"
        if not services.interactive:
            return "deny"
        answer = await services.requests.ask_approval(request.command, request.description)
        return answer  # type: ignore[return-value]

    async def clarify(self, question: str, choices: list[str], allow_freetext: bool) -> str:
        """Ask attached clients a question.

        Raises:
            ClarifyUnavailable: non-interactive session, or nobody answered in time.
        """
        if not self._services.interactive:
            raise ClarifyUnavailable("no user can answer in this context")
        answer = await self._services.requests.ask_clarify(question, choices, allow_freetext)
        if answer == NO_ANSWER:
            raise ClarifyUnavailable("nobody answered in time")
        return answer

    def relay(self, event: Any) -> None:
        """Show a sub-session's event (a subagent's) to this session's subscribers."""
        self._services.hub.relay(event)

    def emit(self, progress: str) -> None:
        """Publish a progress line for this call (never blocks)."""
        self.last_progress = progress
        self.progress_count += 1
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
    """The redacted end of a progress text, for subscribers (``last_progress`` is redacted as a result).

    Tools hand over the newest part of their output, cut anywhere: a first line
    may be the end of a secret whose name was cut off (``…Basic <value>``), so
    whole lines only are shown.  Redacting a window wider than what is shown
    keeps this module's own cut away from the part shown, too.
    """
    window = progress[-_PROGRESS_WINDOW:]
    _, newline, rest = window.partition("\n")
    text = redact_secrets(rest if newline and rest.strip() else window)
    return text[-_PROGRESS_SHOWN:]
