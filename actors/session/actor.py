"""The session actor: one conversation, its turns and its background work.

Messages it takes (``messages.session``): UserMessage, Interrupt, Steer,
BackgroundNotification, AnswerRequest, Compress, ResetTools, Subscribe,
Hibernate, Shutdown. It publishes ``messages.events`` through its hub.

At most one ``turn`` job runs at a time, in a helper task of the session. A
user message arriving while a turn runs follows ``display.busy_input_mode``:
``interrupt`` (interrupt the turn, then run the message), ``queue`` (FIFO, at
most :data:`MAX_QUEUED`) or ``steer`` (a steer while a tool runs, queued
otherwise). The turn returns its outcome; a bug in it ends that turn with an
error, never the session.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import trio

from actors import Actor, ActorBase, ActorFailed, Envelope, MailboxClosed, MailboxFull, Rejected, SpawnFailed
from actors.sandbox import SpareInterpreters
from actors.session.browser import BrowserActor
from actors.session.checkpointing import SessionCheckpoints
from actors.session.compaction import SessionCompaction
from actors.session.context import SessionServices
from actors.session.event_hooks import turn_ended
from conversation.errors import EmptySteerError
from actors.session.errors import NoTurnRunning, SessionBusy
from conversation.guardrails import ToolCallGuardrailController
from conversation.history import close_interrupted_turn
from actors.session.hub import EventHub
from conversation.images import image_content, sees_images
from actors.session.model import SessionModel
from actors.session.options import ParentSession, SessionSpec
from actors.session.processes import ProcessActor
from actors.session.requests import PendingRequests, clarify_deadline
from actors.session.review import ReviewJob, plan_review
from actors.session.sandboxing import sandbox_runner
from actors.session.state import (
    SessionState, ensure_recorded, flush_history, freeze_tools, open_state, record_ended, save_state, save_turn_state,
)
from conversation.review import NudgeCounters, ReviewFocus, turn_messages
from conversation.steer import SteerBuffer
from actors.session.turn import TurnJob
from actors.session.turn_parts import TokenMeter, TurnConfig, TurnCounters, TurnOutcome
from actors.session.workers import ToolExecutor
from messages.chat import ChatMessage, Content, HumanMessage, messages_to_dicts
from messages.events import StatusUpdate, TurnFinished, TurnStarted
from messages.session import (
    AnswerRequest,
    BackgroundNotification,
    CheckFiles,
    Compress,
    Interrupt,
    ResetTools,
    SessionMessage,
    SetYolo,
    Hibernate,
    Shutdown,
    Steer,
    Subscribe,
    UserMessage,
)
from messages.supervision import ActorSnapshot, ActorState
from store.errors import StoreError
from store.scoped import RealmScopedReader
from tools.background import BackgroundSpec, ProcessInfo, ProcessNotification, ProcessTable
from tools.browser import INSTALL_HINT, Browser, BrowserError, BrowserUnavailable, find_browser
from tools.files.ledger import FileReadLedger
from tools.jail.attachments import check_files
from tools.jail.policy import SandboxLimits, SandboxMode, resolve_limits
from tools.jail.runtime import SessionRuntime, unjailed_runtime
from tools.approval_policy import RATING_INSTRUCTIONS, ApprovalPolicy, rating_request
from tools.redact import redact_secrets

__all__ = ["MAX_QUEUED", "SessionActor"]

log = logging.getLogger("hermes_actors.session")

#: Messages that may wait for a running turn in ``queue`` mode.
MAX_QUEUED = 32

_READ_ONLY_TOOLS = frozenset({"read_file", "search_files", "web_search", "web_extract", "session_search"})


def _nothing() -> None:
    pass


def _ignore(_: bool) -> None:
    pass


class SessionActor(Actor[SessionMessage]):
    """One conversation: history, turns, subscribers, background processes.

    Built from a :class:`SessionSpec`; its durable state (``durable``: ``state`` is the
    actor's lifecycle state), model and services exist once it has started
    (``on_start`` loads the state, then builds the rest from it).
    """

    kind = "session"
    mailbox_capacity = 64
    shutdown_timeout = 15.0

    # Built once by on_start; the mailbox is read only after it succeeded.
    hub: EventHub
    requests: PendingRequests
    durable: SessionState
    model: SessionModel
    compaction: SessionCompaction
    file_reads: FileReadLedger
    checkpoints: SessionCheckpoints
    search_store: RealmScopedReader

    def __init__(self, spec: SessionSpec) -> None:
        super().__init__()
        self.spec = spec
        self.session_id = spec.session_id
        config = spec.deps.config
        self.processes = ProcessTable(config.terminal.background)
        self.executor = ToolExecutor(spec.deps.registry, self._guardrails("cli"), spec.deps.hooks)
        self.steer = SteerBuffer()
        self.queue: deque[UserMessage] = deque()
        self.turn: TurnJob | None = None
        # True while a turn is being started or put away (its awaits: the history flushed, the state
        # saved, the next queued message begun): no turn runs, yet none may start beside that work.
        self._turn_changing = False
        # Set whenever _turn_changing is False: what a request waits for while a finished turn is put away.
        self._turn_settled = trio.Event()
        self._turn_settled.set()
        self.last_active = 0.0
        # Turns finished since this actor started (a woken session starts again from 0).
        self.turns_finished = 0
        self._notes: list[str] = []
        self._closing = False
        # Why it stops, as an ephemeral session's record says (a Shutdown gives the reason).
        self._end_reason = "session stopped"
        self._turn_done = trio.Event()
        # The learning loop: counts toward the next background review, and the one running (at most one).
        self.nudges = NudgeCounters()
        self._reviewing = False
        # Invariant: True once on_start has built everything the class body declares.
        self._ready = False
        self._owns_runtime = False
        # Its jail and directories, and what its tool calls are offered: opened as it starts, or for an
        # ephemeral session when its first tool call comes (most completions call none).
        self.runtime: SessionRuntime | None = None
        self._services: SessionServices | None = None
        #: Called when the session may have become quiet (it started, a turn or a message ended, a
        #: subscriber left); its supervisor sets it to look at once whether it may hibernate.
        self.on_quiet: Callable[[], None] = _nothing
        #: Called with True as a turn starts and False once it is put away; its supervisor sets it to count
        #: the running turns without looking at every session.
        self.on_turn: Callable[[bool], None] = _ignore
        # Its browser, started by the first browser tool call (one at a time starts it).
        self._browser: BrowserActor | None = None
        self._browser_lock = trio.Lock()

    def _guardrails(self, source: str) -> ToolCallGuardrailController:
        return ToolCallGuardrailController(
            self.spec.deps.config.tool_loop_guardrails, lambda name: name in _READ_ONLY_TOOLS, source=source
        )

    # -- life ----------------------------------------------------------------------------------------

    async def on_start(self) -> None:
        # Starting is activity: the hibernation sweep must not take a session still loading for idle.
        self.last_active = trio.current_time()
        spec = self.spec
        deps = spec.deps
        self.hub = hub = EventHub(
            self.session_id, self.path, replay_size=spec.replay_size, subscriber_capacity=spec.subscriber_capacity,
            on_leave=self._maybe_quiet,
        )
        if not spec.ephemeral:
            # Owned before anything is read: no other host may run this session while this one does.
            # (An ephemeral session is in no store another host reads until it is done.)
            await deps.store.leases.acquire(self.session_id)
        self.durable = state = await open_state(spec)
        self.requests = PendingRequests(hub, deps.config.approvals.timeout, clarify_deadline(deps.config, state.options.source))
        # Known only now: an unattended (cron) session stops tool loops by default.
        self.executor.guardrails = self._guardrails(state.options.source)
        hub.resume_from(state.event_seq)
        self.nudges.resume(state.history, deps.config.memory.nudge_interval)
        self.model = model = SessionModel(deps, state.options)
        self.file_reads = FileReadLedger()
        self.checkpoints = SessionCheckpoints(deps.checkpoints, deps.config.checkpoints, state.options.cwd, self.session_id)
        self.compaction = SessionCompaction(deps, self.session_id, model, state, hub, self.file_reads)
        #: The spare interpreter of its execute_code runs (None until its tools are set up, or when turned off).
        self.spares: SpareInterpreters | None = None
        approvals = deps.config.approvals
        self.approval_policy = ApprovalPolicy(
            mode=str(approvals.mode), cron_mode=state.options.cron_approvals or approvals.cron_mode, source=state.options.source,
            interactive=state.options.interactive, auto_approve=state.options.auto_approve, rate=self._rate_command,
        )
        # session_search sees only its realm: API sessions and CLI sessions never see each other.
        self.search_store = await RealmScopedReader.for_session(
            deps.store, self.session_id, state.options.source if spec.options is not None else None
        )
        if not spec.ephemeral:
            await self._tool_services()
        self._notes.extend(state.lost_process_notes())
        self._ready = True
        self.last_active = trio.current_time()
        self._maybe_quiet()

    @property
    def services(self) -> SessionServices:
        """What its tool calls are offered, as built when it started (an ephemeral session's at its first tool call).

        Raises:
            RuntimeError: an ephemeral session that has called no tool yet.
        """
        if self._services is None:
            raise RuntimeError(f"session {self.session_id} has opened no tool services yet")
        return self._services

    async def _tool_services(self) -> SessionServices:
        """What the session offers its tool calls; its jail and directories are opened the first time."""
        if self._services is not None:
            return self._services
        spec = self.spec
        deps = spec.deps
        state = self.durable
        self.runtime = runtime = await self._open_runtime()
        delegate = spec.delegate
        self._services = services = SessionServices(
            session_id=self.session_id,
            home=deps.home,
            shell=state.shell,
            todo=state.todo,
            file_reads=self.file_reads,
            processes=self.processes,
            store=self.search_store,
            interactive=state.options.interactive,
            approval_policy=self.approval_policy,
            hub=self.hub,
            requests=self.requests,
            jail=runtime.jail,
            start_background=self._start_background,
            browser=self._open_browser,
            sees_images=lambda: sees_images(str(deps.config.model.vision), self.model.chain.current.label),
            delegate=delegate(ParentSession(deps, self.session_id, state, self.model, runtime)) if delegate else None,
            hooks=deps.hooks,
            run_sandbox=sandbox_runner(
                self.executor,
                session_id=self.session_id,
                tool_names=state.tools.names,
                config=deps.config.code_execution,
                env_passthrough=deps.config.terminal.env_passthrough,
                store=deps.store,
                max_parallel_tools=deps.config.tools.max_parallel_tools,
                sandbox_dir=runtime.sandbox_dir,
                spares=self._spares(),
            ),
            checkpoints=self.checkpoints,
        )
        return services

    def _spares(self) -> SpareInterpreters | None:
        """Its execute_code runs' spare interpreter, kept in its own nursery: it dies with the session."""
        config = self.spec.deps.config.code_execution
        if not config.spare_interpreter:
            return None
        self.spares = SpareInterpreters(self.start_soon, idle_seconds=config.spare_idle_seconds)
        return self.spares

    async def _open_runtime(self) -> SessionRuntime:
        """The session's jail and directories: its parent's (a subagent), its own from the daemon, or
        full access where the session runs without a daemon."""
        spec = self.spec
        if spec.runtime is not None:
            return spec.runtime
        deps = spec.deps
        options = self.durable.options
        if deps.jails is None:
            return unjailed_runtime(deps.config.sandbox, deps.home, options.cwd)
        runtime = await deps.jails.open_session(
            self.session_id, SandboxMode(options.sandbox), options.cwd, options.limits
        )
        self._owns_runtime = True
        return runtime

    async def on_stop(self) -> None:
        self.hub.close_all(f"session {self.session_id} stopped")
        self.processes.kill_all()
        deps = self.spec.deps
        try:
            if self._ready and self.spec.ephemeral:
                await record_ended(deps, self.session_id, self.durable, event_seq=self.hub.seq,
                                   processes=self.processes.records(), reason=self._end_reason)
            elif self._ready:
                await self._save_state()
        finally:
            # Its processes are gone: nothing can be using its temp directory any more.
            if self._owns_runtime and deps.jails is not None and self.runtime is not None:
                await deps.jails.close_session(self.runtime)
        if deps.approvals is not None:
            # Saved above; kept in memory only while the session runs.
            deps.approvals.forget(self.session_id)
        # Last: everything it wrote is committed; another host may run it now.
        await deps.store.leases.release(self.session_id)

    def snapshot_details(self) -> dict[str, Any]:
        details: dict[str, Any] = {"session_id": self.session_id, "queued": len(self.queue)}
        if not self._ready:
            return details
        usage = self.durable.usage
        details.update({
            "model": self.model.chain.current.label,
            "sandbox": self.durable.options.sandbox,
            "limits": attrs.asdict(self._limits()),  # not enforced in full-access
            "turns": self.durable.turns,
            "subscribers": self.hub.subscriber_count,
            "tokens": usage.prompt_tokens + usage.completion_tokens,
            # Split out so the HTTP API can report one turn's usage as a difference.
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        })
        if len(self.requests):
            details["pending_requests"] = len(self.requests)
        return details

    def statistics(self) -> ActorSnapshot:
        """The session's snapshot: busy, and saying what its turn does, while a turn runs (its
        mailbox loop alone would read idle between messages)."""
        snapshot = super().statistics()
        turn = self.turn
        if turn is None or snapshot.state not in (ActorState.IDLE, ActorState.BUSY):
            return snapshot
        doing = f"turn {turn.turn_id}: {turn.activity}" if turn.activity else f"turn {turn.turn_id}"
        return attrs.evolve(snapshot, state=ActorState.BUSY, activity=doing)

    @property
    def hibernatable(self) -> bool:
        """Idle, nobody watching, nothing pending: its state can live in the store alone."""
        # A message being handled (a Subscribe, a UserMessage) is activity too.
        return self.state is ActorState.IDLE and self._quiet()

    def _quiet(self) -> bool:
        """Nothing running, queued, watched or pending (the message being handled aside)."""
        mailbox = self.mailbox
        return (
            self._ready
            and self._no_turn()
            and (mailbox is None or mailbox.used == 0)
            and not self.queue
            and self.hub.watcher_count == 0
            and len(self.requests) == 0
            and not any(not record.status.finished for record in self.processes.records())
        )

    def _maybe_quiet(self) -> None:
        if self._quiet():
            self.on_quiet()

    async def serve_item(self, item: SessionMessage | Envelope[SessionMessage]) -> None:
        await super().serve_item(item)
        self._maybe_quiet()

    @property
    def done_with(self) -> bool:
        """A one-shot session whose turn is over and that nobody watches: it hibernates now.

        Only after a turn finished in this life: a session just woken by an attach or a message has not
        been given its subscriber or its turn yet."""
        return self.turns_finished > 0 and self.durable.options.one_shot and self.hibernatable

    # -- the mailbox ----------------------------------------------------------------------------------

    async def handle(self, message: SessionMessage) -> Any:
        self.last_active = trio.current_time()
        if isinstance(message, UserMessage):
            return await self._on_user_message(message)
        if isinstance(message, Interrupt):
            if not self._interrupt(message.requested_by, message.text):
                raise Rejected(NoTurnRunning(f"nothing to interrupt: session {self.session_id} has no turn running"))
            return f"interrupting turn {self.durable.turns}"
        if isinstance(message, Steer):
            return await self._on_steer(message.text)
        if isinstance(message, BackgroundNotification):
            return await self._on_user_message(UserMessage(message.text, source="background"))
        if isinstance(message, AnswerRequest):
            return self.requests.answer(message.request_id, message.answer, message.answered_by)
        if isinstance(message, Compress):
            return await self._on_compress(message.topic)
        if isinstance(message, ResetTools):
            if not await self._settled():
                raise Rejected(SessionBusy("a turn is running; reset the tools when it has finished"))
            self.durable.tools = freeze_tools(self.spec.deps, self.durable.options)
            await self._save_state()
            return sorted(self.durable.tools.names)
        if isinstance(message, SetYolo):
            return self._set_yolo(message.enabled)
        if isinstance(message, Subscribe):
            return self.hub.subscribe(message.label, message.since, also=self.requests.events(), passive=message.passive,
                                      running_turn=message.running_turn)
        if isinstance(message, Hibernate):
            # The supervisor saw it idle; whatever came in since was handled first and may keep it. A turn
            # whose TurnFinished is out may still be put away: that ends on its own, so it is waited for.
            if not await self._settled() or not self._quiet():
                return False
            assert self.mailbox is not None
            self.mailbox.close()
            return True
        if isinstance(message, Shutdown):
            await self._shutdown(message.reason)
            return True
        if isinstance(message, CheckFiles):
            return await trio.to_thread.run_sync(check_files, (await self._tool_services()).jail.policy, message.paths)
        raise Rejected(TypeError(f"a session does not take {type(message).__name__}"))

    def _no_turn(self) -> bool:
        """No turn runs, and none is being started or put away: a message may start one now."""
        return self.turn is None and not self._turn_changing

    async def _on_user_message(self, message: UserMessage) -> str:
        if self._closing:
            raise Rejected(SessionBusy(f"session {self.session_id} is shutting down"))
        if self._no_turn():
            await self._start_turn(message)
            return "started"
        turn = self.turn  # None while one is put away: the message then waits behind those queued
        mode = message.busy_mode or self.spec.deps.config.display.busy_input_mode
        if turn is not None and mode == "steer" and turn.running_tools():
            return await self._on_steer(message.text)
        if turn is not None and mode == "interrupt" and not self._interrupt_demoted():
            self.queue.appendleft(message)
            self._interrupt("user (new message)", None)
            return "interrupting"
        if len(self.queue) >= MAX_QUEUED:
            raise Rejected(SessionBusy(f"{MAX_QUEUED} messages are already queued for session {self.session_id}; wait for the turn to finish"))
        self.queue.append(message)
        return "queued"

    async def _on_steer(self, text: str) -> str:
        try:
            self.steer.add(text)
        except EmptySteerError as exc:
            raise Rejected(exc) from exc
        if self.turn is None:
            # A steer only reaches a running turn; kept as a message it would start one nobody asked for.
            self.steer.take()
            raise Rejected(NoTurnRunning(f"no turn to steer: session {self.session_id} is idle; send it as a message"))
        return "steered"

    def _interrupt(self, requested_by: str, text: str | None) -> bool:
        """Stop the running turn (``text`` then comes next); False when there is none (nothing done)."""
        if self.turn is None:
            return False
        if text:
            self.queue.appendleft(UserMessage(text))
        self.turn.request_stop("interrupted", requested_by=requested_by)
        return True

    def _interrupt_demoted(self) -> bool:
        if not self.spec.deps.config.display.interrupt_demoted_while_busy or self.turn is None:
            return False
        return "delegate_task" in self.turn.running_tools()

    # -- turns -------------------------------------------------------------------------------------------

    async def _start_turn(self, message: UserMessage) -> None:
        """Start a turn for ``message``; it is in the tree when this returns."""
        with self._changing_turn():
            await self._begin_turn(message)

    @contextmanager
    def _changing_turn(self) -> Iterator[None]:
        """A turn is being started or put away while the block runs (see ``_turn_changing``)."""
        self._turn_changing = True
        self._turn_settled = trio.Event()
        try:
            yield
        finally:
            self._turn_changing = False
            self._turn_settled.set()

    async def _settled(self) -> bool:
        """Wait while a finished turn is put away (its TurnFinished is out: a client may ask at once); True
        when no turn runs then, nor is being started."""
        while self.turn is None and self._turn_changing:
            await self._turn_settled.wait()
        return self._no_turn()

    async def _begin_turn(self, message: UserMessage) -> None:
        state = self.durable
        state.turns += 1
        text = message.text
        if self._notes:
            text = "\n\n".join([*self._notes, text])
            self._notes.clear()
        self.executor.guardrails.reset()
        self.nudges.start_turn(self.spec.deps.config.memory.nudge_interval, has_memory=self._has_memory())
        self.checkpoints.turn = state.turns
        budget = state.options.token_budget(self.spec.deps.config.agent.turn_token_budget)
        counters = TurnCounters(TokenMeter(budget, self.spec.parent_meter), started_at=trio.current_time())
        started = trio.Event()
        content: Content = text
        if message.images and sees_images(str(self.spec.deps.config.model.vision), self.model.chain.current.label):
            content = await trio.to_thread.run_sync(image_content, text, message.images)
        turn = TurnJob(
            self._turn_config(message.system), counters, list(state.history), HumanMessage(content), self.steer, state.turns, started
        )
        self.turn = turn
        self.on_turn(True)
        self._turn_done = trio.Event()
        self.hub.publish(TurnStarted, turn_id=state.turns, text=message.text)
        self.start_soon(self._run_turn, turn, state.turns, counters)
        await started.wait()

    def _turn_config(self, system: str | None) -> TurnConfig:
        """The turn's settings; ``system`` (the message's own system-prompt addition) follows the session's."""
        state = self.durable
        layers = [layer for layer in (self.spec.ephemeral_system, system) if layer]
        return TurnConfig(
            deps=self.spec.deps,
            options=state.options,
            hub=self.hub,
            executor=self.executor,
            model=self.model,
            tools=state.tools,
            usage_before=state.usage,
            cost_before=state.cost_usd,
            api_calls_before=state.api_calls,
            persist=self._commit,
            tool_services=self._before_tools,
            ephemeral_system="\n\n".join(layers) or None,
            compress=self.compaction.preflight(),
            history_size=self.compaction.history_size,
        )

    async def _run_turn(self, turn: TurnJob, turn_id: int, counters: TurnCounters) -> None:
        """Run one turn in the session's scope; a bug in it ends that turn with an error, never the session."""
        try:
            outcome = await self.run_job(turn, "turn")
        except Exception as exc:
            log.error("session %s: turn %d failed: %s", self.session_id, turn_id, exc)
            error = str(exc)
            # What the turn committed is in the history; close it so it stays valid.
            outcome = TurnOutcome(close_interrupted_turn(self.durable.history), f"Error: {error}", "error", error)
        try:
            await turn_ended(
                self.spec.deps.hooks, self.session_id, self.durable.options, self.model.chain.current.label, turn_id,
                turn.user_message.content, outcome.reason, outcome.final_text,
            )
        finally:
            # A session stopping while its hooks run still finishes (and saves) the turn.
            with trio.CancelScope(shield=True):
                await self._finish_turn(turn_id, outcome, counters)

    async def _finish_turn(self, turn_id: int, outcome: TurnOutcome, counters: TurnCounters) -> None:
        with self._changing_turn():
            await self._put_away(turn_id, outcome, counters)
        self._maybe_quiet()

    async def _put_away(self, turn_id: int, outcome: TurnOutcome, counters: TurnCounters) -> None:
        """Record the finished turn, then begin the next queued message's."""
        state = self.durable
        state.history = outcome.messages
        counters.add_to(state)
        leftover = self.steer.take()
        if leftover and outcome.reason == "interrupted":
            # As Hermes Agent: the steer was for this turn's next step, which the user has just called
            # off; kept, it would start a turn of its own right after the one they stopped.
            log.info("session %s: turn %d interrupted with a steer pending; the steer is dropped", self.session_id, turn_id)
        elif leftover:
            self.queue.appendleft(UserMessage(leftover, source="steer"))
        failed_save = await self._save_finished_turn(counters) if state.unrecorded is None else None
        self.hub.publish(TurnFinished, turn_id=turn_id, final_text=outcome.final_text, reason=outcome.reason,
                         error=outcome.error, **counters.figures(trio.current_time()))
        self.turn = None
        self.on_turn(False)
        self.turns_finished += 1
        self.last_active = trio.current_time()
        self._turn_done.set()
        self._maybe_review(outcome)
        if failed_save is not None:
            raise failed_save
        if self.queue and not self._closing:
            await self._begin_turn(self.queue.popleft())

    async def _save_finished_turn(self, counters: TurnCounters) -> StoreError | None:
        """Save a finished turn before it is said finished, so whoever reads the store on TurnFinished (a
        client listing sessions, a restarted daemon) sees its history, state and tokens. A store that
        refuses the writes (its lease taken by another host) is returned: the turn is still said finished
        to the clients waiting for it, then the session fails on it."""
        state = self.durable
        try:
            with trio.move_on_after(self.shutdown_timeout):
                await flush_history(self.spec.deps, self.session_id, state)
            with trio.move_on_after(self.shutdown_timeout):
                # This turn's tokens only; the store counts tool calls itself as messages arrive. The event
                # number saved is the one TurnFinished takes next (an event published in between is saved
                # with the next save, as any later one is).
                await save_turn_state(
                    self.spec.deps, self.session_id, state, event_seq=self.hub.seq + 1,
                    processes=self.processes.records(), usage=counters.usage, cost=counters.cost_usd or 0.0,
                )
        except StoreError as exc:
            return exc
        return None

    # -- the learning loop -------------------------------------------------------------------------------

    def _has_memory(self) -> bool:
        """The session's model can write memory (the tool is offered and a store is on), and its turns may
        be reviewed for memory: as in Hermes, a scheduled job's are not (its prompts are not the user's words)."""
        memory = self.spec.deps.config.memory
        options = self.durable.options
        return (
            "memory" in self.durable.tools.names and options.use_memory and options.source != "cron"
            and (memory.memory_enabled or memory.user_profile_enabled)
        )

    def _maybe_review(self, outcome: TurnOutcome) -> None:
        """Start a background review of the turn that just ended, when one is due (never waited for)."""
        config = self.spec.deps.config
        focus = self.nudges.finish_turn(
            turn_messages(outcome.messages), config.skills.creation_nudge_interval,
            # As Hermes: a turn that ended with an answer, a budget's forced one too, not an interrupted one.
            completed=outcome.reason in ("completed", "budget") and bool(outcome.final_text),
            has_skills="skill_manage" in self.durable.tools.names,
        )
        # A subagent's turns are its parent's work; an ephemeral session is one request, gone when answered.
        if not focus or not config.auxiliary.background_review.enabled or self.spec.runtime is not None:
            return
        services = self._services
        if services is None or self.spec.ephemeral or self._closing:
            return
        if self._reviewing:
            log.info("session %s: a background review is still running; this turn is not reviewed", self.session_id)
            return
        self._reviewing = True
        self.start_soon(self._run_review, focus, list(self.durable.history), services)

    async def _run_review(self, focus: ReviewFocus, history: list[ChatMessage], services: SessionServices) -> None:
        """Run one review as the session's ``review`` job; whatever goes wrong in it is logged, never raised."""
        try:
            plan = await plan_review(self.spec.deps.config, history, focus, self.durable.tools, services)
            changes = await self.run_job(ReviewJob(plan, self.model, self.spec.deps.registry, services), "review")
            log.info("session %s: the background review made %d change(s)", self.session_id, len(changes))
        except Exception as exc:  # the review is best-effort: the conversation goes on without it
            log.warning("session %s: the background review failed: %s", self.session_id, exc)
        finally:
            self._reviewing = False

    async def _commit(self, messages: list[ChatMessage]) -> None:
        """The turn's new messages: into the store (an ephemeral session's once it is stored), and
        into the history as committed."""
        state = self.durable
        if state.unrecorded is not None:
            state.history.extend(messages)
            return
        await self.spec.deps.store.append(self.session_id, messages_to_dicts(messages))
        state.history.extend(messages)
        state.persisted = len(state.history)

    async def _before_tools(self) -> SessionServices:
        """What a batch of tool calls is offered; a tool may need the session's row (a transcript, a
        subagent under it), so an ephemeral session is stored first."""
        await ensure_recorded(self.spec.deps, self.session_id, self.durable, event_seq=self.hub.seq,
                              processes=self.processes.records())
        return await self._tool_services()

    def _limits(self) -> SandboxLimits:
        """What its processes may use (its jail's, or what it will be when it is opened)."""
        if self.runtime is not None:
            return self.runtime.jail.policy.limits
        return resolve_limits(self.durable.options.limits, self.spec.deps.config.sandbox)

    async def _save_state(self) -> None:
        await save_state(self.spec.deps, self.session_id, self.durable, event_seq=self.hub.seq, processes=self.processes.records())

    # -- other work -----------------------------------------------------------------------------------

    def _set_yolo(self, enabled: bool) -> bool:
        if self.approval_policy.yolo != enabled:
            self.approval_policy.yolo = enabled
            log.info("session %s: yolo %s", self.session_id, "on" if enabled else "off")
        # Every client is told (a second attached one shows the marker too), even when nothing changed.
        text = (
            "YOLO on: dangerous commands run without asking (the hardline blocklist is still refused)"
            if enabled else "YOLO off: dangerous commands ask again"
        )
        self.hub.publish(StatusUpdate, kind="yolo", text=text)
        return enabled

    async def _rate_command(self, command: str) -> str:
        """The auxiliary model's rating of a command, for the ``smart`` approval policy."""
        return await self.model.summarize([HumanMessage(rating_request(command))], RATING_INSTRUCTIONS)

    async def _on_compress(self, topic: str | None) -> str:
        if not await self._settled():
            raise Rejected(SessionBusy("a turn is running; compress when it has finished"))
        self.state = ActorState.BUSY
        self.activity = "compressing"
        try:
            return await self.compaction.compress_now(topic)
        finally:
            self.state = ActorState.IDLE
            self.activity = ""

    async def _start_background(self, spec: BackgroundSpec) -> ProcessInfo:
        record = self.processes.create(spec)
        actor = ProcessActor(spec, record, self._notify_background)
        await self.spawn(actor, f"process:{spec.process_id}")
        return record.info()

    async def _open_browser(self) -> Browser:
        """The session's browser: the running one, or a new ``browser`` actor under the session.

        Raises:
            BrowserUnavailable: no browser is installed, or it could not start.
        """
        async with self._browser_lock:
            actor = self._browser
            if actor is not None and not actor.stopped and not actor.browser.stopped:
                return actor.browser
            config = self.spec.deps.config.browser
            executable = await trio.to_thread.run_sync(find_browser, config)
            if executable is None:
                raise BrowserUnavailable(f"No browser is installed here. {INSTALL_HINT}")
            assert self.runtime is not None
            actor = BrowserActor(Browser(config, self.runtime.jail, executable))
            try:
                await self.spawn(actor, "browser", on_failure=self._browser_failed)
            except SpawnFailed as exc:
                cause = exc.__cause__
                raise cause if isinstance(cause, BrowserError) else BrowserUnavailable(str(exc)) from None
            self._browser = actor
            return actor.browser

    def _browser_failed(self, child: ActorBase, failure: ActorFailed) -> None:
        # The browser died (it crashed, or ran out of the session's memory): the next call starts another.
        log.warning("session %s: its browser stopped: %s", self.session_id, failure)

    def _notify_background(self, notification: ProcessNotification) -> None:
        try:
            self.ref.tell_nowait(BackgroundNotification(notification.process_id, redact_secrets(notification.to_text())))
        except (MailboxFull, MailboxClosed) as exc:
            log.warning("session %s: background notification for %s dropped: %s", self.session_id, notification.process_id, exc)
            self.hub.publish(StatusUpdate, kind="warning", text=f"notification from {notification.process_id} was dropped: {exc}")

    async def _shutdown(self, reason: str) -> None:
        self._closing = True
        self._end_reason = reason
        self.queue.clear()
        turn = self.turn
        if turn is not None:
            turn.request_stop(reason, requested_by="session")
            with trio.move_on_after(self.shutdown_timeout):
                await self._turn_done.wait()
        self.mailbox.close()
