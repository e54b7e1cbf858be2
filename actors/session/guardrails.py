"""Tool-loop guardrails: notice a model stuck repeating itself (seed 002 section 10).

Three patterns are counted per user turn:

- ``exact_failure``: the same tool with the same arguments keeps failing;
- ``same_tool_failure``: one tool keeps failing whatever its arguments;
- ``idempotent_no_progress``: a read-only tool keeps returning the same result for the same arguments.

Counts are of observed results. Reaching a warn threshold appends a warning to that result; reaching a
block/halt threshold stops the next such call before it runs — only when ``hard_stop_enabled``, since by
default interactive sessions get a nudge rather than a circuit breaker. A success clears the failure
counts of its signature and of its tool. Whether a call failed is the ``ok`` its reply carries
(:class:`tools.results.ToolReply`); no result text is parsed here.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from config.session import GuardrailsConfig
from tools.results import ToolReply


class GuardrailAction(enum.Enum):
    """What the session does with a call."""

    # Run it.
    ALLOW = "allow"
    # Run it and append the warning to its result.
    WARN = "warn"
    # Do not run it; answer with a synthetic error result.
    BLOCK = "block"
    # Do not run it; end the turn.
    HALT = "halt"


@attrs.frozen
class ToolCallSignature:
    """A tool name and the SHA-256 of its arguments as canonical JSON (sorted keys, no spaces)."""

    tool_name: str
    args_hash: str

    @classmethod
    def from_call(cls, tool_name: str, args: Mapping[str, Any]) -> ToolCallSignature:
        """Signature of a call; key order and whitespace in the arguments do not matter."""
        canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return cls(tool_name=tool_name, args_hash=hashlib.sha256(canonical.encode()).hexdigest())


@attrs.frozen
class ToolGuardrailDecision:
    """The guardrail's verdict on one call, before or after it ran."""

    action: GuardrailAction
    code: str = ""
    message: str = ""
    count: int = 0

    @property
    def allows_execution(self) -> bool:
        """Whether the call may run."""
        return self.action in (GuardrailAction.ALLOW, GuardrailAction.WARN)

    @property
    def ends_turn(self) -> bool:
        """Whether the turn must end now."""
        return self.action is GuardrailAction.HALT

    def render(self) -> str:
        """The bracketed line for a result: ``[Tool loop warning: CODE; count=N; MESSAGE]`` (``blocked``/``halted`` for stops)."""
        label = {GuardrailAction.BLOCK: "blocked", GuardrailAction.HALT: "halted"}.get(self.action, "warning")
        return f"[Tool loop {label}: {self.code}; count={self.count}; {self.message}]"


ALLOW = ToolGuardrailDecision(GuardrailAction.ALLOW)


def annotate_result(result: str, decision: ToolGuardrailDecision) -> str:
    """Return ``result`` with the decision's line appended when it is a warning."""
    if decision.action is not GuardrailAction.WARN:
        return result
    return f"{result}\n\n{decision.render()}"


def blocked_reply(decision: ToolGuardrailDecision) -> ToolReply:
    """The failed reply recorded for a call the guardrail stopped."""
    return ToolReply.failure(decision.render())


class ToolCallGuardrailController:
    """Counts repeated failures and no-progress results across the tool calls of one user turn."""

    def __init__(self, config: GuardrailsConfig, is_read_only: Callable[[str], bool]) -> None:
        """Args:
        config: thresholds and ``hard_stop_enabled``.
        is_read_only: whether a tool only reads (its repeated identical results mean no progress).
        """
        self._config = config
        self._is_read_only = is_read_only
        self._exact_failures: Counter[ToolCallSignature] = Counter()
        self._tool_failures: Counter[str] = Counter()
        # Invariant: holds an entry only for read-only signatures whose last call succeeded.
        self._last_result: dict[ToolCallSignature, tuple[str, int]] = {}

    def reset(self) -> None:
        """Forget every count; call at the start of each user turn."""
        self._exact_failures.clear()
        self._tool_failures.clear()
        self._last_result.clear()

    def before_call(self, tool_name: str, args: Mapping[str, Any]) -> ToolGuardrailDecision:
        """Decide whether a call may run, given what earlier calls of this turn did."""
        if not self._config.hard_stop_enabled:
            return ALLOW
        config = self._config
        signature = ToolCallSignature.from_call(tool_name, args)
        exact = self._exact_failures[signature]
        if exact >= config.exact_failure_block_after:
            return ToolGuardrailDecision(
                GuardrailAction.BLOCK,
                "repeated_exact_failure_block",
                f"{tool_name} failed {exact} times with these exact arguments; it was not run again. Change the approach.",
                exact,
            )
        failures = self._tool_failures[tool_name]
        if failures >= config.same_tool_failure_halt_after:
            return ToolGuardrailDecision(
                GuardrailAction.HALT,
                "same_tool_failure_halt",
                f"{tool_name} failed {failures} times this turn; the turn was stopped.",
                failures,
            )
        _, repeats = self._last_result.get(signature, ("", 0))
        if repeats >= config.no_progress_block_after:
            return ToolGuardrailDecision(
                GuardrailAction.BLOCK,
                "idempotent_no_progress_block",
                f"{tool_name} returned the same result {repeats} times; it was not run again. Use what you already have.",
                repeats,
            )
        return ALLOW

    def after_call(self, tool_name: str, args: Mapping[str, Any], result: str, *, failed: bool) -> ToolGuardrailDecision:
        """Record a call's outcome and return a warning decision when a threshold is reached."""
        signature = ToolCallSignature.from_call(tool_name, args)
        if failed:
            self._last_result.pop(signature, None)
            self._exact_failures[signature] += 1
            self._tool_failures[tool_name] += 1
            return self._failure_warning(tool_name, signature)
        del self._exact_failures[signature]
        del self._tool_failures[tool_name]
        if not self._is_read_only(tool_name):
            return ALLOW
        digest = hashlib.sha256(result.encode()).hexdigest()
        previous, repeats = self._last_result.get(signature, ("", 0))
        repeats = repeats + 1 if previous == digest else 1
        self._last_result[signature] = (digest, repeats)
        if repeats >= self._config.no_progress_warn_after:
            return ToolGuardrailDecision(
                GuardrailAction.WARN,
                "idempotent_no_progress_warning",
                f"{tool_name} returned the same result as before for the same arguments; calling it again will not change it.",
                repeats,
            )
        return ALLOW

    def _failure_warning(self, tool_name: str, signature: ToolCallSignature) -> ToolGuardrailDecision:
        exact = self._exact_failures[signature]
        if exact >= self._config.exact_failure_warn_after:
            return ToolGuardrailDecision(
                GuardrailAction.WARN,
                "repeated_exact_failure_warning",
                f"this exact {tool_name} call has failed {exact} times; retrying it unchanged will fail again.",
                exact,
            )
        failures = self._tool_failures[tool_name]
        if failures >= self._config.same_tool_failure_warn_after:
            return ToolGuardrailDecision(
                GuardrailAction.WARN,
                "same_tool_failure_warning",
                f"{tool_name} has failed {failures} times this turn; check its arguments or try another way.",
                failures,
            )
        return ALLOW
