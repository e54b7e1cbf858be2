"""The session actor: one conversation, its turns and its background work.

Messages it takes (``messages.session``): UserMessage, Interrupt, Steer,
BackgroundNotification, AnswerRequest, Compress, ResetTools, Subscribe,
Shutdown. It publishes ``messages.events`` through its hub.

At most one ``turn`` child runs at a time. A user message arriving while a
turn runs follows ``display.busy_input_mode``: ``interrupt`` (cancel the turn,
then run the message), ``queue`` (FIFO, at most :data:`MAX_QUEUED`) or
``steer`` (a steer while a tool runs, queued otherwise). The turn runs
unlinked: a bug in it ends that turn with an error, never the session.
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from typing import Any

import trio

from actors.base import Actor
from actors.errors import ActorFailed, MailboxClosed, MailboxFull, Rejected
from actors.session.context import SessionServices
from actors.session.errors import EmptySteerError
from actors.session.history import close_interrupted_turn
from actors.session.hub import EventHub
from actors.session.processes import ProcessActor
from actors.session.requests import PendingRequests
from actors.session.sandboxing import sandbox_runner
from actors.session.setup import SessionSetup
from actors.session.steer import SteerBuffer
from actors.session.turn import TokenMeter, TurnActor, TurnEnv
from actors.session.workers import ToolExecutor
from messages.events import StatusUpdate, TurnFinished, TurnStarted
from messages.session import (
    AnswerRequest,
    BackgroundNotification,
    Compress,
    Interrupt,
    ResetTools,
    SessionMessage,
    Shutdown,
    Steer,
    Subscribe,
    UserMessage,
)
from messages.supervision import ActorState
from providers.types import Usage
from store.scoped import RealmScopedReader
from tools.background import BackgroundSpec, ProcessInfo, ProcessNotification
from tools.redact import redact_secrets

__all__ = ["MAX_QUEUED", "SessionActor", "SessionBusy"]

log = logging.getLogger("hermes_actors.session")

#: Messages that may wait for a running turn in ``queue`` mode.
MAX_QUEUED = 32


class SessionBusy(RuntimeError):
    """The session cannot take this input now (queue full, shutting down)."""


class SessionActor(Actor[SessionMessage]):
    """One conversation: history, turns, subscribers, background processes."""

    kind = "session"
    mailbox_capacity = 64
    shutdown_timeout = 15.0

    def __init__(self, setup: SessionSetup) -> None:
        super().__init__()
        self.setup = setup
        self.session_id = setup.session_id
        self.hub: EventHub | None = None
        self.requests: PendingRequests | None = None
        self.steer = SteerBuffer()
        self.queue: deque[UserMessage] = deque()
        self.turn: TurnActor | None = None
        self.turn_count = 0
        self.usage = Usage()
        self._notes: list[str] = []
        self._closing = False
        self._turn_done = trio.Event()
        self.last_active = 0.0

    # -- life ----------------------------------------------------------------------------------------

    async def on_start(self) -> None:
        # Starting is activity: the hibernation sweep must not take a session still loading for idle.
        self.last_active = trio.current_time()
        setup = self.setup
        daemon = setup.deps.config
        self.hub = EventHub(
            self.session_id, self.path, replay_size=setup.replay_size, subscriber_capacity=setup.subscriber_capacity
        )
        self.requests = PendingRequests(self.hub, daemon.approvals.timeout_seconds)
        await setup.load_or_create()
        runtime = await setup.open_runtime()
        self.hub.resume_from(setup.event_seq)
        self.last_active = trio.current_time()
        self.turn_count = setup.turns
        self.usage = setup.usage
        self._notes.extend(setup.lost_process_notes())
        self.services = SessionServices(
            session_id=self.session_id,
            home=setup.deps.home,
            shell=setup.shell,
            todo=setup.todo,
            processes=setup.processes,
            # session_search sees only its realm: API sessions and CLI sessions never see each other.
            store=await RealmScopedReader.for_session(setup.deps.store, self.session_id),
            interactive=setup.options.interactive,
            auto_approve=setup.options.auto_approve,
            hub=self.hub,
            requests=self.requests,
            start_background=self._start_background,
            delegate=setup.delegate,
            jail=runtime.jail,
        )
        self.executor = ToolExecutor(setup.deps.registry, setup.guardrails())
        self.services.run_sandbox = sandbox_runner(
            self.executor,
            session_id=self.session_id,
            tool_names=setup.tool_names,
            config=daemon.code_execution,
            env_passthrough=daemon.terminal.env_passthrough,
            store=setup.deps.store,
            sandbox_dir=runtime.sandbox_dir,
        )

    async def on_stop(self) -> None:
        if self.hub is not None:
            self.hub.close_all(f"session {self.session_id} stopped")
        self.setup.processes.kill_all()
        try:
            await self._save_state()
        finally:
            # Its processes are gone: nothing can be using its temp directory any more.
            await self.setup.close_runtime()
        if self.setup.deps.approvals is not None:
            # Saved above; kept in memory only while the session runs.
            self.setup.deps.approvals.forget(self.session_id)

    def snapshot_details(self) -> dict[str, Any]:
        details: dict[str, Any] = {
            "session_id": self.session_id,
            "model": self.setup.chain.current.label,
            "sandbox": self.setup.options.sandbox if self.setup.options else None,
            "turns": self.turn_count,
            "queued": len(self.queue),
            "subscribers": self.hub.subscriber_count if self.hub else 0,
            "tokens": self.usage.prompt_tokens + self.usage.completion_tokens,
            # Split out so the HTTP API can report one turn's usage as a difference.
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
        }
        if self.requests is not None and len(self.requests):
            details["pending_requests"] = len(self.requests)
        return details

    @property
    def hibernatable(self) -> bool:
        """Idle, nobody watching, nothing pending: its state can live in the store alone."""
        return (
            self.turn is None
            and not self.queue
            and self.hub is not None
            and self.hub.subscriber_count == 0
            and (self.requests is None or len(self.requests) == 0)
            and not any(not record.status.finished for record in self.setup.processes.records())
        )

    # -- the mailbox ----------------------------------------------------------------------------------

    async def handle(self, message: SessionMessage) -> Any:
        self.last_active = trio.current_time()
        if isinstance(message, UserMessage):
            return await self._on_user_message(message)
        if isinstance(message, Interrupt):
            return self._interrupt(message.requested_by, message.text)
        if isinstance(message, Steer):
            return await self._on_steer(message.text)
        if isinstance(message, BackgroundNotification):
            return await self._on_user_message(UserMessage(message.text, source="background"))
        if isinstance(message, AnswerRequest):
            assert self.requests is not None
            return self.requests.answer(message.request_id, message.answer, message.answered_by)
        if isinstance(message, Compress):
            return await self._on_compress(message.topic)
        if isinstance(message, ResetTools):
            if self.turn is not None:
                raise Rejected(SessionBusy("a turn is running; reset the tools when it has finished"))
            names = self.setup.reset_tools()
            await self._save_state()
            return names
        if isinstance(message, Subscribe):
            assert self.hub is not None and self.requests is not None
            return self.hub.subscribe(message.label, message.since, also=self.requests.events())
        if isinstance(message, Shutdown):
            await self._shutdown(message.reason)
            return True
        raise Rejected(TypeError(f"a session does not take {type(message).__name__}"))

    async def _on_user_message(self, message: UserMessage) -> str:
        if self._closing:
            raise Rejected(SessionBusy(f"session {self.session_id} is shutting down"))
        if self.turn is None:
            await self._start_turn(message)
            return "started"
        mode = message.busy_mode or self.setup.deps.config.display.busy_input_mode
        if mode == "steer" and self._tool_running():
            return await self._on_steer(message.text)
        if mode == "interrupt" and not self._interrupt_demoted():
            self.queue.appendleft(message)
            self._interrupt("user (new message)", None)
            return "interrupting"
        if len(self.queue) >= MAX_QUEUED:
            raise Rejected(SessionBusy(f"{MAX_QUEUED} messages are already queued for session {self.session_id}; wait for the turn to finish"))
        self.queue.append(message)
        return "queued"

    async def _on_steer(self, text: str) -> str:
        try:
            if self.turn is None:
                self.steer.add(text)
                leftover = self.steer.take()
                await self._start_turn(UserMessage(leftover or text, source="steer"))
                return "started"
            self.steer.add(text)
        except EmptySteerError as exc:
            raise Rejected(exc) from exc
        return "steered"

    def _interrupt(self, requested_by: str, text: str | None) -> bool:
        if text:
            self.queue.appendleft(UserMessage(text))
        if self.turn is None:
            return False
        self.turn.request_stop("interrupted", requested_by=requested_by)
        return True

    def _tool_running(self) -> bool:
        return self.turn is not None and any(child.kind == "tool" for child in self.turn.children())

    def _interrupt_demoted(self) -> bool:
        if not self.setup.deps.config.display.interrupt_demoted_while_busy or self.turn is None:
            return False
        return any(getattr(child, "call", None) is not None and child.call.name == "delegate_task" for child in self.turn.children())

    # -- turns -------------------------------------------------------------------------------------------

    async def _start_turn(self, message: UserMessage) -> None:
        assert self.hub is not None and self._nursery is not None
        self.turn_count += 1
        text = message.text
        if self._notes:
            text = "\n\n".join([*self._notes, text])
            self._notes.clear()
        self.executor.guardrails.reset()
        env = self._turn_env()
        turn = TurnActor(env, list(self.setup.history), {"role": "user", "content": text}, self.steer, self.turn_count)
        self.turn = turn
        self._turn_done = trio.Event()
        self.state = ActorState.BUSY
        self.activity = f"turn {self.turn_count}"
        self.hub.publish(TurnStarted, turn_id=self.turn_count, text=message.text)
        await self._start_child(turn, "turn", functools.partial(self._run_turn, env))

    def _turn_env(self) -> TurnEnv:
        setup = self.setup
        config = setup.deps.config
        assert self.hub is not None
        return TurnEnv(
            hub=self.hub,
            services=self.services,
            registry=setup.deps.registry,
            executor=self.executor,
            tools=setup.tools,
            tool_names=setup.tool_names,
            chain=setup.chain,
            connector=setup.deps.connector,
            pools=setup.deps.pools,
            retry=config.retry,
            max_iterations=setup.options.max_iterations or config.agent.max_turns,
            persist=self._persist,
            usage=self.usage,
            emojis=setup.emojis,
            time_budget=config.agent.turn_time_budget_seconds,
            token_meter=TokenMeter(config.agent.turn_token_budget, setup.parent_meter),
            context_length=setup.context_length,
            max_tokens=setup.max_output_tokens,
            cache_ttl=config.prompt_caching.cache_ttl,
            ephemeral_system=setup.ephemeral_system,
            compress=setup.compressor_hook(self.hub),
            learn_overflow=setup.learn_overflow,
        )

    async def _run_turn(self, env: TurnEnv, turn: TurnActor, *, task_status: trio.TaskStatus[Any]) -> None:
        try:
            await turn.run(task_status=task_status)
        except ActorFailed as exc:
            log.error("session %s: turn %d failed: %s", self.session_id, turn.turn_id, exc)
            turn.messages = close_interrupted_turn(turn.messages)
            turn.result.reason, turn.result.error = "error", str(exc.__cause__ or exc)
            turn.result.final_text = f"Error: {turn.result.error}"
        with trio.CancelScope(shield=True):
            await self._finish_turn(env, turn)

    async def _finish_turn(self, env: TurnEnv, turn: TurnActor) -> None:
        assert self.hub is not None
        self.setup.history = turn.messages
        before, self.usage = self.usage, env.usage
        result = turn.result
        leftover = self.steer.take()
        if leftover:
            self.queue.appendleft(UserMessage(leftover, source="steer"))
        with trio.move_on_after(self.shutdown_timeout):
            await self.setup.flush_history()
        self.hub.publish(
            TurnFinished, turn_id=turn.turn_id, final_text=result.final_text, reason=result.reason, error=result.error
        )
        self.turn = None
        self.last_active = trio.current_time()
        self._turn_done.set()
        self.state = ActorState.IDLE
        self.activity = ""
        with trio.move_on_after(self.shutdown_timeout):
            await self._save_state()
            # This turn's tokens only; the store counts tool calls itself as messages arrive.
            await self.setup.deps.store.update_counters(
                self.session_id,
                tokens_in=env.usage.prompt_tokens - before.prompt_tokens,
                tokens_out=env.usage.completion_tokens - before.completion_tokens,
            )
        if self.queue and not self._closing:
            await self._start_turn(self.queue.popleft())

    async def _persist(self, messages: list[dict[str, Any]]) -> None:
        await self.setup.deps.store.append(self.session_id, messages)
        self.setup.note_persisted(len(messages))

    async def _save_state(self) -> None:
        assert self.hub is not None
        await self.setup.save_state(event_seq=self.hub.seq, turns=self.turn_count, usage=self.usage)

    # -- other work -----------------------------------------------------------------------------------

    async def _on_compress(self, topic: str | None) -> str:
        if self.turn is not None:
            raise Rejected(SessionBusy("a turn is running; compress when it has finished"))
        assert self.hub is not None
        self.state = ActorState.BUSY
        self.activity = "compressing"
        try:
            return await self.setup.compress_now(self.hub, topic)
        finally:
            self.state = ActorState.IDLE
            self.activity = ""

    async def _start_background(self, spec: BackgroundSpec) -> ProcessInfo:
        table = self.setup.processes
        record = table.create(spec)
        actor = ProcessActor(spec, record, self._notify_background)
        await self.spawn(actor, f"process:{spec.process_id}")
        return record.info()

    def _notify_background(self, notification: ProcessNotification) -> None:
        try:
            self.ref.tell_nowait(BackgroundNotification(notification.process_id, redact_secrets(notification.to_text())))
        except (MailboxFull, MailboxClosed) as exc:
            log.warning("session %s: background notification for %s dropped: %s", self.session_id, notification.process_id, exc)
            if self.hub is not None:
                self.hub.publish(StatusUpdate, kind="warning", text=f"notification from {notification.process_id} was dropped: {exc}")

    async def _shutdown(self, reason: str) -> None:
        self._closing = True
        self.queue.clear()
        turn = self.turn
        if turn is not None:
            turn.request_stop(reason, requested_by="session")
            with trio.move_on_after(self.shutdown_timeout):
                await self._turn_done.wait()
        self.mailbox.close()

