"""Tool-call validation before anything runs (docs/DECISIONS.md#d-tool-call-validation).

For each call of an assistant response, in order:

- a name that is not offered is repaired by fuzzy match, or answered with the list of real tools;
- arguments: empty means ``{}``; invalid JSON is repaired, unless it was cut off (truncated output) or
  cannot be repaired, in which case a recovery result asks the model to send the call again;
- an identical call (same name and arguments) repeated in the response is answered, not run twice;
- only the first ``delegate_task`` of a response runs.

Calls that cannot run stay in the assistant message and get a synthetic tool result, so the history
keeps every call answered. After more than three responses in a row with unknown names, or with
unusable arguments, the validator reports that it has given up and the turn should end.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol

import attrs

from conversation.guardrails import ToolCallSignature
from messages.chat import AssistantMessage, ToolCall
from messages.untrusted import JsonLimitExceeded, JsonSyntaxError, UntrustedJsonError
from messages.untrusted import loads as loads_untrusted
from providers.recovery.json_repair import EMPTY_ARGUMENTS, repair_tool_arguments
from providers.recovery.tool_names import repair_tool_name
from tools.results import error_text

log = logging.getLogger(__name__)

MAX_INVALID_RESPONSES = 3
DELEGATE_TOOL = "delegate_task"

NameRepairer = Callable[[str, Collection[str]], str | None]


class ArgumentRepairer(Protocol):
    """Turns malformed arguments into a JSON object text, ``"{}"`` when nothing can be saved."""

    def __call__(self, raw: str, *, tool_name: str = ...) -> str: ...


@attrs.frozen
class PlannedCall:
    """A validated call ready for a tool worker."""

    id: str
    name: str
    arguments: dict[str, Any]


@attrs.frozen
class ValidationOutcome:
    """What to record and what to run for one assistant response."""

    # The assistant message as it goes into history: names and arguments repaired.
    message: AssistantMessage
    # Calls to run, in the response's order.
    runnable: tuple[PlannedCall, ...]
    # Call id to the synthetic result of each call that will not run (each a failure: ``{"error": ...}``).
    answered: Mapping[str, str]
    # One line per repair made, for logs and status events.
    repairs: tuple[str, ...] = ()
    # Set when the model has failed validation too often; the turn should end with this reason.
    gave_up: str | None = None


def unknown_tool_result(name: str, available: Collection[str]) -> str:
    """Result for a call to a tool that does not exist."""
    listing = ", ".join(sorted(available)) or "(none)"
    return error_text(f"Unknown tool '{name}'. Available tools: {listing}. Call one of them by its exact name.")


def truncated_arguments_result(name: str) -> str:
    """Result for a call whose arguments were cut off before they were complete."""
    return error_text(
        f"The arguments of your {name} call were cut off before the JSON was complete (the response was probably "
        "too long), so nothing was run. Send the call again with shorter arguments; split large content across "
        "several calls."
    )


def invalid_arguments_result(name: str, detail: str) -> str:
    """Result for a call whose arguments are not a usable JSON object."""
    return error_text(f"The arguments of your {name} call are not a valid JSON object ({detail}); nothing was run. "
                  "Send the call again with a JSON object matching the tool's parameters.")


def duplicate_call_result(first_id: str) -> str:
    """Result for a call identical to an earlier one in the same response."""
    return error_text(f"Duplicate call skipped: it is identical to call {first_id} in the same response, whose result applies.")


def extra_delegate_result() -> str:
    """Result for a second ``delegate_task`` in one response."""
    return error_text(
        "Only one delegate_task call may run per turn; this one was not run. "
        "Put all subtasks into a single delegate_task call."
    )


def looks_truncated(raw: str) -> bool:
    """Whether invalid JSON ``raw`` ends before its structure does (cut-off output, not a typo)."""
    try:
        loads_untrusted(raw, strict=False)
    except JsonSyntaxError as exc:
        return exc.msg.startswith("Unterminated string") or exc.pos >= len(raw.rstrip())
    except UntrustedJsonError:
        return False
    return False


class ToolCallValidator:
    """Validates the tool calls of each assistant response in one turn; counts repeated failures."""

    def __init__(
        self,
        available: Collection[str],
        *,
        repair_name: NameRepairer = repair_tool_name,
        repair_arguments: ArgumentRepairer = repair_tool_arguments,
    ) -> None:
        """Args:
        available: names of the tools offered to the model this session.
        repair_name: fuzzy name repair (``providers.recovery.tool_names.repair_tool_name``).
        repair_arguments: JSON repair (``providers.recovery.json_repair.repair_tool_arguments``).
        """
        self._available = frozenset(available)
        self._repair_name = repair_name
        self._repair_arguments = repair_arguments
        self._bad_name_streak = 0
        self._bad_arguments_streak = 0

    def validate(self, message: AssistantMessage, *, finish_reason: str | None = None) -> ValidationOutcome:
        """Check and repair the tool calls of one assistant ``message``.

        Args:
            message: the normalized assistant message.
            finish_reason: ``"length"`` marks unparseable arguments as cut off rather than malformed.
        """
        calls: list[ToolCall] = []
        runnable: list[PlannedCall] = []
        answered: dict[str, str] = {}
        repairs: list[str] = []
        seen: dict[ToolCallSignature, str] = {}
        delegate_seen = False
        bad_name = bad_arguments = False
        for call in message.tool_calls:
            calls.append(call)
            name = self._resolve_name(call.name)
            if name is None:
                bad_name = True
                answered[call.id] = unknown_tool_result(call.name, self._available)
                continue
            if name != call.name:
                repairs.append(f"tool name {call.name!r} repaired to {name!r}")
            arguments, problem = self._parse_arguments(call.arguments, name, finish_reason)
            if arguments is None:
                bad_arguments = True
                answered[call.id] = problem
                calls[-1] = ToolCall(call.id, name, call.arguments, call.extras)
                continue
            if problem:
                repairs.append(problem)
            calls[-1] = ToolCall(call.id, name, json.dumps(arguments, ensure_ascii=False), call.extras)
            signature = ToolCallSignature.from_call(name, arguments)
            if signature in seen:
                answered[call.id] = duplicate_call_result(seen[signature])
                continue
            seen[signature] = call.id
            if name == DELEGATE_TOOL:
                if delegate_seen:
                    answered[call.id] = extra_delegate_result()
                    continue
                delegate_seen = True
            runnable.append(PlannedCall(id=call.id, name=name, arguments=arguments))
        repaired = AssistantMessage(message.content, tuple(calls), message.reasoning, message.extras) if calls else message
        for note in repairs:
            log.info("tool call repaired: %s", note)
        if answered:
            log.warning("tool calls answered without running: %s", ", ".join(sorted(answered)))
        return ValidationOutcome(
            message=repaired,
            runnable=tuple(runnable),
            answered=answered,
            repairs=tuple(repairs),
            gave_up=self._update_streaks(bad_name, bad_arguments),
        )

    def _resolve_name(self, name: str) -> str | None:
        if name in self._available:
            return name
        return self._repair_name(name, self._available)

    def _parse_arguments(self, raw: str, name: str, finish_reason: str | None) -> tuple[dict[str, Any] | None, str]:
        """Return ``(arguments, note)``; ``arguments`` is ``None`` when the note is a recovery result."""
        if not raw.strip():
            return {}, ""
        try:
            # Lone surrogates come back repaired, so nothing downstream can fail to encode them.
            parsed = loads_untrusted(raw, strict=False)
        except JsonLimitExceeded as exc:
            return None, invalid_arguments_result(name, f"the JSON {exc}")
        except JsonSyntaxError as exc:
            if exc.pos >= 0 and (finish_reason == "length" or looks_truncated(raw)):
                return None, truncated_arguments_result(name)
            detail = exc.msg
        else:
            if isinstance(parsed, dict):
                return parsed, ""
            detail = f"got a JSON {type(parsed).__name__}"
        fixed = self._repair_arguments(raw, tool_name=name)
        if fixed == EMPTY_ARGUMENTS:
            return None, invalid_arguments_result(name, detail)
        return json.loads(fixed), f"arguments of {name} repaired ({detail})"

    def _update_streaks(self, bad_name: bool, bad_arguments: bool) -> str | None:
        self._bad_name_streak = self._bad_name_streak + 1 if bad_name else 0
        self._bad_arguments_streak = self._bad_arguments_streak + 1 if bad_arguments else 0
        if self._bad_name_streak > MAX_INVALID_RESPONSES:
            return f"the model called unknown tools in {self._bad_name_streak} responses in a row"
        if self._bad_arguments_streak > MAX_INVALID_RESPONSES:
            return f"the model sent unusable tool arguments in {self._bad_arguments_streak} responses in a row"
        return None
