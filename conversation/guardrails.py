"""Tool-loop guardrails: notice a model stuck repeating itself, as Hermes Agent counts
(docs/DECISIONS.md#d-tool-loop-guardrails).

Three patterns are counted per user turn:

- ``exact_failure``: the same tool with the same arguments keeps failing;
- ``same_tool_failure``: one tool keeps failing whatever its arguments (never for tools whose failures
  are ordinary work output: a red test run, an empty grep);
- ``idempotent_no_progress``: a read-only tool keeps returning the same result for the same arguments.

Counts are of observed results. Reaching a ``warn_after`` count appends a warning to that result (when
``warnings_enabled``); reaching a ``hard_stop_after`` count stops the next such call before it runs
and ends the turn — only when hard stops are on, since by default attended sessions get a nudge rather
than a circuit breaker. A success clears only the failure counts of its own signature and of its own
tool, as in Hermes: a successful edit does not wipe the count of a different call that keeps failing,
so a model alternating an edit with the same failing command is still stopped. Whether a call failed
is what its reply carries
(:attr:`tools.results.ToolReply.counts_as_failure`: an error, a nonzero exit, a full memory store); no
result text is parsed here.
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

#: Tools whose failures are ordinary work output: many different failing calls do not stop the turn.
FAILURE_TOLERANT_TOOLS = frozenset({"terminal", "execute_code", "process", "web_extract"})

# Built once: json.dumps with these options would build a new encoder for every call's signature.
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode

#: Session sources nobody watches (a scheduled job). Every other source (the CLI, the API, a subagent's
#: parent, each chat platform) is attended: listing the unattended ones means a new platform is attended
#: unless said otherwise, where a list of attended ones once left Discord out.
UNATTENDED_SOURCES = frozenset({"cron"})


def hard_stops_on(config: GuardrailsConfig, source: str) -> bool:
    """Whether loops end the turn in a session from ``source``: as configured when attended, by default when not."""
    return config.hard_stop_enabled or (config.non_interactive_hard_stop_enabled and source in UNATTENDED_SOURCES)


class GuardrailAction(enum.Enum):
    """What the session does with a call."""

    # Run it.
    ALLOW = "allow"
    # Run it and append the warning to its result.
    WARN = "warn"
    # Do not run it; answer with a synthetic error result and end the turn.
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
        return cls.from_canonical(tool_name, _CANONICAL_JSON(args))

    @classmethod
    def from_canonical(cls, tool_name: str, canonical: str) -> ToolCallSignature:
        """Signature of a call whose arguments' canonical JSON is ``canonical``."""
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
        """Whether the turn must end now (a block or a halt, as in Hermes)."""
        return self.action in (GuardrailAction.BLOCK, GuardrailAction.HALT)

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

    def __init__(self, config: GuardrailsConfig, is_read_only: Callable[[str], bool], *, source: str = "cli") -> None:
        """Args:
        config: thresholds and switches.
        is_read_only: whether a tool only reads (its repeated identical results mean no progress).
        source: the session's source; unattended sessions stop loops by default (:func:`hard_stops_on`).
        """
        self._config = config
        self._hard_stops = hard_stops_on(config, source)
        self._is_read_only = is_read_only
        self._exact_failures: Counter[ToolCallSignature] = Counter()
        self._tool_failures: Counter[str] = Counter()
        # Invariant: holds an entry only for read-only signatures whose last call succeeded.
        self._last_result: dict[ToolCallSignature, tuple[str, int]] = {}
        # The last call's signature and its arguments' canonical JSON: a call retried unchanged (a script's
        # loop, and each call's before and after) is hashed once.
        self._last_signature = ToolCallSignature.from_canonical("", "")
        self._last_canonical = ""

    def reset(self) -> None:
        """Forget every count; call at the start of each user turn."""
        self._exact_failures.clear()
        self._tool_failures.clear()
        self._last_result.clear()

    def before_call(self, tool_name: str, args: Mapping[str, Any]) -> ToolGuardrailDecision:
        """Decide whether a call may run, given what earlier calls of this turn did."""
        if not self._hard_stops:
            return ALLOW
        signature = self._signature(tool_name, args)
        _, repeats = self._last_result.get(signature, ("", 0))
        return _stop(
            self._config, tool_name, self._exact_failures[signature], self._tool_failures[tool_name], repeats
        )

    def after_call(self, tool_name: str, args: Mapping[str, Any], result: str, *, failed: bool) -> ToolGuardrailDecision:
        """Record a call's outcome and return a warning decision when a threshold is reached."""
        signature = self._signature(tool_name, args)
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
        if repeats >= self._config.warn_after.idempotent_no_progress and self._config.warnings_enabled:
            return ToolGuardrailDecision(
                GuardrailAction.WARN,
                "idempotent_no_progress_warning",
                f"{tool_name} returned the same result {repeats} times. Use the result you already have or change "
                "the query instead of repeating it unchanged.",
                repeats,
            )
        return ALLOW

    def _signature(self, tool_name: str, args: Mapping[str, Any]) -> ToolCallSignature:
        """``ToolCallSignature.from_call(tool_name, args)``, the last one's when the call is the same."""
        canonical = _CANONICAL_JSON(args)
        last = self._last_signature
        if canonical != self._last_canonical or last.tool_name != tool_name:
            last = self._last_signature = ToolCallSignature.from_canonical(tool_name, canonical)
            self._last_canonical = canonical
        return last

    def _failure_warning(self, tool_name: str, signature: ToolCallSignature) -> ToolGuardrailDecision:
        return _failure_warning(
            self._config, tool_name, self._exact_failures[signature], self._tool_failures[tool_name]
        )

    def repeated_failure(self, tool_name: str, args: Mapping[str, Any]) -> RepeatedFailure:
        """What this controller would decide, call by call, were ``tool_name(args)`` made again and failing each
        time with nothing else called in between (:class:`RepeatedFailure`); the calls are counted with
        :meth:`count_repeated`."""
        signature = self._signature(tool_name, args)
        return RepeatedFailure(
            self._config, self._hard_stops, tool_name, signature,
            self._exact_failures[signature], self._tool_failures[tool_name],
        )  # fmt: skip

    def count_repeated(self, run: RepeatedFailure) -> None:
        """Count one more failure of ``run``'s call: what :meth:`after_call` counts for a failed call."""
        signature = run.signature
        self._last_result.pop(signature, None)
        self._exact_failures[signature] += 1
        self._tool_failures[run.tool_name] += 1


@attrs.frozen
class RepeatedFailure:
    """The decisions on a call made again and again, each failing, with nothing called in between: from the
    counts its controller had when it was made (:meth:`ToolCallGuardrailController.repeated_failure`), by the
    same rules. Immutable, so a thread may read it.

    Attributes:
        signature: The call's signature.
        exact_failures: Its failures with these arguments counted so far.
        tool_failures: Its tool's failures counted so far.
    """

    config: GuardrailsConfig
    hard_stops: bool
    tool_name: str
    signature: ToolCallSignature
    exact_failures: int
    tool_failures: int

    def allows(self, repeat: int) -> bool:
        """Whether :meth:`ToolCallGuardrailController.before_call` lets the ``repeat``-th call made again run
        (1: the next call)."""
        if not self.hard_stops:
            return True
        # A failure took the signature's last result away: no run of identical results is left to count.
        done = repeat - 1
        return _stop(self.config, self.tool_name, self.exact_failures + done, self.tool_failures + done, 0) is ALLOW

    def after(self, repeat: int) -> ToolGuardrailDecision:
        """What :meth:`ToolCallGuardrailController.after_call` decides on the ``repeat``-th call made again, failed."""
        return _failure_warning(self.config, self.tool_name, self.exact_failures + repeat, self.tool_failures + repeat)


def _stop(config: GuardrailsConfig, tool_name: str, exact: int, failures: int, repeats: int) -> ToolGuardrailDecision:
    """The hard stop of a call whose signature failed ``exact`` times, whose tool failed ``failures`` times, and
    whose read-only result came back the same ``repeats`` times; ``ALLOW`` when none is reached."""
    limits = config.hard_stop_after
    if exact >= limits.exact_failure:
        return ToolGuardrailDecision(
            GuardrailAction.BLOCK,
            "repeated_exact_failure_block",
            f"Blocked {tool_name}: the same call failed {exact} times with identical arguments. Stop retrying it "
            "unchanged; change strategy or explain what is blocking you.",
            exact,
        )
    if failures >= limits.same_tool_failure and tool_name not in FAILURE_TOLERANT_TOOLS:
        return ToolGuardrailDecision(
            GuardrailAction.HALT,
            "same_tool_failure_halt",
            f"Stopped {tool_name}: it failed {failures} times this turn. Stop retrying the same failing path and "
            "choose a different approach.",
            failures,
        )
    if repeats >= limits.idempotent_no_progress:
        return ToolGuardrailDecision(
            GuardrailAction.BLOCK,
            "idempotent_no_progress_block",
            f"Blocked {tool_name}: this read-only call returned the same result {repeats} times. Use the result "
            "you already have or try a different query.",
            repeats,
        )
    return ALLOW


def _failure_warning(config: GuardrailsConfig, tool_name: str, exact: int, failures: int) -> ToolGuardrailDecision:
    """The warning on a failed call, its signature now failed ``exact`` times and its tool ``failures`` times."""
    if not config.warnings_enabled:
        return ALLOW
    warn_after = config.warn_after
    if exact >= warn_after.exact_failure:
        return ToolGuardrailDecision(
            GuardrailAction.WARN,
            "repeated_exact_failure_warning",
            f"{tool_name} has failed {exact} times with identical arguments. This looks like a loop: read the "
            "error and change strategy instead of retrying it unchanged.",
            exact,
        )
    if failures >= warn_after.same_tool_failure:
        return ToolGuardrailDecision(
            GuardrailAction.WARN,
            "same_tool_failure_warning",
            f"{tool_name} has failed {failures} times this turn; check its arguments or try another way.",
            failures,
        )
    return ALLOW
