"""The ``turn`` job: the agent loop for one user message.

Each iteration: deliver pending steers, commit new messages to the store,
call the model (an ``llm`` job), validate and repair its tool calls, run
them as ``tool:<id>`` jobs, record results in call order. The turn returns a
:class:`TurnOutcome` on a plain answer, the iteration budget's forced summary,
a guardrail halt, or an interrupt:

- interrupt (the session or an operator stops the turn): everything beneath
  stops; the history is closed so it stays valid for every provider (skipped
  tools, partial output, "Operation interrupted.") and returned;
- budget (time or tokens interrupt the inner work scope): the same, then one
  grace call without tools to answer from what it has.

Either interrupt reaches the turn's running jobs first (the turn
``waits_for_children``): the provider call returns what it streamed, each tool
call its partial output, as their values; the turn's scope is cancelled once
they have all returned, and the closing code keeps what they returned. A tool
call an operator kills by path returns its result ("stopped by operator") like
any other.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import trio

from actors import InterruptScope, Job, JobStopped
from conversation.budget import GRACE_NOTICE, BudgetStep, IterationBudget, append_budget_note, close_for_forced_summary
from conversation.history import INTERRUPTED_REPLY, cancelled_tool_text, close_interrupted_turn, open_tool_calls
from actors.session.event_hooks import turn_started
from actors.session.llm import LlmCall, StreamProgress
from conversation.steer import SteerBuffer
from conversation.images import image_content, sees_images
from actors.session.turn_parts import TurnConfig, TurnCounters, TurnOutcome, add_cost, add_usage
from conversation.validation import PlannedCall, ToolCallValidator, ValidationOutcome
from actors.session.workers import ToolCall, run_batch
from messages.chat import AssistantMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage, append_text, content_text
from messages.events import StatusUpdate, UsageUpdated
from providers.metadata import rough_tokens
from providers.pricing import estimate_cost
from providers.recovery.errors import NeedsCompression
from providers.types import ChatRequest, StreamFinished, Usage

__all__ = ["TurnJob"]

log = logging.getLogger("hermes_actors.session.turn")

MAX_CONTINUATIONS = 3
# Passed as the history's size to force a compression after a context-overflow error.
OVERFLOW_TOKENS = 2**62
CONTINUE_TEXT = "[Your previous reply was cut off by the output limit. Continue exactly where it stopped.]"
NUDGE_TEXT = "[Your last reply was empty. Continue the task, or answer the user with what you have.]"
BUDGET_TEXT = (
    "[Turn budget exhausted ({what}): running tools were stopped. "
    "Do not call tools; answer the user now with what you have.]"
)
# How long the grace call after a budget ran out may take.
GRACE_SECONDS = 120


class TurnJob(Job[TurnOutcome]):
    """One turn of the agent loop; returns the whole history and how the turn ended.

    Args:
        config: what the turn works with.
        counters: where it counts tokens and calls (the session's object).
        history: the session's history before the user message (the turn's own copy).
        user_message: the message that started the turn.
        steer: the session's steer buffer, delivered before each model call.
        turn_id: the turn's number in the session.
        started: set once the turn is in the tree (the session's event).
    """

    kind = "turn"
    shutdown_timeout = 10.0
    waits_for_children = True

    def __init__(
        self, config: TurnConfig, counters: TurnCounters, history: list[ChatMessage], user_message: HumanMessage,
        steer: SteerBuffer, turn_id: int, started: trio.Event,
    ) -> None:
        super().__init__()
        self.config = config
        self.counters = counters
        self.messages = history
        self.user_message = user_message
        self.steer = steer
        self.turn_id = turn_id
        self._started = started
        self.budget = IterationBudget(config.max_iterations)
        self._time_budget = config.options.time_budget(config.deps.config.agent.turn_time_budget_seconds)
        # Its one helper task is the time budget's alarm; without one it runs in its cancel scope alone.
        self.starts_tasks = self._time_budget is not None
        self._saved = len(history)
        self._turn_start = len(history)
        self._final_text = ""
        self._reason = "completed"
        self._error: str | None = None
        # Invariant: the calls of the batch being run; the results known so far (synthetic answers,
        # calls that returned, interrupted ones with their partial output), by call id.
        self._batch: list[PlannedCall] = []
        self._results: dict[str, str] = {}
        self._images: dict[str, tuple[str, ...]] = {}
        # What the provider call had streamed when an interrupt reached it, if one did.
        self._stream: StreamProgress | None = None
        # What the pre_llm_call hooks answered, added to this turn's message in its requests.
        self._hook_context: str | None = None

    def snapshot_details(self) -> dict[str, Any]:
        stats = self.budget.statistics()
        details: dict[str, Any] = {"turn_id": self.turn_id, "iterations": f"{stats.used}/{stats.total}"}
        meter = self.counters.meter
        if meter.limit is not None:
            details["tokens"] = f"{meter.used}/{meter.limit}"
        return details

    async def on_start(self) -> None:
        self._started.set()

    def running_tools(self) -> list[str]:
        """Names of the tool calls of the batch running now."""
        return [call.name for call in self._batch]

    # -- the loop ---------------------------------------------------------------------------------

    async def execute(self) -> TurnOutcome:
        # Invariant: messages[_turn_start:] are this turn's, unless a compression replaced the history.
        self._turn_start = len(self.messages)
        self.messages.append(self.user_message)
        try:
            await self._work()
        except BaseException:
            # Interrupted, cancelled from above (the session is stopping) or a bug: the history the
            # store keeps must still be valid, with whatever the cancelled work handed back.
            self._close_interrupted()
            await self._persist_shielded()
            raise
        await self._persist_shielded()
        return self._outcome()

    async def interrupted(self) -> TurnOutcome:
        """The turn was interrupted: its history, closed and kept on the way out of :meth:`execute`."""
        return self._outcome()

    def _outcome(self) -> TurnOutcome:
        return TurnOutcome(self.messages, self._final_text, self._reason, self._error)

    async def _work(self) -> None:
        """The loop inside the work scope, which the time or token budget interrupts."""
        meter = self.counters.meter
        clock = trio.CancelScope()
        with self.interrupt_scope() as work:
            if self._time_budget is not None:
                self.start_soon(_interrupt_at, clock, work, trio.current_time() + self._time_budget)
            meter.on_exceeded = work.interrupt
            try:
                await self._start_hooks()
                await self._loop()
            finally:
                # The grace call must not be interrupted by the same budget.
                clock.cancel()
                meter.on_exceeded = None
        if work.cancelled_caught:
            await self._after_budget()

    async def _start_hooks(self) -> None:
        """The turn-start hooks, inside the work scope: an interrupt or the time budget stops one that hangs."""
        config = self.config
        self._hook_context = await turn_started(
            config.deps.hooks, config.hub.session_id, config.options, config.model.chain.current.label, self.turn_id,
            self.user_message.content,
        )

    async def _loop(self) -> None:
        validator = ToolCallValidator(self.config.tools.names)
        continuations = 0
        cut_text = ""
        nudged = False
        while True:
            step = self.budget.begin_call()
            if step is BudgetStep.STOP:
                self._final_text = self._last_text()
                return
            if step is BudgetStep.GRACE:
                self._add_note(GRACE_NOTICE)
            finished = await self._call_model(with_tools=step is not BudgetStep.FORCE_SUMMARY)
            if finished is None:
                return
            message = finished.message
            if step is BudgetStep.GRACE and message.tool_calls:
                close_for_forced_summary(self.messages, message)
                continue
            if step is BudgetStep.FORCE_SUMMARY:
                message = _assistant_text(message)
            if finished.finish_reason == "length" and not message.tool_calls:
                continuations += 1
                if continuations > MAX_CONTINUATIONS:
                    self._end_with_error("the reply kept exceeding the output limit")
                    return
                self.messages.append(_assistant_text(message))
                self.messages.append(HumanMessage(CONTINUE_TEXT))
                cut_text += content_text(message.content)
                continue
            outcome = validator.validate(message, finish_reason=finished.finish_reason)
            if not outcome.message.tool_calls:
                text = content_text(outcome.message.content)
                if not text.strip() and not nudged and isinstance(self.messages[-1], ToolMessage):
                    nudged = True
                    self._add_note(NUDGE_TEXT)
                    continue
                self.messages.append(outcome.message)
                self._final_text = cut_text + text
                return
            self.messages.append(outcome.message)
            await self._run_tools(outcome)
            halted = self.config.executor.halted
            if halted is not None:
                self._final_text = halted.render()
                self._reason, self._error = "error", halted.message
                self.messages.append(AssistantMessage(self._final_text))
                return
            if outcome.gave_up:
                self._end_with_error(outcome.gave_up)
                return

    async def _run_tools(self, outcome: ValidationOutcome) -> None:
        config = self.config
        services = await config.tool_services()
        self._results = dict(outcome.answered)
        self._batch = list(outcome.runnable)
        names = sorted({call.name for call in self._batch})
        if names:
            self.activity = f"running tool{'s' if len(names) > 1 else ''} {', '.join(names)}"
        jobs = [
            ToolCall(call, config.executor, services, config.tools.emojis.get(call.name, ""), self.counters.meter)
            for call in self._batch
        ]
        limit = config.deps.config.tools.max_parallel_tools
        await run_batch(self._run_tool, jobs, config.deps.registry, services.shell.cwd, limit)
        # An interrupt during the batch cancelled the work once its calls had returned: it ends here.
        await trio.lowlevel.checkpoint_if_cancelled()
        for call in outcome.message.tool_calls:
            self.messages.append(ToolMessage(call.id, self._results[call.id], call.name))
        images = [path for call in outcome.message.tool_calls for path in self._images.get(call.id, ())]
        self._forget_batch()
        self.steer.deliver(self.messages)
        if images:
            await self._show_images(images)
        self.budget.settle_iteration([call.name for call in outcome.runnable])

    async def _run_tool(self, job: ToolCall) -> None:
        call_id = job.call.id
        # Interrupted (with the turn, or alone by an operator), the call returns what it has.
        try:
            result = await self.run_job(job, f"tool:{call_id}")
        except JobStopped:
            return  # the turn is being interrupted: the call never started, and is recorded as skipped
        self._results[call_id] = result.text
        if result.images:
            self._images[call_id] = result.images

    async def _show_images(self, paths: list[str]) -> None:
        """Show the model the images its tools asked to (a screenshot), as a user message after the results:
        every provider takes images there, not every one in a tool result."""
        config = self.config
        if not sees_images(str(config.deps.config.model.vision), config.model.chain.current.label):
            return
        content = await trio.to_thread.run_sync(image_content, "[The images the tool calls above asked to show you.]", paths)
        if not isinstance(content, str):
            self.messages.append(HumanMessage(content))

    def _forget_batch(self) -> None:
        self._batch, self._results, self._images = [], {}, {}

    async def _call_model(self, *, with_tools: bool) -> StreamFinished | None:
        config = self.config
        self.steer.deliver(self.messages)
        tokens = await self._compress_if_needed(config.history_size.tokens(self.messages))
        for attempt in range(2):
            await self._persist()
            finished: StreamFinished | None = None
            error: Exception | None = None
            try:
                finished = await self._stream_reply(tokens, with_tools=with_tools)
            except Exception as failure:  # the recovery layer's verdict, or the call stopped by path
                error = failure
            # The call returned or failed (a cancel skips this): it counts.
            self.counters.api_calls += 1
            if finished is not None:
                self._count_usage(finished.usage)
                return finished
            if attempt == 0 and isinstance(error, NeedsCompression) and config.compress is not None:
                # The provider says the context is too large (level 5): compress now, retry once.
                config.hub.publish(StatusUpdate, kind="compressing", text="the context is too large for the model; compressing")
                await config.model.learn_overflow(str(error))
                compacted_tokens = await self._compress_if_needed(OVERFLOW_TOKENS)
                if compacted_tokens != OVERFLOW_TOKENS:
                    tokens = compacted_tokens
                    continue
            self._end_with_error(str(error))
            return None
        return None

    async def _compress_if_needed(self, tokens: int) -> int:
        """Run the session's compression check; returns the history's size afterwards."""
        if self.config.compress is None:
            return tokens
        compacted = await self.config.compress(self.messages, tokens)
        if compacted is None:
            return tokens
        self.messages = compacted
        self._saved = len(compacted)
        self._turn_start = 0
        return self.config.history_size.tokens(compacted)

    async def _stream_reply(self, tokens: int, *, with_tools: bool) -> StreamFinished:
        config = self.config
        model = config.model
        deps = config.deps
        request = ChatRequest(
            messages=self._request_messages(),
            tools=config.tools.definitions if with_tools else [],
            tools_json=config.tools.encoded if with_tools else None,
            model=model.chain.current.model,
            max_tokens=model.max_output_tokens,
            cache_ttl=deps.config.prompt_caching.cache_ttl,
        )
        llm = LlmCall(
            request, chain=model.chain, connector=deps.connector, pools=deps.pools, retry=deps.config.retry,
            hub=config.hub, approx_tokens=tokens, context_length=model.context_length_of,
            # Only the HTTP API's completions keep its order: an interactive answer never waits for them
            # (docs/DECISIONS.md#d-api-first-tokens).
            pace=deps.pace if config.options.source == "api" else None,
        )
        self.activity = f"waiting for {model.chain.current.label}"
        reply = await self.run_job(llm, "llm")
        if isinstance(reply, StreamProgress):
            # An interrupt reached the call, which returned what it streamed; the work, cancelled as
            # the call returned, ends at this checkpoint, and the closing code keeps the partial reply.
            self._stream = reply
            await trio.lowlevel.checkpoint()
            raise AssertionError("an interrupted provider call returns only to cancelled work")
        return reply

    def _count_usage(self, usage: Usage) -> None:
        config = self.config
        counters = self.counters
        counters.usage = add_usage(counters.usage, usage)
        # Priced by the model that answered (a fallback may have taken over from the session's own).
        model = config.model.current
        counters.cost_usd = add_cost(counters.cost_usd, estimate_cost(model, usage, config.deps.config.pricing))
        total = add_usage(config.usage_before, counters.usage)
        config.hub.publish(
            UsageUpdated, prompt_tokens=total.prompt_tokens, completion_tokens=total.completion_tokens,
            cache_read_tokens=total.cache_read_tokens, cache_write_tokens=total.cache_write_tokens,
            reasoning_tokens=total.reasoning_tokens, api_calls=config.api_calls_before + counters.api_calls,
            cost_usd=add_cost(config.cost_before, counters.cost_usd), context_tokens=usage.prompt_tokens,
            context_window=config.model.context_length_of(model),
        )
        counters.meter.add(usage.prompt_tokens + usage.completion_tokens)

    def _request_messages(self) -> list[ChatMessage]:
        messages = self.messages
        context = self._hook_context
        if context is not None:
            # The pre_llm_call hooks' context rides on this turn's message in its requests only.
            user = self.user_message
            messages = [attrs.evolve(user, content=append_text(user.content, context)) if m is user else m for m in messages]
        extra = self.config.ephemeral_system
        system = messages[0] if messages else None
        if not extra or not isinstance(system, SystemMessage):
            return messages
        return [attrs.evolve(system, content=append_text(system.content, extra)), *messages[1:]]

    # -- endings ------------------------------------------------------------------------------------

    async def _after_budget(self) -> None:
        """The work scope ran out of time or tokens: close the history, then one grace call."""
        meter = self.counters.meter
        what = "tokens" if meter.exceeded else "time"
        self._reason = "budget"
        self.config.hub.publish(StatusUpdate, kind="budget", text=f"turn {what} budget exhausted; asking for a final answer")
        self._close_open_calls()
        last = self.messages[-1]
        if isinstance(last, AssistantMessage):
            self._final_text = content_text(last.content)
            return
        self._add_note(BUDGET_TEXT.format(what=what))
        with trio.move_on_after(GRACE_SECONDS):
            finished = await self._call_model(with_tools=False)
            if finished is not None:
                self.messages.append(_assistant_text(finished.message))
                self._final_text = content_text(finished.message.content)
                return
        self.messages.append(AssistantMessage(INTERRUPTED_REPLY))
        self._final_text = INTERRUPTED_REPLY

    def _close_open_calls(self) -> None:
        results = self._results
        for call_id, name in open_tool_calls(self.messages):
            self.messages.append(ToolMessage(call_id, results.get(call_id, cancelled_tool_text(name)), name))
        self._forget_batch()
        self._stream = None

    def _close_interrupted(self) -> None:
        stream = self._stream
        partial = AssistantMessage(stream.text) if stream is not None else None
        if partial is not None and stream is not None and stream.chunks:
            # Cut short, the call reported no usage, but the provider answered (and bills) what it streamed.
            self._count_usage(Usage(prompt_tokens=stream.prompt_tokens, completion_tokens=rough_tokens([partial])))
        # Only this turn's messages can need closing: copying just them keeps an
        # interrupt's cost independent of how long the conversation is.
        start = self._turn_start
        closed = close_interrupted_turn(self.messages[start:], results=self._results, partial=partial)
        self.messages = self.messages[:start] + closed
        self._forget_batch()
        self._stream = None
        self._reason = "interrupted"
        self._final_text = content_text(self.messages[-1].content) or INTERRUPTED_REPLY

    def _end_with_error(self, error: str) -> None:
        self._reason, self._error = "error", error
        self._final_text = f"Error: {error}"
        if not isinstance(self.messages[-1], AssistantMessage):
            self.messages.append(AssistantMessage(self._final_text))

    # -- helpers -------------------------------------------------------------------------------------

    def _add_note(self, text: str) -> None:
        """Put an instruction where alternation allows: on the last tool result or user
        message, else as a user turn of its own."""
        if isinstance(self.messages[-1], ToolMessage | HumanMessage):
            append_budget_note(self.messages, text)
        else:
            self.messages.append(HumanMessage(text))

    def _last_text(self) -> str:
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage) and isinstance(message.content, str):
                return message.content
        return ""

    async def _persist_shielded(self) -> None:
        """Commit what is left even while the session is stopping; the store may take a moment."""
        with trio.move_on_after(self.shutdown_timeout, shield=True):
            await self._persist()

    async def _persist(self) -> None:
        new = self.messages[self._saved:]
        if new:
            await self.config.persist(new)
            self._saved = len(self.messages)


def _assistant_text(message: AssistantMessage) -> AssistantMessage:
    return attrs.evolve(message, tool_calls=())


async def _interrupt_at(clock: trio.CancelScope, work: InterruptScope, deadline: float) -> None:
    """The turn's time budget: interrupt ``work`` at ``deadline``, unless ``clock`` is cancelled first."""
    with clock:
        await trio.sleep_until(deadline)
        work.interrupt("budget: time")
