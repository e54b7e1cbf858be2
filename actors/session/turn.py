"""The ``turn`` actor: the agent loop for one user message.

Each iteration: deliver pending steers, commit new messages to the store,
call the model (an ``llm`` child), validate and repair its tool calls, run
them as ``tool:<id>`` workers, record results in call order. The turn ends on
a plain answer, the iteration budget's forced summary, a guardrail halt, or a
cancellation of its scope:

- interrupt (the session cancels the turn's scope): everything beneath stops;
  the history is closed so it stays valid for every provider (skipped tools,
  partial output, "Operation interrupted.");
- budget (time or tokens, a deadline/cancel on the inner work scope): the same,
  then one grace call without tools to answer from what it has.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from actors.base import Actor
from actors.session.budget import GRACE_NOTICE, BudgetStep, IterationBudget, append_budget_note, close_for_forced_summary
from actors.session.context import SessionServices
from actors.session.history import INTERRUPTED_REPLY, cancelled_tool_text, close_interrupted_turn, open_tool_calls
from actors.session.hub import EventHub
from actors.session.llm import LlmCall
from actors.session.steer import SteerBuffer
from actors.session.validation import ToolCallValidator
from actors.session.workers import ToolExecutor, ToolWorker, run_batch
from messages.events import StatusUpdate, UsageUpdated
from messages.supervision import ActorState
from providers.recovery.credentials import CredentialPool
from providers.recovery.errors import NeedsCompression
from providers.recovery.fallback import FallbackChain
from providers.recovery.policy import ProviderConnector
from providers.metadata import rough_tokens
from providers.types import ChatRequest, StreamFinished, Usage
from tools.registry import ToolRegistry

__all__ = ["TokenMeter", "TurnEnv", "TurnResult", "TurnActor"]

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


class TokenMeter:
    """Tokens used by a turn tree (a turn, its sandboxes and its subagents'
    turns); going over the limit cancels the work scope with reason budget."""

    def __init__(self, limit: int | None, parent: TokenMeter | None = None) -> None:
        self.limit = limit
        self.parent = parent
        self.used = 0
        self.scope: trio.CancelScope | None = None

    def add(self, tokens: int) -> None:
        """Count ``tokens`` here and in every ancestor."""
        self.used += tokens
        if self.limit is not None and self.used > self.limit and self.scope is not None:
            self.scope.cancel(reason=f"budget: {self.used} tokens > {self.limit}")
        if self.parent is not None:
            self.parent.add(tokens)

    @property
    def exceeded(self) -> bool:
        """True once the limit was passed."""
        return self.limit is not None and self.used > self.limit


@attrs.define
class TurnEnv:
    """What a session gives each of its turns."""

    hub: EventHub
    services: SessionServices
    registry: ToolRegistry
    executor: ToolExecutor
    tools: list[dict[str, Any]]
    tool_names: frozenset[str]
    chain: FallbackChain
    connector: ProviderConnector
    pools: Mapping[str, CredentialPool]
    retry: Any
    max_iterations: int
    persist: Callable[[list[dict[str, Any]]], Awaitable[None]]
    usage: Usage
    emojis: Mapping[str, str] = attrs.Factory(dict)
    time_budget: float | None = None
    token_meter: TokenMeter | None = None
    context_length: int | None = None
    max_tokens: int | None = None
    cache_ttl: str = "5m"
    ephemeral_system: str | None = None
    compress: Callable[[list[dict[str, Any]], int], Awaitable[list[dict[str, Any]] | None]] | None = None
    learn_overflow: Callable[[str], Awaitable[None]] | None = None
    api_calls: int = 0


@attrs.define
class TurnResult:
    """How a turn ended: ``reason`` is completed, interrupted, budget or error."""

    final_text: str = ""
    reason: str = "completed"
    error: str | None = None


class TurnActor(Actor[Any]):
    """One turn of the agent loop; ``messages`` is the whole history when it stops."""

    kind = "turn"
    mailbox_capacity = 1
    shutdown_timeout = 10.0

    def __init__(self, env: TurnEnv, history: list[dict[str, Any]], user_message: dict[str, Any], steer: SteerBuffer, turn_id: int) -> None:
        super().__init__()
        self.env = env
        self.messages = history
        self.user_message = user_message
        self.steer = steer
        self.turn_id = turn_id
        self.result = TurnResult()
        self.budget = IterationBudget(env.max_iterations)
        self._saved = len(history)
        self._turn_start = len(history)
        self._done = False
        self._workers: list[ToolWorker] = []
        self._answered: dict[str, str] = {}
        self._llm: LlmCall | None = None
        self._work: trio.CancelScope | None = None
        self._work_nursery: trio.Nursery | None = None

    def snapshot_details(self) -> dict[str, Any]:
        stats = self.budget.statistics()
        details: dict[str, Any] = {"turn_id": self.turn_id, "iterations": f"{stats.used}/{stats.total}"}
        meter = self.env.token_meter
        if meter is not None and meter.limit is not None:
            details["tokens"] = f"{meter.used}/{meter.limit}"
        return details

    # -- the loop ---------------------------------------------------------------------------------

    async def main(self) -> None:
        self.state = ActorState.BUSY
        # Invariant: messages[_turn_start:] are this turn's, unless a compression replaced the history.
        self._turn_start = len(self.messages)
        self.messages.append(self.user_message)
        # Children run in a nursery inside the work scope, so a budget running
        # out cancels them too and their partial results are in when it exits.
        with trio.CancelScope() as work:
            self._work = work
            if self.env.time_budget is not None:
                work.deadline = trio.current_time() + self.env.time_budget
            if self.env.token_meter is not None:
                self.env.token_meter.scope = work
            async with trio.open_nursery() as nursery:
                self._work_nursery = nursery
                await self._loop()
        if work.cancelled_caught:
            await self._after_budget()
        self._done = True

    async def on_stop(self) -> None:
        # Runs once every child (llm, tool workers) is gone, so their partial
        # results are in when an interrupted history is closed.
        if not self._done:
            self._close_interrupted()
        await self._persist()

    async def _loop(self) -> None:
        validator = ToolCallValidator(self.env.tool_names)
        continuations = 0
        cut_text = ""
        nudged = False
        while True:
            step = self.budget.begin_call()
            if step is BudgetStep.STOP:
                self.result.final_text = self._last_text()
                return
            if step is BudgetStep.GRACE:
                self._add_note(GRACE_NOTICE)
            finished = await self._call_model(with_tools=step is not BudgetStep.FORCE_SUMMARY)
            if finished is None:
                return
            message = finished.message
            if step is BudgetStep.GRACE and message.get("tool_calls"):
                close_for_forced_summary(self.messages, message)
                continue
            if step is BudgetStep.FORCE_SUMMARY:
                message = _assistant_text(message)
            if finished.finish_reason == "length" and not message.get("tool_calls"):
                continuations += 1
                if continuations > MAX_CONTINUATIONS:
                    self._end_with_error("the reply kept exceeding the output limit")
                    return
                self.messages.append(_assistant_text(message))
                self.messages.append({"role": "user", "content": CONTINUE_TEXT})
                cut_text += message.get("content") or ""
                continue
            outcome = validator.validate(message, finish_reason=finished.finish_reason)
            if not outcome.message.get("tool_calls"):
                text = outcome.message.get("content") or ""
                if not text.strip() and not nudged and self.messages[-1].get("role") == "tool":
                    nudged = True
                    self._add_note(NUDGE_TEXT)
                    continue
                self.messages.append(outcome.message)
                self.result.final_text = cut_text + text
                return
            self.messages.append(outcome.message)
            self._answered = dict(outcome.answered)
            await self._run_tools(outcome)
            if self.env.executor.halted is not None:
                self.result.final_text = self.env.executor.halted.render()
                self.result.reason, self.result.error = "error", self.env.executor.halted.message
                self.messages.append({"role": "assistant", "content": self.result.final_text})
                return
            if outcome.gave_up:
                self._end_with_error(outcome.gave_up)
                return

    async def _run_tools(self, outcome: Any) -> None:
        services = self.env.services
        self._workers = [
            ToolWorker(call, self.env.executor, services, self.env.emojis.get(call.name, ""), self.env.token_meter)
            for call in outcome.runnable
        ]
        await run_batch(self.spawn_working, self._workers, self.env.registry, services.shell.cwd)
        results = dict(self._answered)
        results.update({worker.call.id: worker.result or "" for worker in self._workers})
        for call in outcome.message["tool_calls"]:
            name = call["function"]["name"]
            self.messages.append({"role": "tool", "tool_call_id": call["id"], "name": name, "content": results[call["id"]]})
        self._workers, self._answered = [], {}
        self.steer.deliver(self.messages)
        self.budget.settle_iteration([call.name for call in outcome.runnable])

    async def _call_model(self, *, with_tools: bool) -> StreamFinished | None:
        env = self.env
        self.steer.deliver(self.messages)
        tokens = await self._compress_if_needed(rough_tokens(self.messages))
        for attempt in range(2):
            await self._persist()
            llm = await self._stream(tokens, with_tools=with_tools)
            if llm.error is None:
                break
            if attempt == 0 and isinstance(llm.error, NeedsCompression) and env.compress is not None:
                # The provider says the context is too large (level 5): compress now, retry once.
                env.hub.publish(StatusUpdate, kind="compressing", text="the context is too large for the model; compressing")
                if env.learn_overflow is not None:
                    await env.learn_overflow(str(llm.error))
                compacted_tokens = await self._compress_if_needed(OVERFLOW_TOKENS)
                if compacted_tokens != OVERFLOW_TOKENS:
                    tokens = compacted_tokens
                    continue
            self._end_with_error(str(llm.error))
            return None
        finished = llm.finished
        assert finished is not None
        self._count_usage(finished.usage)
        return finished

    async def _compress_if_needed(self, tokens: int) -> int:
        """Run the session's compression check; returns the history's size afterwards."""
        if self.env.compress is None:
            return tokens
        compacted = await self.env.compress(self.messages, tokens)
        if compacted is None:
            return tokens
        self.messages = compacted
        self._saved = len(compacted)
        self._turn_start = 0
        return rough_tokens(compacted)

    async def _stream(self, tokens: int, *, with_tools: bool) -> LlmCall:
        env = self.env
        request = ChatRequest(
            messages=self._request_messages(),
            tools=env.tools if with_tools else [],
            model=env.chain.current.model,
            max_tokens=env.max_tokens,
            cache_ttl=env.cache_ttl,
        )
        llm = LlmCall(
            request, chain=env.chain, connector=env.connector, pools=env.pools, retry=env.retry, hub=env.hub,
            approx_tokens=tokens, context_length=env.context_length,
        )
        self._llm = llm
        self.activity = f"waiting for {env.chain.current.label}"
        handle = await self.spawn_working(llm, "llm")
        await handle.wait_stopped()
        self._llm = None
        env.api_calls += 1
        return llm

    def _count_usage(self, usage: Usage) -> None:
        total = self.env.usage
        self.env.usage = Usage(
            prompt_tokens=total.prompt_tokens + usage.prompt_tokens,
            completion_tokens=total.completion_tokens + usage.completion_tokens,
            cache_read_tokens=total.cache_read_tokens + usage.cache_read_tokens,
            cache_write_tokens=total.cache_write_tokens + usage.cache_write_tokens,
            reasoning_tokens=total.reasoning_tokens + usage.reasoning_tokens,
        )
        now = self.env.usage
        self.env.hub.publish(
            UsageUpdated, prompt_tokens=now.prompt_tokens, completion_tokens=now.completion_tokens,
            cache_read_tokens=now.cache_read_tokens, cache_write_tokens=now.cache_write_tokens,
            reasoning_tokens=now.reasoning_tokens, api_calls=self.env.api_calls,
        )
        if self.env.token_meter is not None:
            self.env.token_meter.add(usage.prompt_tokens + usage.completion_tokens)

    def _request_messages(self) -> list[dict[str, Any]]:
        extra = self.env.ephemeral_system
        if not extra or not self.messages or self.messages[0].get("role") != "system":
            return self.messages
        system = dict(self.messages[0])
        system["content"] = f"{system['content']}\n\n{extra}"
        return [system, *self.messages[1:]]

    async def spawn_working(self, child: Actor[Any], name: str) -> Any:
        """Start a linked child inside the work scope (the grace call after a
        budget runs outside it, in the actor's own nursery)."""
        nursery = self._work_nursery
        if nursery is None or self._work is None or self._work.cancel_called:
            return await self.spawn(child, name)
        child._bind(self, name)
        return await nursery.start(functools.partial(_run_child, child))

    # -- endings ------------------------------------------------------------------------------------

    async def _after_budget(self) -> None:
        """The work scope ran out of time or tokens: close the history, then one grace call."""
        meter = self.env.token_meter
        what = "tokens" if meter is not None and meter.exceeded else "time"
        self.result.reason = "budget"
        self.env.hub.publish(StatusUpdate, kind="budget", text=f"turn {what} budget exhausted; asking for a final answer")
        self._close_open_calls()
        last = self.messages[-1]
        if last.get("role") == "assistant":
            self.result.final_text = last.get("content") or ""
            return
        self._add_note(BUDGET_TEXT.format(what=what))
        if meter is not None:
            meter.scope = None  # the grace call must not be cancelled by the same budget
        with trio.move_on_after(120):
            finished = await self._call_model(with_tools=False)
            if finished is not None:
                self.messages.append(_assistant_text(finished.message))
                self.result.final_text = finished.message.get("content") or ""
                return
        self.messages.append({"role": "assistant", "content": INTERRUPTED_REPLY})
        self.result.final_text = INTERRUPTED_REPLY

    def _close_open_calls(self) -> None:
        results = self._partial_results()
        for call_id, name in open_tool_calls(self.messages):
            self.messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                                  "content": results.get(call_id, cancelled_tool_text(name))})
        self._workers, self._answered = [], {}

    def _close_interrupted(self) -> None:
        llm = self._llm
        partial = {"role": "assistant", "content": llm.streamed_text} if llm is not None else None
        # Only this turn's messages can need closing: copying just them keeps an
        # interrupt's cost independent of how long the conversation is.
        start = self._turn_start
        closed = close_interrupted_turn(self.messages[start:], results=self._partial_results(), partial=partial)
        self.messages = self.messages[:start] + closed
        self.result.reason = "interrupted"
        self.result.final_text = self.messages[-1].get("content") or INTERRUPTED_REPLY

    def _partial_results(self) -> dict[str, str]:
        results = dict(self._answered)
        results.update({worker.call.id: worker.result for worker in self._workers if worker.result is not None})
        return results

    def _end_with_error(self, error: str) -> None:
        self.result.reason, self.result.error = "error", error
        self.result.final_text = f"Error: {error}"
        if self.messages[-1].get("role") != "assistant":
            self.messages.append({"role": "assistant", "content": self.result.final_text})

    # -- helpers -------------------------------------------------------------------------------------

    def _add_note(self, text: str) -> None:
        """Put an instruction where alternation allows: on the last tool result or user
        message, else as a user turn of its own."""
        if self.messages[-1].get("role") in ("tool", "user"):
            append_budget_note(self.messages, text)
        else:
            self.messages.append({"role": "user", "content": text})

    def _last_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "assistant" and isinstance(message.get("content"), str):
                return message["content"]
        return ""


    async def _persist(self) -> None:
        new = self.messages[self._saved:]
        if new:
            await self.env.persist(new)
            self._saved = len(self.messages)


def _assistant_text(message: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in message.items() if key != "tool_calls"}


async def _run_child(child: Actor[Any], *, task_status: trio.TaskStatus[Any]) -> None:
    await child.run(task_status=task_status)
