"""The narrow interface through which tool handlers reach their session.

Handlers know nothing of actors: everything a handler may ask of the session it
runs in (approval, clarification, progress, background processes, delegation,
sandboxed code) goes through a ``ToolContext``.  The session actor implements
it; ``tools.testing.LocalToolContext`` is a small real implementation for
standalone use and tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs

from store.protocol import SessionSearchReader

if TYPE_CHECKING:
    from tools.background import BackgroundSpec, ProcessInfo, ProcessTable
    from tools.browser import Browser
    from tools.files.ledger import FileReadLedger
    from tools.jail import SessionJail
    from tools.results import ToolResult
    from tools.todo import TodoList

__all__ = [
    "ApprovalAnswer",
    "ApprovalDecision",
    "ApprovalRequest",
    "SessionSearchStore",
    "ShellState",
    "ToolContext",
]

ApprovalDecision = Literal["once", "session", "always", "deny"]
"""Answer to an approval request: run this once, allow the pattern for the session, allow it for
good (saved in ``config.yaml``), or refuse."""


@attrs.frozen
class ApprovalAnswer:
    """An approval decision and who or what made it, in words for the model and the user.

    Attributes:
        decision: the answer.
        decided_by: ``the user``, ``approvals.mode: off``, ``--yolo`` ... (never an internal name).
    """

    decision: ApprovalDecision
    decided_by: str


@attrs.define
class ShellState:
    """Working directory and exported environment of one session's shell.

    Mutable on purpose: the terminal tool updates it after every command so
    that ``cd`` and ``export`` persist across calls of the same session.
    """

    cwd: str
    env: dict[str, str] = attrs.field(factory=dict)
    # Variables let into this session's processes even though they look secret: those required by
    # the skills it loaded (added to ``terminal.env_passthrough``'s for this session only).
    passthrough: set[str] = attrs.field(factory=set)


@attrs.frozen
class ApprovalRequest:
    """A dangerous action waiting for the user's consent.

    Attributes:
        command: the exact command (or action) that would run.
        description: the name of the dangerous pattern that matched.
        tool: the tool asking (``terminal``, ...).
    """

    command: str
    description: str
    tool: str


SessionSearchStore = SessionSearchReader
"""What ``ctx.store`` offers the ``session_search`` tool: the store's read-only search protocol."""


class ToolContext(Protocol):
    """What a tool handler may use of the session that runs it.

    Cancellation is never signalled through the context: a handler is
    cancelled by its caller's cancel scope like any Trio code.
    """

    session_id: str
    home: Path
    """HERMES_ACTORS_HOME: memories, state and configuration live under it."""
    shell: ShellState
    todo: TodoList
    file_reads: FileReadLedger
    """What the model has read and written of each file (repeat reads, stale writes)."""
    processes: ProcessTable
    store: SessionSearchStore | None
    interactive: bool
    """False for subagents and one-shot API calls: clarify is unavailable and approvals are denied."""
    jail: SessionJail
    """The session's sandbox policy and the launcher every process a tool starts goes through."""
    sees_images: bool
    """Whether the session's model takes images (``model.vision``), so a tool's images reach it."""

    async def approve(self, request: ApprovalRequest) -> ApprovalAnswer:
        """Decide on a dangerous action by the session's policy, asking the user where it says so;
        a request nobody answers in time is denied."""
        ...

    async def clarify(self, question: str, choices: list[str], allow_freetext: bool) -> str:
        """Ask the user a question and return the answer.

        Raises:
            ClarifyUnavailable: nobody can answer in this session.
            ClarifyTimedOut: nobody answered in time.
        """
        ...

    def emit(self, progress: str) -> None:
        """Publish a progress line for the running tool; never blocks."""
        ...

    async def start_background(self, spec: BackgroundSpec) -> ProcessInfo:
        """Start a background process owned by the session (it outlives the turn)."""
        ...

    async def browser(self) -> Browser:
        """The session's browser, started at the first call (it belongs to the session, not the call).

        Raises:
            CapabilityUnavailable: no browser is offered here.
            BrowserUnavailable: the browser could not start.
        """
        ...

    async def delegate(self, args: dict[str, Any]) -> ToolResult:
        """Run ``delegate_task`` (child sessions) and return its result.

        Raises:
            ToolError: the delegation was refused (depth limit, bad tasks) or is not offered here.
        """
        ...

    async def run_sandbox(self, code: str) -> ToolResult:
        """Run ``execute_code`` in the sandbox and return its result.

        Raises:
            ToolError: no script ran (the sandbox could not start) or it is not offered here.
        """
        ...
